"""The repeatable definitions: every function of registry_meta, one file each in
sql/definitions, as the database runs it today.

Migrations (sql/migrations) change tables and data only; a function is defined by its file
here, `CREATE OR REPLACE FUNCTION registry_meta.<file name>`, and nowhere else. Like
Flyway's repeatable migrations, the definitions are applied after the migrations, in the
same transaction: by every upgrade and every load's set-up (registry.database.migrations.
apply_migrations), always, not only when their text changed. Replacing a function with its
own text changes nothing a reader sees and costs a load a few milliseconds, and the database
then runs exactly the files of the code that last upgraded or loaded it, with no checksum to
keep (a table for one would be a schema change of its own), and no way for a function
altered by hand to survive the next load.

Rules for a definition:
- a file defines one function, named as the file, with CREATE OR REPLACE;
- within a schema version a definition is only added or replaced, never dropped or given
  another signature: code of the same schema version may still be serving and calls it by
  name (dropping one, or changing its arguments or result, takes a migration, which raises the
  schema version);
- no views: replacing a view takes an exclusive lock on it, which would wait for every export
  reading it (a day for a slow client) and stall the load behind it;
- a definition that calls another (`registry_meta.<name>(` in its text) is applied after it,
  so that PostgreSQL, which checks a SQL function's body as it is created, finds it.
"""

from __future__ import annotations

import re

import psycopg

from registry.database.queries import QUERIES

_CALL = re.compile(r"registry_meta\.(\w+)\s*\(")


def definition_files() -> list[tuple[str, str]]:
    """(name, sql) of every definition, each after the definitions it calls."""
    texts = dict(QUERIES.folder("definitions"))
    ordered: list[tuple[str, str]] = []

    def place(name: str, calling: tuple[str, ...]) -> None:
        """Put name after the definitions it calls, unless it is placed already."""
        if name in calling:
            raise RuntimeError(f"definitions call each other in a cycle: {(*calling, name)}")
        if any(placed == name for placed, _ in ordered):
            return
        for called in _CALL.findall(texts[name]):
            if called in texts and called != name:
                place(called, (*calling, name))
        ordered.append((name, texts[name]))

    for name in texts:
        place(name, ())
    return ordered


def apply_definitions(conn: psycopg.Connection) -> list[str]:
    """Create or replace every definition, in the caller's transaction; their names."""
    applied = []
    for name, text in definition_files():
        conn.execute(text)
        applied.append(name)
    return applied
