"""Change sets kept longer than graphs (docs/api.md, Changes since any generation), as stored: every
load copies its change set into registry_meta.change_log and builds its net changes;
REGISTRY_KEEP_CHANGES bounds the kept change sets; the oldest since follows them; an upgraded
database keeps what it had."""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable
from typing import Any

import orjson
import psycopg
import pytest

from registry.database.changes import change_statement, oldest_since
from registry.database.generations import current_generation
from registry.database.migrations import SCHEMA_VERSION, apply_migrations
from registry.database.repository import get_schema_state
from registry.loader import statements
from registry.loader.demo import write_demo_document
from registry.loader.demo_twin import write_twin_document
from registry.loader.loading import LoadResult, load_document
from registry.settings import SettingsError, keep_changes, load_settings, settings_from_environ

from .graphs import (
    BASE,
    HELD_LINE,
    LINE,
    ORIGIN_ID,
    OTHER_ORIGIN_ID,
    document,
    drop_change_log,
    edited,
    released_migration,
)

ALPHA = ORIGIN_ID.removeprefix("svc:origin:")
BETA = OTHER_ORIGIN_ID.removeprefix("svc:origin:")
WITHOUT_BETA = document([r for i, r in enumerate(BASE, 1) if i not in (5, HELD_LINE)])
RENAMED = edited(LINE["origin"], name="Alpha renamed")
BASE_DOCUMENT = document(BASE)
RENAMED_WITHOUT_BETA = document(
    [
        {**record, "name": "Alpha renamed"} if line == LINE["origin"] else record
        for line, record in enumerate(BASE, 1)
        if line not in (5, HELD_LINE)
    ]
)


def load(conninfo: str, payload: bytes, keep: int = 2, changes: int = 30) -> LoadResult:
    """Load payload keeping keep generations and changes change sets."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        return load_document(conn, io.BytesIO(payload), keep_generations=keep, keep_changes=changes)


def net(conn: psycopg.Connection, since: int, generation: int) -> dict[str, tuple[str, list[str]]]:
    """The stored net changes of (since, generation): origin id -> (kind, blocks)."""
    rows = conn.execute(
        "SELECT id::text, kind, blocks FROM registry_meta.net_changes"
        " WHERE generation = %s AND lo <= %s AND %s < until",
        (generation, since, since),
    ).fetchall()
    return {origin: (kind, blocks) for origin, kind, blocks in rows}


def counts(conn: psycopg.Connection, since: int, generation: int) -> tuple[int, ...] | None:
    """The stored counts of the net changes of (since, generation): added, removed, changed,
    then the changed in blocks origin and bans."""
    row = conn.execute(
        "SELECT added, removed, changed, origin, bans FROM registry_meta.net_counts"
        " WHERE generation = %s AND since = %s",
        (generation, since),
    ).fetchone()
    return None if row is None else tuple(row)


def kept_change_sets(conn: psycopg.Connection) -> list[int]:
    """The generations whose change sets are kept, oldest first, as change_log holds them."""
    rows = conn.execute(
        "SELECT DISTINCT generation FROM registry_meta.change_log ORDER BY generation"
    ).fetchall()
    marked = conn.execute(
        "SELECT generation FROM registry_meta.generations WHERE changes_dropped_at IS NULL"
        " ORDER BY generation"
    ).fetchall()
    assert [g for (g,) in rows] == [g for (g,) in marked]
    return [g for (g,) in rows]


def test_a_chain_of_loads_keeps_each_change_set_and_nets_them(
    database_factory: Callable[[], str],
) -> None:
    """Alpha renamed then renamed back, Beta removed then re-added: each change set is kept as
    the load made it, and the net changes since each generation are exact."""
    conninfo = database_factory()
    for payload in (BASE_DOCUMENT, RENAMED, RENAMED_WITHOUT_BETA, BASE_DOCUMENT):
        load(conninfo, payload)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        assert kept_change_sets(conn) == [1, 2, 3, 4]
        log = conn.execute(
            "SELECT generation, id::text, kind, blocks, before IS NULL, after IS NULL,"
            " after_name, before_name FROM registry_meta.change_log ORDER BY generation, id"
        ).fetchall()
        assert log == [
            (1, ALPHA, "added", [], True, False, "Alpha", None),
            (1, BETA, "added", [], True, False, "Beta", None),
            (2, ALPHA, "changed", ["origin"], False, False, "Alpha renamed", "Alpha"),
            (3, BETA, "removed", [], False, True, None, "Beta"),
            (4, ALPHA, "changed", ["origin"], False, False, "Alpha", "Alpha renamed"),
            (4, BETA, "added", [], True, False, "Beta", None),
        ]
        # before and after are the records exactly as the API answered them
        before, after = conn.execute(
            "SELECT before, after FROM registry_meta.change_log WHERE generation = 4 AND id = %s",
            (ALPHA,),
        ).fetchone()
        assert '"name":"Alpha renamed"' in before and '"name":"Alpha"' in after
        assert oldest_since(conn, 4) == 1
        assert net(conn, 1, 4) == {}
        assert net(conn, 2, 4) == {ALPHA: ("changed", ["origin"])}
        assert net(conn, 3, 4) == {ALPHA: ("changed", ["origin"]), BETA: ("added", [])}
        assert net(conn, 4, 4) == {}
        assert net(conn, 1, 3) == {ALPHA: ("changed", ["origin"]), BETA: ("removed", [])}
        assert counts(conn, 1, 4) == (0, 0, 0, 0, 0)
        assert counts(conn, 3, 4) == (1, 0, 1, 1, 0)
        assert counts(conn, 1, 3) == (0, 1, 1, 1, 0)
        # the net changes of a dropped graph went with it (two graphs kept: 3 and 4)
        assert counts(conn, 1, 2) is None
        sizes = conn.execute(
            "SELECT generation, change_bytes > 0 FROM registry_meta.generations ORDER BY 1"
        ).fetchall()
        assert sizes == [(1, True), (2, True), (3, True), (4, True)]


def test_change_sets_past_keep_changes_are_dropped_and_the_oldest_since_follows(
    database_factory: Callable[[], str],
) -> None:
    conninfo = database_factory()
    documents = [BASE_DOCUMENT, RENAMED, BASE_DOCUMENT, RENAMED, BASE_DOCUMENT]
    expected = {
        1: ([1], 1),
        2: ([1, 2], 1),
        3: ([1, 2, 3], 1),
        4: ([2, 3, 4], 1),
        5: ([3, 4, 5], 2),
    }
    for generation, payload in enumerate(documents, 1):
        result = load(conninfo, payload, keep=2, changes=3)
        assert result.generation == generation
        with psycopg.connect(conninfo, autocommit=True) as conn:
            kept, since = expected[generation]
            assert (kept_change_sets(conn), oldest_since(conn, generation)) == (kept, since)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        # generation 5 renamed Alpha back: since 2 (renamed) it changed; since 3 it did not
        assert net(conn, 2, 5) == {ALPHA: ("changed", ["origin"])}
        assert net(conn, 3, 5) == {}
        # a generation never produced has no oldest since of its own: the registry's is kept
        assert oldest_since(conn, 4) == 2


def test_retired_change_sets_are_dropped_oldest_first(database_factory: Callable[[], str]) -> None:
    """Each retired change set is dropped in a transaction of its own, oldest first, so that
    whenever a drop is under way (or was interrupted) the change sets still kept are the newest
    ones, contiguous after the oldest since, as /registry/generations lists them. Generation 3's
    row is held locked while generations 1 to 4 are retired: the drop waits on 3, and what it
    dropped before must be 1 and 2, not 4."""
    conninfo = database_factory()
    for payload in (BASE_DOCUMENT, RENAMED, BASE_DOCUMENT, RENAMED, BASE_DOCUMENT, RENAMED):
        load(conninfo, payload, keep=2, changes=30)
    failures: list[BaseException] = []

    def retire() -> None:
        try:
            with psycopg.connect(conninfo, autocommit=True) as conn:
                statements.drop_retired_change_sets(conn, 2)
        except BaseException as error:  # reported by the test below
            failures.append(error)

    with psycopg.connect(conninfo) as holder, psycopg.connect(conninfo, autocommit=True) as seer:
        holder.execute("SELECT FROM registry_meta.generations WHERE generation = 3 FOR UPDATE")
        worker = threading.Thread(target=retire)
        worker.start()
        try:
            for _ in range(300):  # until the drop waits on the lock (30 s at most)
                waiting = seer.execute(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE wait_event_type = 'Lock' AND datname = current_database()"
                ).fetchone()
                if waiting is not None and waiting[0] > 0:
                    break
                time.sleep(0.1)
            else:
                pytest.fail("the retirement never waited on generation 3")
            dropped_while_waiting = kept_change_sets(seer)
        finally:
            holder.rollback()
            worker.join()
    assert failures == []
    assert dropped_while_waiting == [3, 4, 5, 6], (
        f"while the drop of generation 3 waited, the change sets kept were "
        f"{dropped_while_waiting}: a newer one was dropped before an older one"
    )
    with psycopg.connect(conninfo, autocommit=True) as conn:
        assert kept_change_sets(conn) == [5, 6]
        assert oldest_since(conn, 6) == 4


def test_keep_changes_is_never_below_keep_generations(database_factory: Callable[[], str]) -> None:
    conninfo = database_factory()
    for payload in (BASE_DOCUMENT, RENAMED, BASE_DOCUMENT, RENAMED):
        load(conninfo, payload, keep=3, changes=1)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        assert kept_change_sets(conn) == [2, 3, 4]
        assert oldest_since(conn, 4) == 1


def test_the_keep_changes_setting() -> None:
    assert keep_changes(load_settings()) == 30
    assert keep_changes({"REGISTRY_KEEP_CHANGES": 1, "REGISTRY_KEEP_GENERATIONS": 4}) == 4
    assert settings_from_environ({"REGISTRY_KEEP_CHANGES": "1000"})["REGISTRY_KEEP_CHANGES"] == 1000
    for bad in ("0", "1001", "many"):
        with pytest.raises(SettingsError, match="REGISTRY_KEEP_CHANGES"):
            settings_from_environ({"REGISTRY_KEEP_CHANGES": bad})


def as_before_migration_4(conn: psycopg.Connection) -> None:
    """Put the database back the way the code before migration 004 left it."""
    drop_change_log(conn)
    conn.execute("DELETE FROM registry_meta.schema_migrations WHERE version >= 4")
    for (schema,) in conn.execute(
        "SELECT nspname FROM pg_namespace WHERE nspname ~ '^graph(_g[0-9]+)?$'"
    ).fetchall():
        conn.execute(f"UPDATE {schema}.graph_info SET schema_version = 3")


def test_an_upgraded_database_keeps_the_change_sets_of_its_kept_graphs(
    database_factory: Callable[[], str],
) -> None:
    conninfo = database_factory()
    for payload in (BASE_DOCUMENT, RENAMED, WITHOUT_BETA):
        load(conninfo, payload)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        as_before_migration_4(conn)
        assert get_schema_state(conn)["graph_version"] == 3
        assert apply_migrations(conn) == [
            "004_change_log",
            "005_net_change_ranges",
            "006_net_change_places",
            "007_net_change_lines_inlined",
            "008_change_log_in_line",
            "009_change_log_by_generation",
            "010_digests",
            "011_net_buckets",
        ]
        assert get_schema_state(conn)["graph_version"] == SCHEMA_VERSION
        # generation 1's graph was dropped, and its change set with it
        assert kept_change_sets(conn) == [2, 3]
        assert oldest_since(conn, 3) == 1
        row = conn.execute(
            "SELECT kind, before_name, after_name, after_blocks IS NOT NULL"
            " FROM registry_meta.change_log WHERE generation = 2"
        ).fetchall()
        assert row == [("changed", "Alpha", "Alpha renamed", True)]
        assert net(conn, 1, 3) == {BETA: ("removed", [])}
        assert net(conn, 2, 3) == {ALPHA: ("changed", ["origin"]), BETA: ("removed", [])}
    # the next load nets across the upgrade: Beta back, Alpha's name back
    load(conninfo, BASE_DOCUMENT)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        assert kept_change_sets(conn) == [2, 3, 4]
        assert net(conn, 1, 4) == {}
        assert net(conn, 2, 4) == {ALPHA: ("changed", ["origin"])}


# Migration 006: the rows of each kept generation's net changes since its oldest since carry
# their place in id order (pos), so that any page of them is a range of net_changes_pos_idx.


def places_are_exact(conn: psycopg.Connection) -> int:
    """Assert that in every generation with net changes, the rows numbered are exactly those
    of its oldest since, numbered 1, 2, ... in id order; return how many rows are numbered."""
    rows = conn.execute(
        "SELECT x.generation, x.id::text, x.pos, x.lo = registry_meta.oldest_since(x.generation)"
        " FROM registry_meta.net_changes AS x ORDER BY x.generation, x.id"
    ).fetchall()
    numbered: dict[int, list[tuple[str, int]]] = {}
    for generation, origin, pos, of_oldest in rows:
        assert (pos is not None) == of_oldest, (generation, origin, pos)
        if of_oldest:
            numbered.setdefault(generation, []).append((origin, pos))
    for generation, places in numbered.items():
        assert [pos for _, pos in places] == list(range(1, len(places) + 1)), generation
    return sum(len(places) for places in numbered.values())


def chain_documents(count: int) -> list[bytes]:
    """A demo graph of 60 origins, then count - 1 twins of it (each undoing the one before)."""
    documents = []
    with io.BytesIO() as demo:
        write_demo_document(demo, 60, 3)
        documents.append(demo.getvalue())
    for step in range(1, count):
        with io.BytesIO() as twin:
            write_twin_document(twin, 60, 3, 0.2 + step / 100)
            documents.append(twin.getvalue())
    return documents


def test_the_net_changes_since_the_oldest_since_are_numbered_as_retention_moves_it(
    database_factory: Callable[[], str],
) -> None:
    """Each load numbers the rows of its oldest since; each dropped change set raises the
    oldest since of the generations kept and numbers their rows again (rows that began
    before it and after it alike), so the numbers stay 1, 2, ... in id order."""
    conninfo = database_factory()
    for generation, payload in enumerate(chain_documents(6), 1):
        load(conninfo, payload, keep=2, changes=3)
        with psycopg.connect(conninfo, autocommit=True) as conn:
            numbered = places_are_exact(conn)
            assert generation == 1 or numbered > 0, generation
            if generation >= 5:
                assert oldest_since(conn, generation) == generation - 3


def as_of_version(conn: psycopg.Connection, version: int) -> None:
    """Record the migrations after version as not applied, and the graphs kept as built by
    that schema version."""
    conn.execute("DELETE FROM registry_meta.schema_migrations WHERE version > %s", (version,))
    for (schema,) in conn.execute(
        "SELECT nspname FROM pg_namespace WHERE nspname ~ '^graph(_g[0-9]+)?$'"
    ).fetchall():
        conn.execute(f"UPDATE {schema}.graph_info SET schema_version = {version}")


def as_before_migration_6(conn: psycopg.Connection) -> None:
    """Put the database back as the code before migration 006 left it (no places)."""
    conn.execute("ALTER TABLE registry_meta.net_changes DROP COLUMN pos")
    as_of_version(conn, 5)


def test_an_upgraded_database_numbers_the_net_changes_it_keeps(
    database_factory: Callable[[], str],
) -> None:
    conninfo = database_factory()
    for payload in chain_documents(5):
        load(conninfo, payload, keep=2, changes=3)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        as_before_migration_6(conn)
        assert apply_migrations(conn) == [
            "006_net_change_places",
            "007_net_change_lines_inlined",
            "008_change_log_in_line",
            "009_change_log_by_generation",
            "010_digests",
            "011_net_buckets",
        ]
        assert get_schema_state(conn)["graph_version"] == SCHEMA_VERSION
        assert places_are_exact(conn) > 0


def as_before_migration_7(conn: psycopg.Connection) -> None:
    """Put the database back as the code before migration 007 left it: the line functions as
    migration 004 made them (IMMUTABLE, and the CSV one with a sub-select), never inlined."""
    conn.execute(
        "ALTER FUNCTION registry_meta.net_change_json(uuid, text, text[], text, text) IMMUTABLE"
    )
    made = released_migration("004_change_log")
    start = made.index("CREATE FUNCTION registry_meta.net_change_csv(")
    conn.execute(
        "CREATE OR REPLACE" + made[start : made.index("$fn$;", start) + 5][len("CREATE") :]
    )
    as_of_version(conn, 6)


def live(conn: psycopg.Connection) -> int:
    """The live generation."""
    stamp = current_generation(conn)
    assert stamp is not None
    return stamp.generation


def whole_export(conn: psycopg.Connection) -> dict[str, Any]:
    """The parameters of the export since the live generation's oldest since, read in one
    batch from the first origin id (it is read by keyset batches:
    registry.database.exports.KeysetRows)."""
    generation = live(conn)
    since = oldest_since(conn, generation)
    return {"since": since, "generation": generation, "oldest": since,
            "from": "00000000-0000-0000-0000-000000000000", "batch": 2**31 - 1}  # fmt: skip


def line_functions_inlined(conn: psycopg.Connection) -> bool:
    """Whether the export of the net changes since the live generation's oldest since builds
    its lines in the statement, JSON and CSV (no call of a line function left in its plan)."""
    plans = [
        conn.execute(
            "EXPLAIN (VERBOSE, FORMAT JSON) "
            + change_statement("changes/export_net_changes", "graph", column),
            whole_export(conn),
        ).fetchone()
        for column in ("line", "csv_line")
    ]
    return not any(b"registry_meta.net_change_" in orjson.dumps(plan) for plan in plans)


def export_lines(conn: psycopg.Connection) -> list[str]:
    """The lines of that export, JSON and CSV."""
    return [
        line
        for column in ("line", "csv_line")
        for (_, line) in conn.execute(
            change_statement("changes/export_net_changes", "graph", column), whole_export(conn)
        ).fetchall()
    ]


def test_an_upgraded_database_builds_the_lines_of_net_changes_in_the_statement(
    database_factory: Callable[[], str],
) -> None:
    conninfo = database_factory()
    for payload in chain_documents(4):
        load(conninfo, payload, keep=2, changes=3)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        lines = export_lines(conn)
        assert lines and line_functions_inlined(conn)
        as_before_migration_7(conn)
        assert not line_functions_inlined(conn)
        assert export_lines(conn) == lines
        assert apply_migrations(conn) == [
            "007_net_change_lines_inlined",
            "008_change_log_in_line",
            "009_change_log_by_generation",
            "010_digests",
            "011_net_buckets",
        ]
        assert get_schema_state(conn)["graph_version"] == SCHEMA_VERSION
        assert line_functions_inlined(conn)
        assert export_lines(conn) == lines


def records_out_of_line(conn: psycopg.Connection) -> int:
    """How many chunks of change_log's records are in its TOAST table."""
    toast = conn.execute(
        "SELECT reltoastrelid::regclass::text FROM pg_class"
        " WHERE oid = 'registry_meta.change_log'::regclass"
    ).fetchone()
    assert toast is not None
    row = conn.execute(f"SELECT count(*) FROM {toast[0]}").fetchone()
    assert row is not None
    return int(row[0])


def test_a_change_log_row_keeps_its_records_in_line(database_factory: Callable[[], str]) -> None:
    """A changed origin's row whose two records pass 2 KB keeps them in the row, not in
    TOAST (migration 008), so each line of a since page or export is read with the row its
    key finds."""
    conninfo = database_factory()
    for payload in chain_documents(3):
        load(conninfo, payload)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        widest = conn.execute(
            "SELECT max(octet_length(before) + octet_length(after))"
            " FROM registry_meta.change_log WHERE kind = 'changed'"
        ).fetchone()
        assert widest is not None and widest[0] > 2100
        assert records_out_of_line(conn) == 0


def as_before_migration_8(conn: psycopg.Connection) -> None:
    """Put the database back as the code before migration 008 left it: change_log's records
    stored out of line past 128 bytes (migration 004), and its rows written so, as that code
    wrote them."""
    conn.execute("ALTER TABLE registry_meta.change_log SET (toast_tuple_target = 128)")
    conn.execute(
        "ALTER TABLE registry_meta.change_log"
        " ALTER COLUMN before SET STORAGE EXTERNAL, ALTER COLUMN after SET STORAGE EXTERNAL"
    )
    conn.execute("UPDATE registry_meta.change_log SET before = before || '', after = after || ''")
    as_of_version(conn, 7)


def test_an_upgraded_database_keeps_the_records_of_later_loads_in_line(
    database_factory: Callable[[], str],
) -> None:
    """The rows written before the upgrade stay as they are and read the same; the change
    sets of later loads keep their records in their rows."""
    conninfo = database_factory()
    documents = chain_documents(4)
    for payload in documents[:3]:
        load(conninfo, payload)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        as_before_migration_8(conn)
        out_of_line = records_out_of_line(conn)
        assert out_of_line > 0
        lines = export_lines(conn)
        assert apply_migrations(conn) == [
            "008_change_log_in_line",
            "009_change_log_by_generation",
            "010_digests",
            "011_net_buckets",
        ]
        assert get_schema_state(conn)["graph_version"] == SCHEMA_VERSION
        assert export_lines(conn) == lines
        assert records_out_of_line(conn) == out_of_line
    load(conninfo, documents[3])
    with psycopg.connect(conninfo, autocommit=True) as conn:
        assert records_out_of_line(conn) == out_of_line
        assert export_lines(conn)


def change_log_indexes(conn: psycopg.Connection) -> list[str]:
    """The definitions of change_log's indexes, by name."""
    return [
        str(row[0])
        for row in conn.execute(
            "SELECT indexdef FROM pg_indexes"
            " WHERE schemaname = 'registry_meta' AND tablename = 'change_log' ORDER BY indexname"
        )
    ]


def as_before_migration_9(conn: psycopg.Connection) -> None:
    """Put the database back as the code before migration 009 left it: change_log indexed by
    its primary key and by generation alone."""
    conn.execute("DROP INDEX registry_meta.change_log_generation_id_idx")
    conn.execute("CREATE INDEX change_log_generation_idx ON registry_meta.change_log (generation)")
    as_of_version(conn, 8)


def test_an_upgraded_database_reads_one_change_set_by_generation_and_id(
    database_factory: Callable[[], str],
) -> None:
    """Migration 009 on a database with change sets kept: the index on generation alone
    becomes one on (generation, id), and every line reads as before."""
    conninfo = database_factory()
    for payload in chain_documents(4):
        load(conninfo, payload, keep=2, changes=3)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        lines = export_lines(conn)
        as_before_migration_9(conn)
        before = change_log_indexes(conn)
        assert not any("(generation, id)" in index for index in before), before
        assert apply_migrations(conn) == [
            "009_change_log_by_generation",
            "010_digests",
            "011_net_buckets",
        ]
        assert get_schema_state(conn)["graph_version"] == SCHEMA_VERSION
        after = change_log_indexes(conn)
        assert [index for index in after if "(generation" in index] == [
            "CREATE INDEX change_log_generation_id_idx ON registry_meta.change_log"
            " USING btree (generation, id)"
        ], after
        assert export_lines(conn) == lines
