"""Code older than its database refuses to touch it: `registry load` (and its dry run),
`registry db upgrade` and `registry db create-reader` exit 1 with nothing changed when the
database holds a migration this code does not know (docs/operations.md, "Upgrading").

A loader from before migration 006, run against a database upgraded past it, dropped change
sets without numbering their net changes again, and since= pages were wrong until a newer
load ran; a forgotten cron host or a rolling deploy makes such a run likely."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from registry.database.migrations import SCHEMA_VERSION
from tests.cli import run_cli

from .graphs import BASE, document, edited, load

NEWER = SCHEMA_VERSION + 1
ROLE = "registry_newer_reader"


def database_facts(conninfo: str) -> dict[str, Any]:
    """What a refused command must leave as it was: migrations, generations, the graph,
    change sets and roles."""
    with psycopg.connect(conninfo) as conn:
        return {
            name: conn.execute(query).fetchall()
            for name, query in {
                "migrations": "SELECT version, name FROM registry_meta.schema_migrations"
                " ORDER BY version",
                "generations": "SELECT generation, committed_at, dropped_at, changes_dropped_at"
                " FROM registry_meta.generations ORDER BY generation",
                "graph": "SELECT generation, doc FROM graph.graph_info, graph.origin_docs"
                " ORDER BY pos",
                "change_log": "SELECT generation, id FROM registry_meta.change_log"
                " ORDER BY generation, id",
                "net_changes": "SELECT generation, id, lo, until, pos"
                " FROM registry_meta.net_changes ORDER BY generation, id, until",
                "roles": f"SELECT rolname FROM pg_roles WHERE rolname = '{ROLE}'",
                "readers": "SELECT role_name FROM registry_meta.reader_roles",
            }.items()
        }


@pytest.fixture
def newer_database(database_factory: Callable[[], str]) -> str:
    """A loaded database that a newer code version has upgraded past this one."""
    conninfo = database_factory()
    load(conninfo, document(BASE))
    load(conninfo, edited(4, name="Alpha Two"))
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO registry_meta.schema_migrations (version, name) VALUES (%s, %s)",
            (NEWER, f"{NEWER:03d}_from_the_future"),
        )
    return conninfo


@pytest.mark.parametrize(
    "command",
    [
        ["load", "{document}"],
        ["load", "--dry-run", "{document}"],
        ["db", "upgrade"],
        ["db", "create-reader", ROLE],
    ],
    ids=["load", "dry-run", "db-upgrade", "create-reader"],
)
def test_older_code_refuses_a_newer_database_and_changes_nothing(
    newer_database: str, tmp_path: Path, command: list[str]
):
    path = tmp_path / "graph.jsonl"
    path.write_bytes(edited(4, name="Alpha Three"))
    before = database_facts(newer_database)

    done = run_cli(
        [part.format(document=path) for part in command], env={"DATABASE_URL": newer_database}
    )

    assert done.returncode == 1, done.output
    message = done.stderr.strip()
    assert message.startswith(f"registry {' '.join(command[: 2 if command[0] == 'db' else 1])}:")
    assert f"schema is at version {NEWER}" in message
    assert f"this code's version {SCHEMA_VERSION}" in message
    assert "Nothing changed" in message
    assert "upgrade the code" in message
    assert done.stdout == ""
    assert database_facts(newer_database) == before


def test_the_same_code_loads_once_the_newer_migration_is_gone(newer_database: str, tmp_path: Path):
    path = tmp_path / "graph.jsonl"
    path.write_bytes(edited(4, name="Alpha Three"))
    with psycopg.connect(newer_database, autocommit=True) as conn:
        conn.execute("DELETE FROM registry_meta.schema_migrations WHERE version = %s", (NEWER,))

    done = run_cli(["load", str(path)], env={"DATABASE_URL": newer_database})

    assert done.returncode == 0, done.output
    assert "generation 3 committed" in done.stdout
