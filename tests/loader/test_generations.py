"""Generations in the database: numbering, retention, drops that wait for readers, pinned
reads of a generation dropped under them, and the upgrade of a graph loaded before them."""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from psycopg import sql

from registry.database import repository
from registry.database.generations import (
    GenerationDropped,
    GenerationNotProduced,
    read_generation,
    schema_name,
)
from registry.database.migrations import SCHEMA_VERSION, apply_migrations
from registry.loader.loading import LoadRejected, LoadResult, load_document

from .graphs import BASE, LINE, document, drop_change_log, edited


def load(conninfo: str, payload: bytes, keep: int = 2) -> LoadResult:
    """Load a document keeping that many generations."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        return load_document(conn, io.BytesIO(payload), keep_generations=keep)


def schemas(conninfo: str) -> list[str]:
    """The graph schemas present, by name."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT nspname::text FROM pg_namespace WHERE nspname LIKE 'graph%' ORDER BY 1"
        ).fetchall()
    return [name for (name,) in rows]


def summary_of(conninfo: str, generation: int | None) -> Any:
    """The registry summary read pinned to generation (None: the newest)."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        return read_generation(conn, generation, repository.get_registry_summary)


def test_generations_increase_and_old_ones_are_dropped(
    database_factory: Callable[[], str],
) -> None:
    """Each load takes a greater number; the newest two are kept, older ones dropped."""
    conninfo = database_factory()
    produced = [load(conninfo, document(BASE)).generation for _ in range(3)]
    assert produced == [1, 2, 3]
    assert schemas(conninfo) == ["graph", "graph_g2"]
    result = load(conninfo, document(BASE))
    assert result.generation == 4
    assert [kept.generation for kept in result.kept] == [4, 3]
    assert all(kept.size_bytes and kept.size_bytes > 0 for kept in result.kept)
    assert [kept.origins for kept in result.kept] == [2, 2]
    assert summary_of(conninfo, 3)[0].generation == 3
    with pytest.raises(GenerationDropped) as dropped:
        summary_of(conninfo, 2)
    assert (dropped.value.generation, dropped.value.current) == (2, 4)
    with pytest.raises(GenerationNotProduced):
        summary_of(conninfo, 5)


def test_a_rejected_load_produces_no_generation(database_factory: Callable[[], str]) -> None:
    """A bad document, whether refused while reading or by the whole-document checks,
    produces no generation, and the next good load is still strictly greater."""
    conninfo = database_factory()
    assert load(conninfo, document(BASE)).generation == 1
    with pytest.raises(LoadRejected):
        load(conninfo, edited(LINE["origin"], reviewed="yes"))
    with pytest.raises(LoadRejected):
        load(conninfo, document([*BASE, BASE[LINE["origin"] - 1]]))  # a duplicate origin
    with psycopg.connect(conninfo, autocommit=True) as conn:
        rows = conn.execute("SELECT generation FROM registry_meta.generations").fetchall()
    assert rows == [(1,)]
    assert load(conninfo, document(BASE)).generation >= 2
    assert schemas(conninfo) == ["graph", "graph_g1"]


def test_a_drop_waits_for_readers_then_leaves_it_to_the_next_load(
    database_factory: Callable[[], str],
) -> None:
    """A reader holding a retired generation keeps it: the load commits anyway, reports it
    still kept, and pinned reads of it still work; the next load drops it."""
    conninfo = database_factory()
    load(conninfo, document(BASE))
    load(conninfo, document(BASE))
    with psycopg.connect(conninfo) as reader:  # a transaction open on generation 1
        reader.execute("SELECT count(*) FROM graph_g1.origin_rows").fetchone()
        result = load(conninfo, document(BASE), keep=1)
        assert result.generation == 3
        assert [kept.generation for kept in result.kept] == [3, 1]
        assert summary_of(conninfo, 3)[0].generation == 3
        reader.rollback()
    assert summary_of(conninfo, 1)[0].generation == 1
    result = load(conninfo, document(BASE), keep=1)
    assert [kept.generation for kept in result.kept] == [4]
    assert schemas(conninfo) == ["graph"]


def test_a_generation_dropped_under_a_pinned_read_is_gone_not_an_error(
    database_factory: Callable[[], str],
) -> None:
    """The schema vanishes between resolving the generation and reading it: GenerationDropped."""
    conninfo = database_factory()
    load(conninfo, document(BASE))
    load(conninfo, document(BASE))

    def read_while_dropped(conn: psycopg.Connection, schema: str) -> Any:
        """Drop generation 1 as a load would (another session, committed), then read."""
        if schema == schema_name(1):
            with psycopg.connect(conninfo, autocommit=True) as dropper, dropper.transaction():
                dropper.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))
                dropper.execute(
                    "UPDATE registry_meta.generations SET dropped_at = now() WHERE generation = 1"
                )
        return repository.get_registry_summary(conn, schema)

    with psycopg.connect(conninfo, autocommit=True) as conn, pytest.raises(GenerationDropped):
        read_generation(conn, 1, read_while_dropped)


def test_readers_never_queue_behind_a_drop(database_factory: Callable[[], str]) -> None:
    """While a reader is inside a retired generation, the drop waits and pinned requests of
    that generation keep answering 200; once the reader leaves, the drop happens and the same
    request gets 410 (never a 500 or a 503)."""
    from app import create_app
    from tests.conftest import app_config, make_token

    conninfo = database_factory()
    load(conninfo, document(BASE))
    load(conninfo, document(BASE))
    app = create_app(app_config(conninfo))
    client = app.test_client()
    headers = {"Authorization": f"Bearer {make_token()}"}
    results: list[LoadResult] = []
    try:
        with psycopg.connect(conninfo) as holder, psycopg.connect(conninfo) as watcher:
            watcher.autocommit = True
            holder.execute("SELECT count(*) FROM graph_g1.origin_docs").fetchone()
            loader = threading.Thread(
                target=lambda: results.append(load(conninfo, document(BASE), keep=1))
            )
            loader.start()
            deadline = time.monotonic() + 30
            while not generation_committed(watcher, 3):
                assert time.monotonic() < deadline, "the load never committed"
                time.sleep(0.02)
            # the load has committed and is trying to drop generation 1: pinned reads of it
            # are answered, not queued
            for _ in range(5):
                answer = client.get("/registry/origins?generation=1", headers=headers)
                assert answer.status_code == 200
                assert answer.headers["Registry-Generation"] == "1"
            holder.rollback()
            loader.join(30)
        gone = client.get("/registry/origins?generation=1", headers=headers)
    finally:
        app.extensions["registry_db"].close()
    assert [kept.generation for kept in results[0].kept] == [3]
    assert gone.status_code == 410
    assert gone.get_json()["details"] == {"generation": 1, "current": 3}


def generation_committed(conn: psycopg.Connection, generation: int) -> bool:
    """Whether registry_meta.generations holds this generation (its load committed)."""
    row = conn.execute(
        "SELECT count(*) FROM registry_meta.generations WHERE generation = %s", (generation,)
    ).fetchone()
    return bool(row and row[0])


def test_a_graph_loaded_before_generations_becomes_generation_1(
    database_factory: Callable[[], str],
) -> None:
    """Upgrading a database whose graph the previous code loaded: it is numbered and kept."""
    conninfo = database_factory()
    load(conninfo, document(BASE))
    with psycopg.connect(conninfo, autocommit=True) as conn:
        # Put the database back the way the code before migration 002 left it.
        conn.execute(
            "ALTER TABLE graph.graph_info DROP COLUMN generation, DROP COLUMN committed_at,"
            " DROP COLUMN format"
        )
        conn.execute("UPDATE graph.graph_info SET schema_version = 1")
        drop_change_log(conn)
        conn.execute("DROP TABLE registry_meta.generations")
        conn.execute("DROP SEQUENCE registry_meta.generation_seq")
        conn.execute("DELETE FROM registry_meta.schema_migrations WHERE version >= 2")
        assert "002_generations" in apply_migrations(conn)
        state = repository.get_schema_state(conn)
    assert state["graph_version"] == SCHEMA_VERSION
    assert summary_of(conninfo, None)[0].generation == 1
    assert load(conninfo, document(BASE)).generation == 2
    assert summary_of(conninfo, 1)[0].generation == 1
    assert schemas(conninfo) == ["graph", "graph_g1"]
