"""The statements a load's phases run (registry.loader.loading), one function each.

Each runs on the connection it is given, inside the caller's transaction unless it says
otherwise; none decides what comes next. The SQL itself is in sql/load/ and sql/meta/.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from datetime import datetime

import orjson
import psycopg
from psycopg import errors, sql

from registry.database.facets import facet_key_combos
from registry.database.generations import schema_name
from registry.database.migrations import SCHEMA_VERSION
from registry.database.queries import QUERIES
from registry.database.rows import all_rows, one_row, scalar, scalars
from registry.loader.parsing import ParsedDocument
from registry.loader.progress import LoadProgress
from registry.loader.records import TABLES, Problem
from registry.loader.rendering import OriginRender

# Tries at dropping a retired generation while pinned readers are inside it, and the pause
# between them: about 5 s in all, then the next load tries again.
DROP_ATTEMPTS = 11
DROP_PAUSE_S = 0.5


@dataclass(frozen=True)
class KeptGeneration:
    """One generation still in the database after a load, and its disk use."""

    generation: int
    committed_at: datetime
    origins: int
    size_bytes: int | None


def open_graph_next(conn: psycopg.Connection) -> None:
    """Take the load lock, and create an empty graph_next with the graph's tables."""
    conn.execute(QUERIES["meta/lock_loads"])
    conn.execute(QUERIES["load/prepare_graph_next"])
    conn.execute(QUERIES["load/use_graph_next"])
    conn.execute(QUERIES["graph/create_tables"])


def copy_kinds(
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


def add_search_indexes(conn: psycopg.Connection) -> bool:
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


def copy_sources(conn: psycopg.Connection, render: OriginRender) -> None:
    """Stream every origin's fields, then every presentation, in position order, to the
    render's two files."""
    for name, path in (
        ("load/copy_origin_sources", render.source),
        ("load/copy_presentation_sources", render.presentations),
    ):
        with open(path, "wb") as target, conn.cursor() as cur, cur.copy(QUERIES[name]) as copy:
            for chunk in copy:
                target.write(chunk)


@functools.cache
def _facet_key_combos_json() -> str:
    """facet_key_combos as the statement takes it: the same for every load of this code, so
    worked out once per process (5 ms, which every load of a small graph paid)."""
    return orjson.dumps(facet_key_combos()).decode()


def create_facet_key_combos(conn: psycopg.Connection) -> None:
    """The flag filter keys and the combinations each admits, for the facet rankings
    (load/build_filter_counts.sql), from the function the listing filters with."""
    conn.execute(QUERIES["load/create_facet_key_combos"], {"keys": _facet_key_combos_json()})


def store_rendered(conn: psycopg.Connection, render: OriginRender) -> None:
    """Create origin_docs, copy the rendered records in (in position order), index them, and
    hash them (origin_doc_hashes, for the change set)."""
    conn.execute(QUERIES["load/create_origin_docs"])
    with conn.cursor() as cur, cur.copy(QUERIES["load/copy_origin_docs"]) as target:
        for block in render.rendered():
            target.write(block)
    conn.execute(QUERIES["load/add_origin_docs_key"])
    conn.execute(QUERIES["load/build_doc_hashes"])


def add_constraints(
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


def run_report(conn: psycopg.Connection, name: str, limit: int) -> tuple[list[Problem], int]:
    """Run one report query: its first limit problems and how many there are in all."""
    rows = all_rows(conn, QUERIES[name], {"limit": limit})
    problems = [Problem(row["line"], row["field"], row["problem"]) for row in rows]
    return problems, (rows[0]["total"] if rows else 0)


def grant_readers(conn: psycopg.Connection) -> list[str]:
    """Give the registered read-only roles SELECT on the new graph; forget those that no
    longer exist (dropped by an operator) and return their names."""
    forgotten = scalars(conn, QUERIES["load/forget_missing_readers"])
    for role in scalars(conn, QUERIES["meta/list_reader_role_names"]):
        conn.execute(sql.SQL("GRANT USAGE ON SCHEMA graph_next TO {}").format(sql.Identifier(role)))
        conn.execute(
            sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA graph_next TO {}").format(
                sql.Identifier(role)
            )
        )
    return sorted(forgotten)


def record_generation(
    conn: psycopg.Connection, origins: int, previous: int | None, changes: dict[str, int]
) -> tuple[int, datetime]:
    """Number the new graph, keep its change set, keep the live one as graph_g<n>, and make
    the new one live.

    previous and changes (added, removed, changed) are the change set's, for the record."""
    retired = None
    if scalar(conn, QUERIES["meta/graph_exists"]):
        live = scalar(conn, QUERIES["load/get_live_generation"])
        assert live is not None  # migration 002 numbered older graphs
        retired = schema_name(int(live))
    # INSERT ... RETURNING of one row
    params = {"origins": origins, "previous": previous, **changes}
    row = one_row(conn, QUERIES["load/record_generation"], params)
    # The change set outlives the graph (docs/api.md, Changes since any generation): copied to
    # change_log, with the net changes from every kept since to this generation, before the
    # generation goes live.
    conn.execute(QUERIES["load/record_change_log"])
    conn.execute(QUERIES["load/build_net_changes"])
    if retired is None:
        conn.execute(QUERIES["load/publish_first_graph"])
    else:
        conn.execute(sql.SQL(QUERIES["load/swap_graph"]).format(retired=sql.Identifier(retired)))
    return int(row["generation"]), row["committed_at"]


def drop_retired_generations(conn: psycopg.Connection, keep: int) -> None:
    """Drop generations past the newest keep, when no reader is inside them.

    Each drop first takes all the generation's tables at once without waiting, so pinned
    readers never queue behind it (they wait only for the DROP itself, milliseconds); while
    readers are inside, it tries again a few times, then leaves the generation to the next
    load: until then it is still kept (and reported so), and pinned reads of it keep working.
    Like every write to registry_meta after a commit, each drop holds the load lock
    (drop_retired_change_sets says why).
    """
    for generation in scalars(conn, QUERIES["load/list_generations_to_drop"], {"keep": keep}):
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


def drop_retired_change_sets(conn: psycopg.Connection, keep: int) -> None:
    """Drop the change sets past the newest keep (docs/api.md, Changes since any generation), oldest
    first, each in its own transaction. Deleting rows never waits for readers: one that began before
    still reads them in its snapshot (an export of changes since an old generation ends whole).

    Each drop holds the load lock, and picks its change set under it. A drop raises the
    oldest since of every kept generation and fixes their net changes (drop_change_set.sql);
    without the lock the next load could build its net changes from the oldest since before
    this drop committed, and the drop, which cannot see that load's rows, would leave them
    built for a since that is gone: since=<oldest> would then miss rows until another drop.
    With it, a load builds either before the drop begins or after it has committed.
    """
    while True:
        with conn.transaction():
            conn.execute(QUERIES["meta/lock_loads"])
            generation = scalar(conn, QUERIES["load/list_change_sets_to_drop"], {"keep": keep})
            if generation is None:
                return
            conn.execute(QUERIES["load/drop_change_set"], {"generation": int(generation)})


def _drop_generation(conn: psycopg.Connection, generation: int, schema: str) -> None:
    """In the caller's transaction: take the load lock (waiting for a load under way), then
    lock every table of schema without waiting long, drop it and its net changes, mark it
    dropped."""
    conn.execute(QUERIES["meta/lock_loads"])
    conn.execute(QUERIES["load/set_lock_timeout"])
    tables = scalars(conn, QUERIES["load/list_generation_tables"], {"schema": schema})
    if tables:
        names = sql.SQL(", ").join(sql.Identifier(schema, table) for table in tables)
        conn.execute(sql.SQL(QUERIES["load/lock_generation_tables"]).format(tables=names))
    conn.execute(
        sql.SQL(QUERIES["load/drop_generation_schema"]).format(schema=sql.Identifier(schema))
    )
    conn.execute(QUERIES["load/drop_net_changes"], {"generation": generation})
    conn.execute(QUERIES["load/mark_generation_dropped"], {"generation": generation})


def kept_generations(conn: psycopg.Connection) -> list[KeptGeneration]:
    """Every generation still kept, newest first, with its disk use."""
    return [
        KeptGeneration(
            int(row["generation"]), row["committed_at"], int(row["origins"]), row["size_bytes"]
        )
        for row in all_rows(conn, QUERIES["meta/list_kept_generations"])
    ]


def record_graph_info(
    conn: psycopg.Connection, graph_format: str, counts: dict[str, int], digest: str
) -> None:
    """Write into graph_next what it holds: the schema version, the format, the counts and
    the digest of its records."""
    conn.execute(
        QUERIES["load/record_graph_info"],
        {
            "schema_version": SCHEMA_VERSION,
            "format": graph_format,
            "counts": orjson.dumps(counts).decode(),
            "digest": digest,
        },
    )


def analyze_graph_next(conn: psycopg.Connection) -> None:
    """Gather the planner's statistics on the new graph before it goes live."""
    conn.execute(QUERIES["load/analyze_graph_next"])


def record_load(conn: psycopg.Connection, elapsed_s: float, counts: dict[str, int]) -> None:
    """Add the load to the log of loads, with the time it took so far."""
    conn.execute(
        QUERIES["meta/record_load"],
        {
            "schema_version": SCHEMA_VERSION,
            "elapsed_ms": int(elapsed_s * 1000),
            "counts": orjson.dumps(counts).decode(),
        },
    )


def record_generation_size(conn: psycopg.Connection) -> None:
    """Note the disk use of the generation just committed (after its commit)."""
    conn.execute(QUERIES["load/record_generation_size"])
