"""Schema migrations: the numbered files of sql/migrations, applied in order, recorded once."""

from __future__ import annotations

import re

import psycopg

from registry.database.queries import QUERIES

_NAME = re.compile(r"(\d{3})_(\w+)\Z")


def migration_files() -> list[tuple[int, str, str]]:
    """(version, name, sql) of every migration file, in version order."""
    found = []
    for name, text in QUERIES.folder("migrations"):
        match = _NAME.match(name)
        if match is None:
            raise RuntimeError(f"migration file name {name}.sql is not NNN_name.sql")
        found.append((int(match.group(1)), name, text))
    versions = [version for version, _, _ in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError("two migration files share a version number")
    return found


SCHEMA_VERSION = migration_files()[-1][0]


def apply_migrations(conn: psycopg.Connection) -> list[str]:
    """Apply the migrations this database lacks, in one transaction; return their names."""
    applied_now = []
    with conn.transaction():
        conn.execute(QUERIES["meta/lock_loads"])
        conn.execute(QUERIES["meta/create_migrations_table"])
        applied = {row[0] for row in conn.execute(QUERIES["meta/list_applied_migrations"])}
        for version, name, text in migration_files():
            if version in applied:
                continue
            conn.execute(text)
            conn.execute(QUERIES["meta/record_migration"], {"version": version, "name": name})
            applied_now.append(name)
    return applied_now


def pending_migrations(conn: psycopg.Connection) -> list[str]:
    """The names of the migrations this database lacks, in order, read without changing
    anything (no version table made, no lock taken); every one of them for a database never
    set up."""
    row = conn.execute(QUERIES["meta/migrations_table_exists"]).fetchone()
    applied: set[int] = set()
    if row and row[0]:
        applied = {r[0] for r in conn.execute(QUERIES["meta/list_applied_migrations"])}
    return [name for version, name, _ in migration_files() if version not in applied]
