"""The change set of a load (docs/loading.md, Dry run and guards): what it adds, removes and
changes, and the guards.

The set is computed in SQL while the load's transaction still holds graph_next beside the live
graph (sql/load/build_changes.sql): a hash of each stored record (made as the records are
stored, and kept with the generation: origin_doc_hashes), one join on the origin id, and only
the records that differ decoded, to name their blocks. It is stored in graph_next
(changes, change_blocks, change_counts), so it is published with the generation and dropped
with it; the counts also go to registry_meta.generations (record_generation.sql).

The guards (docs/loading.md, Dry run and guards) refuse a load that would wipe the registry by
mistake, before it commits: a document with no origin, unless allowed; and, with
REGISTRY_MAX_REMOVED_PERCENT, one that removes more than that share of the current generation's
origins, unless forced.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import psycopg

from registry.database.queries import QUERIES
from registry.database.rows import all_rows, first_row, one_row, scalar
from schemas.changes import BLOCKS, KINDS

# A dry run names this many origins of each kind.
FIRST_IDS = 10


class LoadRefused(Exception):
    """A guard refused the load (docs/loading.md, Dry run and guards); nothing was changed. str() is
    the line."""


@dataclass(frozen=True)
class ChangeSet:
    """How the graph being loaded differs from the live one (its previous generation)."""

    previous: int | None
    previous_origins: int
    counts: dict[str, int]
    blocks: dict[str, int]
    first_ids: dict[str, list[str]] = field(default_factory=dict)

    def counts_line(self) -> str:
        """`added N, removed N, changed N`."""
        return ", ".join(f"{kind} {self.counts[kind]}" for kind in KINDS)


def build_change_set(conn: psycopg.Connection, first_ids: int = 0) -> ChangeSet:
    """Compute and store graph_next's change set against the live graph; return its counts.

    Runs in the load's transaction once graph_next's read model (origin_rows, origin_docs) is
    complete, before the swap. first_ids: how many ids of each kind to return (dry run).
    """
    previous, previous_origins = None, 0
    if scalar(conn, QUERIES["meta/graph_exists"]):
        # the live graph has its one graph_info row
        live = one_row(conn, QUERIES["load/get_live_origins"])
        previous, previous_origins = int(live["generation"]), int(live["origins"])
        conn.execute(QUERIES["load/build_live_doc_hashes"])
        conn.execute(QUERIES["load/build_changes"])
    else:
        conn.execute(QUERIES["load/build_first_changes"])
    conn.execute(QUERIES["load/number_changes"])
    counts = dict.fromkeys(KINDS, 0)
    blocks = dict.fromkeys(BLOCKS, 0)
    for row in all_rows(conn, QUERIES["load/get_change_counts"]):
        if row["block"]:
            blocks[row["block"]] = int(row["n"])
        else:
            counts[row["kind"]] = int(row["n"])
    ids: dict[str, list[str]] = {kind: [] for kind in KINDS}
    if first_ids:
        for row in all_rows(conn, QUERIES["load/get_first_changes"], {"first": first_ids}):
            ids[row["kind"]].append(row["id"])
    return ChangeSet(previous, previous_origins, counts, blocks, ids)


def check_not_empty(
    conn: psycopg.Connection, counts: dict[str, int], lines: int, allow_empty: bool
) -> None:
    """Refuse a document with no origin record unless allow_empty (docs/loading.md, Dry run and
    guards); the line gives the document's counts and the origins the live generation would lose."""
    if counts.get("origin", 0) or allow_empty:
        return
    held = ", ".join(f"{n} {kind}" for kind, n in counts.items() if n) or "no records"
    live = ""
    if scalar(conn, QUERIES["meta/graph_exists"]):
        row = first_row(conn, QUERIES["load/get_live_origins"])
        if row is not None:
            live = f" of the {row['origins']} origins of generation {row['generation']}"
    raise LoadRefused(
        f"refused: the document has no origin record (0 origins; {lines} lines: {held}); "
        f"loading it would empty the registry{live}. Nothing changed; --allow-empty loads it "
        "anyway"
    )


def check_removals(changes: ChangeSet, max_removed_percent: float | None, force: bool) -> None:
    """Refuse removing more than max_removed_percent of the live origins unless force."""
    if max_removed_percent is None or force or changes.previous is None:
        return
    removed = changes.counts["removed"]
    if removed * 100 > max_removed_percent * changes.previous_origins:
        share = 100 * removed / changes.previous_origins if changes.previous_origins else 0.0
        raise LoadRefused(
            f"refused: the load would remove {removed} of the {changes.previous_origins} "
            f"origins of generation {changes.previous} ({share:.1f} %, over "
            f"REGISTRY_MAX_REMOVED_PERCENT={max_removed_percent:g}); {changes.counts_line()}. "
            "Nothing changed; --force loads it anyway"
        )


def dry_run_lines(changes: ChangeSet) -> list[str]:
    """What a dry run prints: the counts per kind and per block, then the first ids."""
    against = (
        "no previous generation" if changes.previous is None else (f"generation {changes.previous}")
    )
    lines = [f"dry run: nothing was changed; against {against}, a load would commit:"]
    lines += [f"{kind} {changes.counts[kind]}" for kind in KINDS]
    lines += [f"changed {block} {changes.blocks[block]}" for block in BLOCKS]
    for kind in KINDS:
        if changes.first_ids.get(kind):
            lines.append(f"first {kind}: " + " ".join(changes.first_ids[kind]))
    return lines
