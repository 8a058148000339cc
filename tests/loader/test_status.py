"""`registry status` as an operator runs it: a subprocess with DATABASE_URL set."""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import orjson
import psycopg
from psycopg import sql

from registry.database.migrations import SCHEMA_VERSION
from registry.database.roles import create_reader_role
from registry.digest import digest_of
from registry.loader.loading import load_document

from .graphs import load

ROOT = Path(__file__).resolve().parents[2]


def registry_status(conninfo: str, *options: str) -> subprocess.CompletedProcess[str]:
    """Run `registry status [OPTIONS]` against one database, output piped."""
    return subprocess.run(
        [sys.executable, "-m", "registry.cli", "status", *options],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": conninfo},
        timeout=60,
        check=False,
    )


def test_status_of_a_database_never_set_up(database_factory: Callable[[], str]) -> None:
    """A fresh database: reachable, nothing set up, nothing loaded, exit 0."""
    done = registry_status(database_factory())
    assert done.returncode == 0, done.stderr
    assert "server       PostgreSQL " in done.stdout
    assert "schema       not set up" in done.stdout
    assert "generations  none" in done.stdout
    assert "change sets" not in done.stdout
    assert "reader role  none registered" in done.stdout


def test_status_lists_generations_and_reader_roles(
    database_factory: Callable[[], str], example_document: bytes
) -> None:
    """Two loads kept, the newest live; a registered role that exists, then one that does not."""
    conninfo = database_factory()
    first = load(conninfo, example_document)
    second = load(conninfo, example_document)
    role = f"registry_reader_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(conninfo, autocommit=True) as conn:
        create_reader_role(conn, role, password=None)
    try:
        done = registry_status(conninfo, "--json")
        assert done.returncode == 0, done.stderr
        status = json.loads(done.stdout)
        assert [g["generation"] for g in status["generations"]] == [
            second.generation,
            first.generation,
        ]
        assert [g["live"] for g in status["generations"]] == [True, False]
        assert all(g["origins"] == 4 and g["size_bytes"] > 0 for g in status["generations"])
        assert all(g["loaded_at"].endswith("Z") for g in status["generations"])
        assert status["migrations_version"] == status["expected_schema_version"]
        assert status["graph_version"] == SCHEMA_VERSION
        assert status["reader_roles"] == {role: True}
        assert status["server_version"]
        # The same graph loaded twice: the same digest, that of its four records.
        with psycopg.connect(conninfo) as conn:
            docs = [doc for (doc,) in conn.execute("SELECT doc FROM graph.origin_docs")]
        expected = digest_of(orjson.loads(doc) for doc in docs)
        assert [g["digest"] for g in status["generations"]] == [expected, expected]
        assert "password" not in status["conninfo"]

        text = registry_status(conninfo).stdout
        assert f"reader role  {role}: exists" in text
        assert "generations  2 kept, newest first" in text
        assert f"{second.generation}  loaded " in text and "(live)" in text
        assert f"          digest {expected}" in text
    finally:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))
    text = registry_status(conninfo).stdout
    assert f"reader role  {role}: MISSING" in text


def test_status_fails_when_the_database_cannot_be_reached() -> None:
    """Nothing listening: exit 1 and a message that says so."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    done = registry_status(f"postgresql://postgres@127.0.0.1:{port}/registry?connect_timeout=2")
    assert done.returncode == 1
    assert "cannot reach the database" in done.stderr
    assert done.stdout == ""


def test_status_shows_the_change_sets_kept(
    database_factory: Callable[[], str], example_document: bytes
) -> None:
    """docs/api.md, Changes since any generation: how many change sets are kept, the oldest since,
    and their bytes. The first load keeps its own (since the first generation itself); after four
    loads keeping two, the generation before the older of them."""
    conninfo = database_factory()

    def load_keeping_two() -> None:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            load_document(conn, io.BytesIO(example_document), keep_changes=2)

    load_keeping_two()
    status = json.loads(registry_status(conninfo, "--json").stdout)
    assert status["change_sets"]["count"] == 1
    assert status["change_sets"]["oldest_since"] == 1
    assert status["change_sets"]["size_bytes"] > 0
    for _ in range(3):
        load_keeping_two()
    done = registry_status(conninfo, "--json")
    assert done.returncode == 0, done.stderr
    kept = json.loads(done.stdout)["change_sets"]
    assert (kept["count"], kept["oldest_since"]) == (2, 2)
    assert kept["size_bytes"] >= 0
    text = registry_status(conninfo).stdout
    assert "change sets  2 kept, oldest since 2, " in text
