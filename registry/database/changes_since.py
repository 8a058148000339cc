"""Net changes since any kept generation (docs/api.md, "Changes between generations"):
pages, exports and the since's checks.

The load that produces generation n builds its net changes from every kept since
(registry_meta.build_net_changes, sql/definitions/build_net_changes.sql): net_changes holds,
per origin, each version of its record that differs from its record at n with the sinces it
answers for, and net_counts their counts per since. A page is a range of one net_changes
index filtered on the since, an export the same walk through a server-side cursor; nothing
is counted or compared at request time. Every statement also says whether the since was
produced, n's oldest since and the newest generation, so that the answer and its checks come
from one snapshot.

Two statements of one shape serve each of pages and exports: every net change
(sql/changes/list_net_changes.sql, export_net_changes.sql), and those of one kind or, with a
block, of kind changed in that block (list_net_changes_of_kind.sql,
export_net_changes_of_kind.sql). Each is a UNION of branches, one per kind of since, the
others cut off by one-time filters, so that one plan (generic or custom) serves every since:

1. n's oldest since (registry_meta.oldest_since_row, inlined into the statement: a call of
   the scalar registry_meta.oldest_since would be planned again at each use): a page of
   every net change is the places offset+1 .. offset+limit, a range of net_changes_pos_idx
   (migration 006), so that the last page costs what the first does; an export reads
   net_changes_lo_idx or net_changes_kind_lo_idx;
2. n - 1: the rows with until = n, a range of net_changes_until_idx (migration 005), paged
   by OFFSET within that range;
3. any other since (and the oldest, of one kind or block, which the places do not number):
   no range of its own, so a page starts from the bucket of origin ids it begins in
   (migration 011): net_buckets counts, per since and per id's first byte, the net changes
   of each kind and block; the running sum of those counts finds the bucket holding the
   page's first row and how many rows come before it, and the page walks net_changes_pkey
   (or net_changes_kind_idx) from that bucket's first id, filtered on the since. The last
   page then reads about what the first does: the rows of a bucket, not every row before
   it (at 1,000,000 origins the last of 453 pages of a since 10 loads back took four times
   the first page's p99 before). An export walks the same index from the start.

Each row then finds its records by change_log_generation_id_idx, (generation, id) (migration
009): the version's at until, and the record at n at last, read once when until = last. The
oldest since and the two lookups are subqueries kept apart (OFFSET 0): the oldest since is
computed once, and each lookup is an index lookup on both columns (joined, the planner looks
the record at n up by id alone, or merge-joins a whole walk of change_log). graph_info is
read with LIMIT 1, which tells the planner it has one row: it otherwise guesses hundreds,
multiplies the page's cost by them and compiles the statement with JIT.

A page's statement stays under 4096 bytes: psycopg caches its conversion of a statement's
text (placeholders to $n) only up to that length, and converts a longer one again, in
Python, on every execution (about 0.1 ms for 5 KB, a tenth of a page's time).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

from registry.database.changes import change_statement, filter_path
from registry.database.exports import ExportRead, OpenedExport, open_export
from registry.database.generations import LIVE_SCHEMA, Stamp, row_stamp
from registry.database.rows import one_row

# Every net change, or those of one kind (and, given a block, of kind changed in that block):
# two statements of one shape, the filter named where it differs.
_LIST = {
    "all": "changes/list_net_changes",
    "kind": "changes/list_net_changes_of_kind",
    "block": "changes/list_net_changes_of_kind",
}
_EXPORT = {
    "all": "changes/export_net_changes",
    "kind": "changes/export_net_changes_of_kind",
    "block": "changes/export_net_changes_of_kind",
}


class SinceNotProduced(Exception):
    """since=m, well-formed, that this registry never produced (404, docs/api.md, Changes since any
    generation)."""

    def __init__(self, since: int, current: int | None):
        super().__init__(f"generation {since} was never produced")
        self.since = since
        self.current = current


class SinceNewer(Exception):
    """since=m, a generation produced after the one answered (400, docs/api.md, Changes since any
    generation)."""

    def __init__(self, since: int, generation: int):
        super().__init__(f"generation {since} is newer than the generation answered ({generation})")
        self.since = since
        self.generation = generation


class ChangesDropped(Exception):
    """since=m older than the oldest since of the generation answered (410, docs/api.md, Changes
    since any generation)."""

    def __init__(self, since: int, oldest_since: int, current: int | None):
        super().__init__(f"the changes since generation {since} are no longer kept")
        self.since = since
        self.oldest_since = oldest_since
        self.current = current


@dataclass(frozen=True, slots=True)
class SincePage:
    """One page of the net changes since a generation, with what the checks need."""

    since: int
    total: int
    returned: int
    records: str
    previous: int | None
    counts: dict[str, int]
    produced: bool
    oldest_since: int
    current: int | None

    def check(self, generation: int) -> None:
        """Raise SinceNotProduced, SinceNewer or ChangesDropped unless the since answers for
        generation (docs/api.md, Changes since any generation: 404 whatever its size, then 400, then
        410)."""
        if not self.produced:
            raise SinceNotProduced(self.since, self.current)
        if self.since > generation:
            raise SinceNewer(self.since, generation)
        if self.since < self.oldest_since:
            raise ChangesDropped(self.since, self.oldest_since, self.current)


def list_changes_since(
    conn: psycopg.Connection,
    filters: dict[str, Any],
    since: int,
    limit: int,
    offset: int,
    schema: str = LIVE_SCHEMA,
) -> tuple[Stamp, SincePage]:
    """(stamp, page) of the net changes from since to the generation in schema that match
    the filters. The page is not checked: call its check() with the stamp's generation."""
    path, params = filter_path(filters)
    row = one_row(
        conn,
        change_statement(_LIST[path], schema),
        {**params, "since": since, "limit": limit, "offset": offset},
    )
    previous, current = row["previous"], row["current"]
    page = SincePage(
        since,
        int(row["total"]),
        int(row["returned"]),
        row["records"],
        None if previous is None else int(previous),
        {kind: int(row[kind] or 0) for kind in ("added", "removed", "changed")},
        bool(row["produced"]),
        int(row["oldest_since"]),
        None if current is None else int(current),
    )
    return row_stamp(row), page


def open_change_export_since(
    conn: psycopg.Connection,
    filters: dict[str, Any],
    since: int,
    generation: int | None,
    first: int,
    csv_rows: bool,
) -> OpenedExport:
    """Begin the export of every net change since the filters match: JSON objects, or CSV
    rows. Raises as SincePage.check does, from the export's own snapshot."""

    def plan(conn: psycopg.Connection, schema: str) -> ExportRead:
        """The filtered total and the export statement, in the export's snapshot, read by
        keyset batches (KeysetRows: no pin on net_changes between them)."""
        stamp, page = list_changes_since(conn, filters, since, 0, 0, schema)
        if generation is None or stamp.generation == generation:
            # (a pinned export that found another generation here is tried again elsewhere)
            page.check(stamp.generation)
        path, params = filter_path(filters)
        column = "csv_line" if csv_rows else "line"
        statement = change_statement(_EXPORT[path], schema, column)
        # The generation and its oldest since go in as parameters: a batch names no graph
        # schema, which a load may rename between two batches.
        given = {**params, "since": since, "generation": stamp.generation}
        given["oldest"] = page.oldest_since
        return ExportRead(page.total, statement, given, csv_rows, keyset=True)

    return open_export(conn, generation, first, plan)
