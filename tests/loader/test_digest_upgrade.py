"""Upgrading a database from before digests (migration 010): every graph still kept gets its
digest computed from its stored records, the one the load would have computed as it rendered
them; a generation whose graph is gone gets none (docs/api.md, "Digests")."""

from __future__ import annotations

from collections.abc import Callable

import psycopg

from registry.database.migrations import SCHEMA_VERSION, apply_migrations
from registry.database.repository import get_schema_state
from registry.digest import EMPTY

from .test_change_log import as_of_version, chain_documents, load


def digests(conn: psycopg.Connection) -> dict[int, str | None]:
    """Each generation's digest as registry_meta.generations keeps it."""
    rows = conn.execute("SELECT generation, digest FROM registry_meta.generations ORDER BY 1")
    return {int(generation): value for generation, value in rows}


def graph_digests(conn: psycopg.Connection) -> dict[int, str | None]:
    """Each kept graph's digest as its graph_info keeps it."""
    found = {}
    for (schema,) in conn.execute(
        "SELECT nspname FROM pg_namespace WHERE nspname ~ '^graph(_g[0-9]+)?$'"
    ).fetchall():
        row = conn.execute(f"SELECT generation, digest FROM {schema}.graph_info").fetchone()
        assert row is not None
        found[int(row[0])] = row[1]
    return found


def as_before_migration_10(conn: psycopg.Connection) -> None:
    """Put the database back as the code before migration 010 left it: no digest anywhere."""
    conn.execute("ALTER TABLE registry_meta.generations DROP COLUMN digest")
    for (schema,) in conn.execute(
        "SELECT nspname FROM pg_namespace WHERE nspname ~ '^graph(_g[0-9]+)?$'"
    ).fetchall():
        conn.execute(f"ALTER TABLE {schema}.graph_info DROP COLUMN digest")
    as_of_version(conn, 9)


def test_an_upgrade_computes_the_digest_of_every_kept_graph(
    database_factory: Callable[[], str],
) -> None:
    conninfo = database_factory()
    for payload in chain_documents(3):
        load(conninfo, payload, keep=2)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        loaded = digests(conn)
        assert set(loaded) == {1, 2, 3} and None not in loaded.values()
        assert len(set(loaded.values())) == 3 and EMPTY not in loaded.values()
        as_before_migration_10(conn)

        assert apply_migrations(conn) == ["010_digests"]

        assert digests(conn) == {1: None, 2: loaded[2], 3: loaded[3]}
        assert graph_digests(conn) == {2: loaded[2], 3: loaded[3]}
        assert get_schema_state(conn)["graph_version"] == SCHEMA_VERSION
    # The next load records its own as before, and keeps the upgraded ones.
    load(conninfo, chain_documents(4)[3], keep=2)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        after = digests(conn)
        assert (after[2], after[3]) == (loaded[2], loaded[3])
        assert after[4] is not None
