"""Migration 003's step: an empty change set for each graph kept from before change sets.

The change set is made as a load makes one (sql/load/number_changes.sql indexes it, counts
it and defines its change_lines view), so a kept graph has the very tables and view a load's
graph has, and no migration defines a view of its own.
"""

from __future__ import annotations

import psycopg
from psycopg import sql

from registry.database.queries import QUERIES
from registry.database.rows import all_rows, one_row, scalars


def add_empty_change_sets(conn: psycopg.Connection) -> list[str]:
    """In the caller's transaction, give every kept graph without a change set an empty one,
    readable by the registered read-only roles; the schemas completed."""
    schemas = [row["schema"] for row in all_rows(conn, QUERIES["meta/list_graphs_without_changes"])]
    if not schemas:
        return []
    before = one_row(conn, QUERIES["meta/get_search_path"])["search_path"]
    readers = scalars(conn, QUERIES["meta/list_reader_role_names"])
    for schema in schemas:
        conn.execute(QUERIES["meta/set_search_path"], {"search_path": schema})
        conn.execute(QUERIES["meta/create_empty_changes"])
        conn.execute(QUERIES["load/number_changes"])
        for role in readers:
            conn.execute(
                sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(
                    sql.Identifier(schema), sql.Identifier(role)
                )
            )
    conn.execute(QUERIES["meta/set_search_path"], {"search_path": before})
    return schemas
