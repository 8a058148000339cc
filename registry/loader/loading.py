"""`registry load`: a graph document into PostgreSQL, all of it or none of it.

The document is streamed: each line is parsed and checked (registry.loader.document), its
row spooled to a temporary file per table, and each file sent with COPY into a fresh schema,
graph_next. A large document is parsed by one worker process per core, each over its own
piece of the file (registry.loader.parsing). PostgreSQL then checks what needs the whole
document (unique ids, references, the catalog), the read model is built (its records
rendered by worker processes while the connection builds the rest, registry.loader.rendering),
and graph_next replaces the live graph in the same transaction. Readers keep answering from
the old graph until the commit.
"""

from __future__ import annotations

import hashlib
import inspect
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any

import psycopg

from registry.database.migrations import SCHEMA_VERSION, apply_migrations, pending_migrations
from registry.database.queries import QUERIES
from registry.loader import statements, visibility
from registry.loader.beside import Beside
from registry.loader.changes import (
    FIRST_IDS,
    ChangeSet,
    LoadRefused,
    build_change_set,
    check_not_empty,
    check_removals,
)
from registry.loader.parsing import ParsedDocument, parse_document
from registry.loader.progress import LoadProgress
from registry.loader.records import TABLES, Problem
from registry.loader.rendering import OriginRender
from registry.loader.statements import KeptGeneration
from registry.loader.visibility import Visibility
from registry.settings import DEFAULTS
from schemas import origin as origin_schemas

MAX_PROBLEMS = 20
# From this many origins on, the carriages and the rendered records are sent on a second
# connection beside the load's own (registry.loader.beside); below it one connection is quicker.
BESIDE_FROM = 50_000
# The settings' defaults (registry.settings, the one place they are written), for callers
# that pass none: generations kept, and change sets kept, never fewer than the generations.
DEFAULT_KEEP_GENERATIONS = int(DEFAULTS["REGISTRY_KEEP_GENERATIONS"])
DEFAULT_KEEP_CHANGES = int(DEFAULTS["REGISTRY_KEEP_CHANGES"])
# A fingerprint of everything that shapes the stored graph: its tables, the load steps and
# the schema every record is dumped with.
GRAPH_FORMAT = hashlib.sha256(
    "".join(text for _, text in QUERIES.folder("graph") + QUERIES.folder("load")).encode()
    + inspect.getsource(origin_schemas).encode()
).hexdigest()[:16]

# Each whole-document rule: the constraint that enforces it in the database, and the query
# that says which lines break it when the constraint cannot be added.
WHOLE_DOCUMENT_CHECKS: tuple[tuple[str | None, str], ...] = (
    ("load/add_network_key", "load/report_duplicate_networks"),
    ("load/add_origin_key", "load/report_duplicate_origins"),
    ("load/add_carriage_key", "load/report_duplicate_carriages"),
    ("load/add_allocation_key", "load/report_duplicate_allocations"),
    ("load/add_address_key", "load/report_duplicate_addresses"),
    ("load/add_origin_network_reference", "load/report_unknown_networks"),
    ("load/add_edge_origin_reference", "load/report_unknown_origins"),
    ("load/add_allocation_origin_reference", "load/report_unknown_origins"),
    ("load/add_carriage_origin_reference", "load/report_unknown_origins"),
    (None, "load/report_unclassified_carriages"),
)
# The reports that read the carriages: their rules are checked once the carriages are in.
CARRIAGE_REPORTS = frozenset(
    {
        "load/report_duplicate_carriages",
        "load/report_unknown_origins",
        "load/report_unclassified_carriages",
    }
)

# "origin_sources" streams every origin's fields and presentations out to files; "render" starts
# rendering them (worker processes, for a large graph) while the steps after it run;
# "origin_docs" waits for the render, copies the rendered records in and indexes them.
READ_MODEL_STEPS = (
    "load/build_origin_rows",
    "origin_sources",
    "render",
    "load/build_origin_csv",
    "load/build_registry_summary",
    "load/build_filter_counts",
    "load/add_read_indexes",
    "search_indexes",
    "origin_docs",
)
# The read model's last steps, shown as a phase of their own by the progress display.
INDEX_STEPS = ("load/add_read_indexes", "search_indexes", "origin_docs")


class LoadRejected(Exception):
    """The document breaks the rules of the graph document; nothing was changed."""

    def __init__(self, problems: list[Problem], total: int):
        super().__init__(f"{total} problem(s) in the graph document")
        self.problems = sorted(problems)[:MAX_PROBLEMS]
        self.total = total

    def report(self) -> str:
        """The problems as `line N: field: problem` lines, then how many more there are."""
        lines = [str(problem) for problem in self.problems]
        if self.total > len(self.problems):
            lines.append(f"... and {self.total - len(self.problems)} more problem(s)")
        return "\n".join(lines)


@dataclass
class LoadResult:
    """What a committed load put in, the generation it produced and the ones kept."""

    counts: dict[str, int]
    lines: int
    elapsed_s: float
    timings: dict[str, float] = field(default_factory=dict)
    generation: int | None = None
    committed_at: datetime | None = None
    kept: list[KeptGeneration] = field(default_factory=list)
    # What the load changed against the previous generation (what it would have: dry run).
    changes: ChangeSet | None = None
    dry_run: bool = False
    # The read model after the load's vacuum (registry.loader.visibility); the horizon its
    # rows precede, for `registry db vacuum` to finish what the load's wait could not.
    read_model: Visibility | None = None
    horizon: str | None = None
    # Registered reader roles that no longer existed: forgotten by the load.
    forgotten_readers: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class LoadOptions:
    """How a load may go: a dry run, and the guards against wiping the registry (docs/loading.md,
    Dry run and guards)."""

    dry_run: bool = False
    allow_empty: bool = False
    force: bool = False
    max_removed_percent: float | None = None
    # After the commit, how long to wait for older snapshots to end so that the read model
    # can be made all-visible (REGISTRY_LOAD_VACUUM_WAIT_S for `registry load`; 0: vacuum once).
    vacuum_wait_s: float = 0.0


def load_document(
    conn: psycopg.Connection,
    stream: IO[bytes],
    progress: LoadProgress | None = None,
    keep_generations: int = DEFAULT_KEEP_GENERATIONS,
    options: LoadOptions | None = None,
    keep_changes: int = DEFAULT_KEEP_CHANGES,
) -> LoadResult:
    """Replace the graph with the document read from stream; raise LoadRejected if it is bad,
    LoadRefused if a guard refuses it (registry.loader.changes).

    The committed graph is a new generation; the newest keep_generations are kept, older ones
    are dropped once it has committed, and so are change sets past the newest keep_changes
    (raised to keep_generations when below it: docs/api.md, Changes since any generation). A dry run
    does everything up to the commit, change set included, then rolls it all back: no generation
    number is taken, nothing is dropped.
    """
    options = options or LoadOptions()
    if keep_generations < 1:
        raise ValueError("keep at least one generation (the one being loaded)")
    started = time.monotonic()
    timings: dict[str, float] = {}
    progress = progress or LoadProgress()
    if options.dry_run:
        _refuse_dry_run_before_upgrade(conn)
    else:
        apply_migrations(conn)
    progress.phase("parse", unit="records")
    parsed = parse_document(stream, progress, MAX_PROBLEMS)
    try:
        timings["parse"] = time.monotonic() - started
        if parsed.problem_count:
            raise LoadRejected(parsed.problems, parsed.problem_count)
        changes: ChangeSet | None = None
        forgotten: list[str] = []
        generation: int | None = None
        committed_at: datetime | None = None
        with _beside(conn, parsed.counts["origin"]) as beside, conn.transaction():
            statements.open_graph_next(conn)
            _copy_spools(conn, parsed, progress, beside)
            timings["copy"] = time.monotonic() - started
            _check_whole_document(conn, progress, beside)
            check_not_empty(conn, parsed.counts, parsed.lines, options.allow_empty)
            timings["check"] = time.monotonic() - started
            digest = _build_read_model(conn, parsed.counts["origin"], progress, beside)
            timings["read_model"] = time.monotonic() - started
            progress.phase("change set", total=1)
            progress.advance(0, step="against the live graph")
            changes = build_change_set(conn, FIRST_IDS if options.dry_run else 0)
            check_removals(changes, options.max_removed_percent, options.force)
            progress.advance(1)
            timings["changes"] = time.monotonic() - started
            if options.dry_run:
                raise psycopg.Rollback()
            progress.phase("publish", total=3)
            progress.advance(0, step="grants and statistics")
            statements.record_graph_info(conn, GRAPH_FORMAT, parsed.counts, digest)
            forgotten = statements.grant_readers(conn)
            statements.analyze_graph_next(conn)
            progress.advance(1, step="swap and commit")
            generation, committed_at = statements.record_generation(
                conn, parsed.counts["origin"], changes.previous, changes.counts
            )
            statements.record_load(conn, time.monotonic() - started, parsed.counts)
        if not options.dry_run:
            timings["publish"] = time.monotonic() - started
    finally:
        parsed.close()
    kept: list[KeptGeneration] = []
    settled: Visibility | None = None
    after: str | None = None
    if not options.dry_run:
        assert generation is not None  # committed
        after = visibility.horizon(conn)
        progress.advance(1, step="drop retired generations")
        statements.drop_retired_generations(conn, keep_generations)
        statements.drop_retired_change_sets(conn, max(keep_changes, keep_generations))
        progress.advance(0, step="vacuum the read model")
        settled = visibility.settle(conn, generation, after, options.vacuum_wait_s)
        statements.record_generation_size(conn)
        progress.advance(1)
        kept = statements.kept_generations(conn)
    timings["total"] = time.monotonic() - started
    return LoadResult(
        parsed.counts,
        parsed.lines,
        timings["total"],
        timings,
        generation=generation,
        committed_at=committed_at,
        kept=kept,
        changes=changes,
        dry_run=options.dry_run,
        read_model=settled,
        horizon=after,
        forgotten_readers=forgotten,
    )


def _refuse_dry_run_before_upgrade(conn: psycopg.Connection) -> None:
    """A dry run changes nothing (docs/loading.md, Dry run and guards), migrations included: on a
    database that needs an upgrade it is refused with LoadRefused, before the document is read."""
    pending = pending_migrations(conn)
    if pending:
        raise LoadRefused(
            "refused: a dry run changes nothing, and this database needs an upgrade first"
            f" (schema version {SCHEMA_VERSION}; migrations not yet applied:"
            f" {', '.join(pending)}). Nothing changed; run `registry db upgrade`, then the"
            " dry run"
        )


@contextmanager
def _beside(conn: psycopg.Connection, origins: int) -> Iterator[Beside | None]:
    """A second connection for a large graph; None for a small one, or when the server
    refuses a second connection (the load then runs on one, as small ones do)."""
    beside = None
    if origins >= BESIDE_FROM:
        try:
            beside = Beside(conn)
        except psycopg.OperationalError:
            beside = None
    if beside is None:
        yield None
        return
    with beside:
        yield beside


def _copy_spools(
    conn: psycopg.Connection,
    parsed: ParsedDocument,
    progress: LoadProgress,
    beside: Beside | None,
) -> None:
    """Send each table's spooled rows with COPY, piece after piece (so in document order).

    With a second connection, the carriages are sent on it, beside this one sending the
    rest; _check_whole_document takes them into graph_next once it needs them.
    """
    kinds = (
        tuple(TABLES) if beside is None else tuple(kind for kind in TABLES if kind != "carriage")
    )
    total = sum(spools[kind].tell() for spools in parsed.pieces for kind in kinds)
    progress.phase("copy", total=total, unit="bytes")
    if beside is not None:

        def copy_carriages(side: psycopg.Connection) -> None:
            side.execute(QUERIES["graph/create_tables"])
            statements.copy_kinds(side, parsed, ("carriage",), None)

        beside.fill(TABLES["carriage"][0], copy_carriages)
    statements.copy_kinds(conn, parsed, kinds, progress)


def _build_read_model(
    conn: psycopg.Connection, origins: int, progress: LoadProgress, beside: Beside | None
) -> str:
    """The read model's steps, the records rendered by worker processes beside the others;
    the digest of the records (registry.digest), summed as they were rendered.

    With a second connection, the rendered records are sent on it as the workers finish,
    while this one builds the rest; origin_docs then takes its place in graph_next.
    """
    progress.phase("read model", total=len(READ_MODEL_STEPS) - len(INDEX_STEPS))
    with OriginRender(origins) as render:
        for step in READ_MODEL_STEPS:
            if step == INDEX_STEPS[0]:
                progress.phase("indexes", total=len(INDEX_STEPS))
            progress.advance(0, step=step.removeprefix("load/"))
            if step == "origin_sources":
                statements.copy_sources(conn, render)
            elif step == "render":
                render.start()
                if beside is not None:
                    beside.fill("origin_docs", lambda side: statements.store_rendered(side, render))
            elif step == "origin_docs":
                if beside is None:
                    statements.store_rendered(conn, render)
                else:
                    beside.take("origin_docs")
                    beside.take("origin_doc_hashes")
            elif step == "search_indexes":
                statements.add_search_indexes(conn)
            elif step == "load/build_filter_counts":
                statements.create_facet_key_combos(conn)
                conn.execute(QUERIES[step])
            else:
                conn.execute(QUERIES[step])
            progress.advance(1)
        return render.digest


def _check_whole_document(
    conn: psycopg.Connection, progress: LoadProgress, beside: Beside | None
) -> None:
    """Add each constraint; once one cannot be added, report every rule's offending lines.

    The rules that do not read the carriages run first: with a second connection, while it
    is still sending them. The reports wait until every table is in, since one of them
    (unknown origins) reads the carriages too; they are read-only, so which rules are
    reported does not depend on when.
    """
    progress.phase("check", total=len(WHOLE_DOCUMENT_CHECKS), unit="checks")
    reports: list[str] = []
    without, with_carriages = (
        [check for check in WHOLE_DOCUMENT_CHECKS if (check[1] in CARRIAGE_REPORTS) == reads]
        for reads in (False, True)
    )
    failed = statements.add_constraints(conn, progress, without, reports, failed=False)
    if beside is not None:
        progress.advance(0, step="carriages (second connection)")
        beside.take(TABLES["carriage"][0])
    statements.add_constraints(conn, progress, with_carriages, reports, failed)
    problems: list[Problem] = []
    total = 0
    for report in dict.fromkeys(reports):
        found, count = statements.run_report(conn, report, MAX_PROBLEMS)
        problems.extend(found)
        total += count
    if total:
        raise LoadRejected(problems, total)


def load_counts_line(result: LoadResult) -> str:
    """One summary line: counts per record type, the time taken and where it went."""
    parts = ", ".join(f"{count} {kind}" for kind, count in result.counts.items())
    phases, previous = [], 0.0
    for phase in ("parse", "copy", "check", "read_model", "changes", "publish"):
        if phase in result.timings:
            phases.append(f"{phase} {result.timings[phase] - previous:.1f}")
            previous = result.timings[phase]
    detail = f" ({', '.join(phases)} s)" if phases else ""
    verb = "checked" if result.dry_run else "loaded"
    return f"{verb} {result.lines} lines ({parts}) in {result.elapsed_s:.1f} s{detail}"


def generation_lines(result: LoadResult) -> list[str]:
    """The generation a load produced, then each kept generation and its disk use."""
    if result.generation is None or result.committed_at is None:
        return []
    lines = [f"generation {result.generation} committed at {_rfc3339(result.committed_at)}"]
    if result.changes is not None:
        previous = result.changes.previous
        against = "the first generation" if previous is None else f"against generation {previous}"
        lines.append(f"changes ({against}):")
        lines += [f"{kind} {n}" for kind, n in result.changes.counts.items()]
    for kept in result.kept:
        size = "unknown" if kept.size_bytes is None else f"{kept.size_bytes / 1e6:.1f} MB"
        lines.append(
            f"kept generation {kept.generation}: {kept.origins} origins, {size}"
            f" (committed {_rfc3339(kept.committed_at)})"
        )
    return lines


def _rfc3339(moment: datetime) -> str:
    """A moment in UTC, RFC 3339, whole seconds."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def describe(result: LoadResult) -> dict[str, Any]:
    """The result as a plain dict, for --json output and logs."""
    return {
        "lines": result.lines,
        "counts": result.counts,
        "elapsed_s": round(result.elapsed_s, 3),
        "generation": result.generation,
        "dry_run": result.dry_run,
        "changes": None
        if result.changes is None
        else {
            "previous": result.changes.previous,
            **result.changes.counts,
            "blocks": result.changes.blocks,
        },
        "kept_generations": [
            {"generation": kept.generation, "origins": kept.origins, "size_bytes": kept.size_bytes}
            for kept in result.kept
        ],
    }
