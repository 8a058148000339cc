"""Change sets across an upgrade: a database loaded before migration 003 (no change sets, no
origin hashes) answers /registry/changes at once, and its next load's change set is exact."""

from __future__ import annotations

from collections.abc import Callable

import psycopg

from registry.database.changes import list_changes
from registry.database.migrations import SCHEMA_VERSION, apply_migrations
from registry.database.repository import get_schema_state

from .graphs import BASE, LINE, document, drop_change_log, edited, load

OLD_ORIGIN = "Alpha"


def as_before_migration_3(conn: psycopg.Connection) -> None:
    """Put the database back the way the code before migration 003 left it."""
    conn.execute(
        "DROP VIEW graph.change_lines; DROP TABLE graph.changes, graph.change_blocks,"
        " graph.change_counts, graph.origin_doc_hashes"
    )
    conn.execute(
        "ALTER TABLE registry_meta.generations DROP COLUMN previous, DROP COLUMN added,"
        " DROP COLUMN removed, DROP COLUMN changed"
    )
    drop_change_log(conn)
    conn.execute("UPDATE graph.graph_info SET schema_version = 2")
    conn.execute("DELETE FROM registry_meta.schema_migrations WHERE version >= 3")


def test_an_upgraded_generation_has_an_empty_change_set_and_the_next_load_an_exact_one(
    database_factory: Callable[[], str],
) -> None:
    conninfo = database_factory()
    load(conninfo, document(BASE))
    with psycopg.connect(conninfo, autocommit=True) as conn:
        as_before_migration_3(conn)
        assert "003_changes" in apply_migrations(conn)
        assert get_schema_state(conn)["graph_version"] == SCHEMA_VERSION
        stamp, page = list_changes(conn, {}, 50, 0)
        assert (stamp.generation, page.total, page.records, page.previous) == (1, 0, "[]", None)
        assert page.counts == {"added": None, "removed": None, "changed": None}
    renamed = edited(LINE["origin"], name="Alpha renamed")
    result = load(conninfo, renamed)
    assert result.changes is not None
    assert result.changes.counts == {"added": 0, "removed": 0, "changed": 1}
    with psycopg.connect(conninfo, autocommit=True) as conn:
        stamp, page = list_changes(conn, {}, 50, 0)
    assert (stamp.generation, page.total, page.previous) == (2, 1, 1)
    assert '"blocks":["origin"]' in page.records and f'"name":"{OLD_ORIGIN}"' in page.records
