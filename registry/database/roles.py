"""The read-only database role the README recommends for the service's DATABASE_URL."""

from __future__ import annotations

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from registry.database.queries import QUERIES

# What makes an existing role unfit to be the read-only one, by column of get_role_standing.
_DISQUALIFIERS = (
    ("superuser", "it is a superuser"),
    ("create_role", "it can create roles (CREATEROLE)"),
    ("create_db", "it can create databases (CREATEDB)"),
    ("replication", "it is a replication role (REPLICATION)"),
    ("bypass_rls", "it bypasses row-level security (BYPASSRLS)"),
    ("acts_as_loader", "it is, or is a member of, the role running this command (the loader's)"),
    ("owner_of", "it owns, or is a member of a role that owns, objects of the registry's schemas"),
)


class ReaderRoleRefused(Exception):
    """The named role exists and could do more than read: it must not be made the reader."""


def reader_role_problems(conn: psycopg.Connection, role: str) -> list[str]:
    """Why an existing role cannot be the read-only one; [] when it can (or does not exist)."""
    with conn.cursor(row_factory=dict_row) as cursor:
        standing = cursor.execute(QUERIES["meta/get_role_standing"], {"role": role}).fetchone()
    if standing is None:
        return []
    return [why for column, why in _DISQUALIFIERS if standing[column]]


def password_verifier(conn: psycopg.Connection, role: str, password: str) -> str:
    """The SCRAM-SHA-256 verifier of password, computed here: the password never reaches the
    server (nor its statement log) in clear."""
    verifier = conn.pgconn.encrypt_password(password.encode(), role.encode(), b"scram-sha-256")
    return verifier.decode("ascii")


def create_reader_role(conn: psycopg.Connection, role: str, password: str | None) -> None:
    """Create (or update) a login role with SELECT on the graph and nothing else.

    An existing role that could do more than read (superuser, CREATEROLE, CREATEDB, an owner
    of the registry's objects, the loader itself) is refused with ReaderRoleRefused and left
    as it was. The role is recorded in registry_meta.reader_roles so that every later load
    grants it SELECT on the graph it builds.
    """
    name = sql.Identifier(role)
    with conn.transaction():
        problems = reader_role_problems(conn, role)
        if problems:
            raise ReaderRoleRefused(
                f"role {role} cannot be the read-only role: " + "; ".join(problems)
            )
        exists = conn.execute(QUERIES["meta/role_exists"], {"role": role}).fetchone()
        if not (exists and exists[0]):
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(name))
        if password is not None:
            verifier = password_verifier(conn, role, password)
            conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(name, sql.Literal(verifier)))
        conn.execute(sql.SQL("ALTER ROLE {} SET default_transaction_read_only = on").format(name))
        public = conn.execute(QUERIES["meta/public_schema_exists"]).fetchone()
        if public and public[0]:
            # PostgreSQL 14 and older grant CREATE on public to PUBLIC, so revoking it from
            # the role alone would change nothing there; 15 no longer grants it.
            conn.execute(sql.SQL("REVOKE CREATE ON SCHEMA public FROM PUBLIC, {}").format(name))
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
