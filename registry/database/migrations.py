"""Schema migrations: the numbered files of sql/migrations, applied in order, recorded once.

A migration changes tables and data only; registry_meta's functions are the repeatable
definitions of sql/definitions (registry.database.definitions). One upgrade is one
transaction, under the load lock, in three steps:

1. each migration the database lacks, in order: its SQL file, then its Python step
   (AFTER_MIGRATION: work whose definition lives in Python), which see the tables as that
   migration leaves them;
2. every definition, created or replaced (always, even when no migration was pending);
3. the step of each of those migrations that needs a definition,
   sql/migrations/after_definitions/<the migration's name>.sql, in migration order.

So a migration's data step never calls a function that its own version's database may not
have, or has in an older form: migration 004 builds the net changes of the kept graphs, and
005 and 006 fix and number the net changes an older loader built, each with the definitions
of this code, after every migration's tables are in place. Such a step is written against
the newest tables, as the definitions are, and is kept so when a later migration changes
what it reads.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import psycopg

from registry.database.definitions import apply_definitions
from registry.database.digests import fill_digests
from registry.database.empty_change_sets import add_empty_change_sets
from registry.database.queries import QUERIES
from registry.database.rows import scalar, scalars

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
# a definition that lives in Python (the digest, registry.digest; a graph's change set, as a
# load indexes it), never SQL of its own.
AFTER_MIGRATION: dict[int, Callable[[psycopg.Connection], Any]] = {
    3: add_empty_change_sets,
    10: fill_digests,
}
# The folder of the migrations' steps that run after the definitions (step 3 above).
AFTER_DEFINITIONS = "migrations/after_definitions"


def after_definitions(name: str) -> str | None:
    """The SQL of migration name's step that runs after the definitions, if it has one."""
    return dict(QUERIES.folder(AFTER_DEFINITIONS)).get(name)


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
    """Apply the migrations this database lacks and every definition, in one transaction
    (the three steps above); return the migrations' names.

    Raises SchemaNewer, with nothing changed, when the database is newer than this code."""
    with conn.transaction():
        conn.execute(QUERIES["meta/lock_loads"])
        conn.execute(QUERIES["meta/create_migrations_table"])
        applied = set(scalars(conn, QUERIES["meta/list_applied_migrations"]))
        _refuse_newer(applied)
        pending = [(v, name, text) for v, name, text in migration_files() if v not in applied]
        for version, _, text in pending:
            conn.execute(text)
            if version in AFTER_MIGRATION:
                AFTER_MIGRATION[version](conn)
        apply_definitions(conn)
        for version, name, _ in pending:
            step = after_definitions(name)
            if step is not None:
                conn.execute(step)
            conn.execute(QUERIES["meta/record_migration"], {"version": version, "name": name})
    return [name for _, name, _ in pending]


def pending_migrations(conn: psycopg.Connection) -> list[str]:
    """The names of the migrations this database lacks, in order, read without changing
    anything (no version table made, no lock taken); every one of them for a database never
    set up. Raises SchemaNewer when the database is newer than this code."""
    applied: set[int] = set()
    if scalar(conn, QUERIES["meta/migrations_table_exists"]):
        applied = set(scalars(conn, QUERIES["meta/list_applied_migrations"]))
    _refuse_newer(applied)
    return [name for version, name, _ in migration_files() if version not in applied]
