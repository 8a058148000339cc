"""Setting a database up: its migrations, and an empty graph where none was ever loaded.

Apart from the loader proper (registry.loader.loading), whose imports (the document parser,
the renderer, the schemas and their compiled patterns) a command that only sets the database
up or reads it never uses: `registry db create-reader`, `registry db upgrade` and `registry
db is-empty` start on these alone, and the loader is imported only for a database that never
had a load.
"""

from __future__ import annotations

import io

import psycopg

from registry.database.migrations import apply_migrations
from registry.database.queries import QUERIES
from registry.database.rows import scalar


def ensure_graph(conn: psycopg.Connection) -> bool:
    """Apply migrations and, in a database that never had a load, publish an empty graph."""
    apply_migrations(conn)
    if scalar(conn, QUERIES["meta/graph_exists"]):
        return False
    from registry.loader.loading import LoadOptions, load_document

    load_document(conn, io.BytesIO(b""), options=LoadOptions(allow_empty=True))
    return True
