"""Schema migrations: the numbered files of sql/migrations, applied in order, recorded once."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import psycopg

from registry.database.digests import fill_digests
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
# What a migration needs done in Python, after its SQL and in its transaction: the work of
# a definition that lives in Python (the digest, registry.digest), never SQL of its own.
AFTER_MIGRATION: dict[int, Callable[[psycopg.Connection], Any]] = {10: fill_digests}


class SchemaNewer(Exception):
    """The database holds migrations this code does not know: newer code upgraded it.

    Code older than its database would write what the newer schema no longer expects (a
    loader from before migration 006 drops change sets without numbering their net changes
    again), so every command that sets the database up refuses before it changes anything.
    """

    def __init__(self, database_version: int):
        super().__init__(
            f"refused: the database's schema is at version {database_version}, newer than"
            f" this code's version {SCHEMA_VERSION}. Nothing changed; upgrade the code (the"
            f" `registry` command and the service) to a version that knows schema"
            f" {database_version}, then run it again"
        )
        self.database_version = database_version


def _refuse_newer(applied: set[int]) -> None:
    """Raise SchemaNewer when applied holds a migration that is not one of this code's."""
    unknown = applied - {version for version, _, _ in migration_files()}
    if unknown:
        raise SchemaNewer(max(applied))


def apply_migrations(conn: psycopg.Connection) -> list[str]:
    """Apply the migrations this database lacks, in one transaction; return their names.

    Raises SchemaNewer, with nothing changed, when the database is newer than this code."""
    applied_now = []
    with conn.transaction():
        conn.execute(QUERIES["meta/lock_loads"])
        conn.execute(QUERIES["meta/create_migrations_table"])
        applied = {row[0] for row in conn.execute(QUERIES["meta/list_applied_migrations"])}
        _refuse_newer(applied)
        for version, name, text in migration_files():
            if version in applied:
                continue
            conn.execute(text)
            if version in AFTER_MIGRATION:
                AFTER_MIGRATION[version](conn)
            conn.execute(QUERIES["meta/record_migration"], {"version": version, "name": name})
            applied_now.append(name)
    return applied_now


def pending_migrations(conn: psycopg.Connection) -> list[str]:
    """The names of the migrations this database lacks, in order, read without changing
    anything (no version table made, no lock taken); every one of them for a database never
    set up. Raises SchemaNewer when the database is newer than this code."""
    row = conn.execute(QUERIES["meta/migrations_table_exists"]).fetchone()
    applied: set[int] = set()
    if row and row[0]:
        applied = {r[0] for r in conn.execute(QUERIES["meta/list_applied_migrations"])}
    _refuse_newer(applied)
    return [name for version, name, _ in migration_files() if version not in applied]
