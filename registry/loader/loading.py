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
import io
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any

import orjson
import psycopg
from psycopg import errors, sql

from registry.database.generations import schema_name
from registry.database.migrations import SCHEMA_VERSION, apply_migrations
from registry.database.queries import QUERIES
from registry.loader.beside import Beside
from registry.loader.document import TABLES, Problem
from registry.loader.parsing import ParsedDocument, parse_document
from registry.loader.progress import LoadProgress
from registry.loader.rendering import OriginRender
from schemas import origin as origin_schemas

MAX_PROBLEMS = 20
# From this many origins on, the carriages and the rendered records are sent on a second
# connection beside the load's own (registry.loader.beside); below it one connection is quicker.
BESIDE_FROM = 50_000
DEFAULT_KEEP_GENERATIONS = 2
# Tries at dropping a retired generation while pinned readers are inside it, and the pause
# between them: about 5 s in all, then the next load tries again.
DROP_ATTEMPTS = 11
DROP_PAUSE_S = 0.5
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
    """The document breaks the contract; nothing was changed."""

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


@dataclass(frozen=True)
class KeptGeneration:
    """One generation still in the database after a load, and its disk use."""

    generation: int
    committed_at: datetime
    origins: int
    size_bytes: int | None


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


def load_document(
    conn: psycopg.Connection,
    stream: IO[bytes],
    progress: LoadProgress | None = None,
    keep_generations: int = DEFAULT_KEEP_GENERATIONS,
) -> LoadResult:
    """Replace the graph with the document read from stream; raise LoadRejected if it is bad.

    The committed graph is a new generation; the newest keep_generations are kept, older ones
    are dropped once it has committed.
    """
    if keep_generations < 1:
        raise ValueError("keep at least one generation (the one being loaded)")
    started = time.monotonic()
    timings: dict[str, float] = {}
    progress = progress or LoadProgress()
    apply_migrations(conn)
    progress.phase("parse", unit="records")
    parsed = parse_document(stream, progress, MAX_PROBLEMS)
    try:
        timings["parse"] = time.monotonic() - started
        if parsed.problem_count:
            raise LoadRejected(parsed.problems, parsed.problem_count)
        with _beside(conn, parsed.counts["origin"]) as beside, conn.transaction():
            conn.execute(QUERIES["meta/lock_loads"])
            conn.execute(QUERIES["load/prepare_graph_next"])
            conn.execute(QUERIES["load/use_graph_next"])
            conn.execute(QUERIES["graph/create_tables"])
            _copy_spools(conn, parsed, progress, beside)
            timings["copy"] = time.monotonic() - started
            _check_whole_document(conn, progress, beside)
            timings["check"] = time.monotonic() - started
            _build_read_model(conn, parsed.counts["origin"], progress, beside)
            timings["read_model"] = time.monotonic() - started
            progress.phase("publish", total=3)
            progress.advance(0, step="grants and statistics")
            conn.execute(
                QUERIES["load/record_graph_info"],
                {
                    "schema_version": SCHEMA_VERSION,
                    "format": GRAPH_FORMAT,
                    "counts": orjson.dumps(parsed.counts).decode(),
                },
            )
            _grant_readers(conn)
            conn.execute(QUERIES["load/analyze_graph_next"])
            progress.advance(1, step="swap and commit")
            generation, committed_at = _record_generation(conn, parsed.counts["origin"])
            elapsed = time.monotonic() - started
            conn.execute(
                QUERIES["meta/record_load"],
                {
                    "schema_version": SCHEMA_VERSION,
                    "elapsed_ms": int(elapsed * 1000),
                    "counts": orjson.dumps(parsed.counts).decode(),
                },
            )
    finally:
        parsed.close()
    progress.advance(1, step="drop retired generations")
    _drop_retired_generations(conn, keep_generations)
    _vacuum_graph(conn)
    conn.execute(QUERIES["load/record_generation_size"])
    progress.advance(1)
    timings["total"] = time.monotonic() - started
    return LoadResult(
        parsed.counts,
        parsed.lines,
        time.monotonic() - started,
        timings,
        generation=generation,
        committed_at=committed_at,
        kept=kept_generations(conn),
    )


def ensure_graph(conn: psycopg.Connection) -> bool:
    """Apply migrations and, in a database that never had a load, publish an empty graph."""
    apply_migrations(conn)
    present = conn.execute(QUERIES["meta/graph_exists"]).fetchone()
    if present and present[0]:
        return False
    load_document(conn, io.BytesIO(b""))
    return True


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
            _copy_kinds(side, parsed, ("carriage",), None)

        beside.fill(TABLES["carriage"][0], copy_carriages)
    _copy_kinds(conn, parsed, kinds, progress)


def _copy_kinds(
    conn: psycopg.Connection,
    parsed: ParsedDocument,
    kinds: tuple[str, ...],
    progress: LoadProgress | None,
) -> None:
    """COPY the spooled rows of each of kinds into its table, piece after piece."""
    with conn.cursor() as cur:
        for kind in kinds:
            table, columns = TABLES[kind]
            spools = [spools[kind] for spools in parsed.pieces if spools[kind].tell()]
            if not spools:
                continue
            statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
                sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, columns))
            )
            with cur.copy(statement) as copy:
                for spool in spools:
                    spool.seek(0)
                    while chunk := spool.read(1 << 20):
                        copy.write(chunk)
                        if progress is not None:
                            progress.advance(len(chunk), step=table)


def _build_read_model(
    conn: psycopg.Connection, origins: int, progress: LoadProgress, beside: Beside | None
) -> None:
    """The read model's steps, the records rendered by worker processes beside the others.

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
                _copy_sources(conn, render)
            elif step == "render":
                render.start()
                if beside is not None:
                    beside.fill("origin_docs", lambda side: _store_rendered(side, render))
            elif step == "origin_docs":
                if beside is None:
                    _store_rendered(conn, render)
                else:
                    beside.take("origin_docs")
            elif step == "search_indexes":
                _add_search_indexes(conn)
            else:
                conn.execute(QUERIES[step])
            progress.advance(1)


def _add_search_indexes(conn: psycopg.Connection) -> bool:
    """Trigram indexes for search where the server has pg_trgm; without it, search scans."""
    try:
        with conn.transaction():
            conn.execute(QUERIES["load/create_search_extension"])
            conn.execute(QUERIES["load/add_search_indexes"])
        return True
    except (
        errors.FeatureNotSupported,
        errors.UndefinedFile,
        errors.UndefinedObject,
        errors.InsufficientPrivilege,
    ):
        return False


def _copy_sources(conn: psycopg.Connection, render: OriginRender) -> None:
    """Stream every origin's fields, then every presentation, in position order, to the
    render's two files."""
    for name, path in (
        ("load/copy_origin_sources", render.source),
        ("load/copy_presentation_sources", render.presentations),
    ):
        with open(path, "wb") as target, conn.cursor() as cur, cur.copy(QUERIES[name]) as copy:
            for chunk in copy:
                target.write(chunk)


def _store_rendered(conn: psycopg.Connection, render: OriginRender) -> None:
    """Create origin_docs, copy the rendered records in (in position order), index them."""
    conn.execute(QUERIES["load/create_origin_docs"])
    with conn.cursor() as cur, cur.copy(QUERIES["load/copy_origin_docs"]) as target:
        for block in render.rendered():
            target.write(block)
    conn.execute(QUERIES["load/add_origin_docs_key"])


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
    failed = _add_constraints(conn, progress, without, reports, failed=False)
    if beside is not None:
        progress.advance(0, step="carriages (second connection)")
        beside.take(TABLES["carriage"][0])
    _add_constraints(conn, progress, with_carriages, reports, failed)
    problems: list[Problem] = []
    total = 0
    for report in dict.fromkeys(reports):
        found, count = _report(conn, report)
        problems.extend(found)
        total += count
    if total:
        raise LoadRejected(problems, total)


def _add_constraints(
    conn: psycopg.Connection,
    progress: LoadProgress,
    checks: list[tuple[str | None, str]],
    reports: list[str],
    failed: bool,
) -> bool:
    """Add each check's constraint until one cannot be added; from then on (and for a check
    with no constraint) put its report on reports. Whether one failed, now or before."""
    for constraint, report in checks:
        progress.advance(1, step=report.removeprefix("load/"))
        if constraint is not None and not failed:
            try:
                with conn.transaction():
                    conn.execute(QUERIES[constraint])
                continue
            except (errors.UniqueViolation, errors.ForeignKeyViolation):
                failed = True
        reports.append(report)
    return failed


def _report(conn: psycopg.Connection, name: str) -> tuple[list[Problem], int]:
    """Run one report query: its first problems and how many there are in all."""
    rows = conn.execute(QUERIES[name], {"limit": MAX_PROBLEMS}).fetchall()
    problems = [Problem(line, field_name, message) for line, field_name, message, _ in rows]
    return problems, (rows[0][3] if rows else 0)


def _grant_readers(conn: psycopg.Connection) -> None:
    """Give the registered read-only roles SELECT on the new graph."""
    for (role,) in conn.execute(QUERIES["load/grant_readers"]).fetchall():
        conn.execute(sql.SQL("GRANT USAGE ON SCHEMA graph_next TO {}").format(sql.Identifier(role)))
        conn.execute(
            sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA graph_next TO {}").format(
                sql.Identifier(role)
            )
        )


def _record_generation(conn: psycopg.Connection, origins: int) -> tuple[int, datetime]:
    """Number the new graph, keep the live one as graph_g<n>, and make the new one live."""
    present = conn.execute(QUERIES["meta/graph_exists"]).fetchone()
    retired = None
    if present and present[0]:
        live = conn.execute(QUERIES["load/get_live_generation"]).fetchone()
        assert live is not None and live[0] is not None  # migration 002 numbered older graphs
        retired = schema_name(int(live[0]))
    row = conn.execute(QUERIES["load/record_generation"], {"origins": origins}).fetchone()
    assert row is not None  # INSERT ... RETURNING of one row
    if retired is None:
        conn.execute(QUERIES["load/publish_first_graph"])
    else:
        conn.execute(sql.SQL(QUERIES["load/swap_graph"]).format(retired=sql.Identifier(retired)))
    return int(row[0]), row[1]


def _drop_retired_generations(conn: psycopg.Connection, keep: int) -> None:
    """Drop generations past the newest keep, when no reader is inside them.

    Each drop first takes all the generation's tables at once without waiting, so pinned
    readers never queue behind it (they wait only for the DROP itself, milliseconds); while
    readers are inside, it tries again a few times, then leaves the generation to the next
    load: until then it is still kept (and reported so), and pinned reads of it keep working.
    """
    rows = conn.execute(QUERIES["load/list_generations_to_drop"], {"keep": keep}).fetchall()
    for (generation,) in rows:
        schema = schema_name(int(generation))
        for attempt in range(DROP_ATTEMPTS):
            if attempt:
                time.sleep(DROP_PAUSE_S)
            try:
                with conn.transaction():
                    _drop_generation(conn, int(generation), schema)
                break
            except errors.LockNotAvailable:
                continue


def _drop_generation(conn: psycopg.Connection, generation: int, schema: str) -> None:
    """In the caller's transaction: lock every table of schema, drop it, mark it dropped."""
    conn.execute(QUERIES["load/set_lock_timeout"])
    tables = conn.execute(QUERIES["load/list_generation_tables"], {"schema": schema}).fetchall()
    if tables:
        names = sql.SQL(", ").join(sql.Identifier(schema, table) for (table,) in tables)
        conn.execute(sql.SQL(QUERIES["load/lock_generation_tables"]).format(tables=names))
    conn.execute(
        sql.SQL(QUERIES["load/drop_generation_schema"]).format(schema=sql.Identifier(schema))
    )
    conn.execute(QUERIES["load/mark_generation_dropped"], {"generation": generation})


def kept_generations(conn: psycopg.Connection) -> list[KeptGeneration]:
    """Every generation still kept, newest first, with its disk use."""
    rows = conn.execute(QUERIES["meta/list_kept_generations"]).fetchall()
    return [KeptGeneration(int(g), at, int(n), size) for g, at, n, size in rows]


def _vacuum_graph(conn: psycopg.Connection) -> None:
    """Set the visibility map so that the read model's index-only scans skip the heap."""
    autocommit = conn.autocommit
    conn.autocommit = True
    try:
        conn.execute(QUERIES["load/vacuum_read_model"])
    finally:
        conn.autocommit = autocommit


def load_counts_line(result: LoadResult) -> str:
    """One summary line: counts per record type, the time taken and where it went."""
    parts = ", ".join(f"{count} {kind}" for kind, count in result.counts.items())
    phases, previous = [], 0.0
    for phase in ("parse", "copy", "check", "read_model"):
        if phase in result.timings:
            phases.append(f"{phase} {result.timings[phase] - previous:.1f}")
            previous = result.timings[phase]
    detail = f" ({', '.join(phases)} s)" if phases else ""
    return f"loaded {result.lines} lines ({parts}) in {result.elapsed_s:.1f} s{detail}"


def generation_lines(result: LoadResult) -> list[str]:
    """The generation a load produced, then each kept generation and its disk use."""
    if result.generation is None or result.committed_at is None:
        return []
    lines = [f"generation {result.generation} committed at {_rfc3339(result.committed_at)}"]
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
        "kept_generations": [
            {"generation": kept.generation, "origins": kept.origins, "size_bytes": kept.size_bytes}
            for kept in result.kept
        ],
    }
