"""`registry load --dry-run` on a database that needs an upgrade: refused, nothing changed
(docs/api.md, Changes between generations), migrations included. A load proper still applies
them."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from registry.database.migrations import migration_files
from registry.database.queries import QUERIES

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.db


def registry_load(conninfo: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `registry load ARGS` as an operator would."""
    return subprocess.run(
        [sys.executable, "-m", "registry.cli", "load", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": conninfo},
        timeout=120,
        check=False,
    )


def migrate_to(conninfo: str, last: int) -> None:
    """Apply the migrations up to version last only, as the migration runner does them
    (registry.database.migrations: the version table, then each file and its record)."""
    with psycopg.connect(conninfo) as conn, conn.transaction():
        conn.execute(QUERIES["meta/create_migrations_table"])
        for version, name, text in migration_files():
            if version <= last:
                conn.execute(text)
                conn.execute(QUERIES["meta/record_migration"], {"version": version, "name": name})


def database_state(conninfo: str) -> list[Any]:
    """Everything a dry run could have changed: the schemas and tables of the database, the
    applied migrations, and the generation sequence's use."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        relations = conn.execute(
            "SELECT n.nspname, c.relname, c.relkind FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')"
            " ORDER BY 1, 2"
        ).fetchall()
        schemas = conn.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%%'"
            " AND nspname <> 'information_schema' ORDER BY 1"
        ).fetchall()
        migrations: list[Any] = []
        if conn.execute("SELECT to_regclass('registry_meta.schema_migrations')").fetchone() != (
            None,
        ):
            migrations = conn.execute(
                "SELECT version, name, applied_at FROM registry_meta.schema_migrations"
                " ORDER BY version"
            ).fetchall()
    return [relations, schemas, migrations]


@pytest.mark.parametrize("applied", [0, 1, 2], ids=["never-set-up", "at-001", "at-002"])
def test_a_dry_run_on_a_database_that_needs_an_upgrade_is_refused(
    database_factory: Callable[[], str], example_document: bytes, tmp_path: Path, applied: int
) -> None:
    """Exit 1, one line that says an upgrade is needed and names what is missing, and the
    database exactly as it was; then a load proper upgrades and loads."""
    conninfo = database_factory()
    if applied:
        migrate_to(conninfo, applied)
    path = tmp_path / "graph.jsonl"
    path.write_bytes(example_document)
    before = database_state(conninfo)
    done = registry_load(conninfo, "--dry-run", str(path))
    assert done.returncode == 1, done.stdout
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("registry load: refused: a dry run changes nothing"), lines[0]
    assert "needs an upgrade" in lines[0] and "registry db upgrade" in lines[0]
    assert migration_files()[-1][1] in lines[0]
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
    assert database_state(conninfo) == before
    loaded = registry_load(conninfo, str(path))
    assert loaded.returncode == 0, loaded.stderr
    again = registry_load(conninfo, "--dry-run", str(path))
    assert again.returncode == 0, again.stderr
    assert "dry run: nothing was changed" in again.stdout
