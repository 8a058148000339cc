"""The read-only database role the README recommends for the service's DATABASE_URL."""

from __future__ import annotations

import psycopg
from psycopg import sql

from registry.database.queries import QUERIES


def create_reader_role(conn: psycopg.Connection, role: str, password: str | None) -> None:
    """Create (or update) a login role with SELECT on the graph and nothing else.

    The role is recorded in registry_meta.reader_roles so that every later load grants it
    SELECT on the graph it builds.
    """
    name = sql.Identifier(role)
    with conn.transaction():
        exists = conn.execute(QUERIES["meta/role_exists"], {"role": role}).fetchone()
        if not (exists and exists[0]):
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(name))
        if password is not None:
            conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(name, sql.Literal(password)))
        conn.execute(sql.SQL("ALTER ROLE {} SET default_transaction_read_only = on").format(name))
        conn.execute(sql.SQL("GRANT USAGE ON SCHEMA graph, registry_meta TO {}").format(name))
        conn.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA graph TO {}").format(name))
        conn.execute(sql.SQL("GRANT SELECT ON registry_meta.schema_migrations TO {}").format(name))
        conn.execute(sql.SQL("GRANT SELECT ON registry_meta.generations TO {}").format(name))
        for (schema,) in conn.execute(QUERIES["meta/list_generation_schemas"]).fetchall():
            conn.execute(
                sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sql.Identifier(schema), name)
            )
            conn.execute(
                sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(
                    sql.Identifier(schema), name
                )
            )
        conn.execute(QUERIES["meta/record_reader_role"], {"role": role})
