"""The read-only database role the README recommends for the service's DATABASE_URL."""

from __future__ import annotations

import psycopg
from psycopg import sql

from registry.database.queries import QUERIES
from registry.database.rows import all_rows, first_row, scalar, scalars

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


# Predefined roles that only read (statistics, settings, data): membership is no reason to
# refuse. Every other predefined role, those of newer servers included, is a power beyond
# reading (running programs or reading files on the server, signalling backends, writing
# every table, checkpoints, subscriptions, maintenance, owning the database).
READING_PREDEFINED_ROLES = (
    "pg_monitor",
    "pg_read_all_settings",
    "pg_read_all_stats",
    "pg_stat_scan_tables",
    "pg_read_all_data",
)


class ReaderRoleRefused(Exception):
    """The named role exists and could do more than read: it must not be made the reader."""


def reader_role_problems(conn: psycopg.Connection, role: str) -> list[str]:
    """Why an existing role cannot be the read-only one; [] when it can (or does not exist)."""
    standing = first_row(conn, QUERIES["meta/get_role_standing"], {"role": role})
    if standing is None:
        return []
    return [why for column, why in _DISQUALIFIERS if standing[column]]


def reader_role_powers(conn: psycopg.Connection, role: str) -> list[str]:
    """What an existing role could do in this database or on its server beyond reading: each
    predefined role it belongs to (directly or not), each schema it may create in, creating
    schemas, making temporary tables. [] when nothing (or when it does not exist)."""
    powers = first_row(
        conn,
        QUERIES["meta/get_role_powers"],
        {"role": role, "reading": list(READING_PREDEFINED_ROLES)},
    )
    if powers is None:
        return []
    problems = [f"it is a member of {name}" for name in powers["predefined_roles"]]
    problems += [f"it has CREATE on schema {name}" for name in powers["create_in_schemas"]]
    if powers["create_schemas"]:
        problems.append("it can create schemas in this database (CREATE on the database)")
    if powers["temporary_tables"]:
        problems.append("it can make temporary tables (TEMPORARY on the database)")
    return problems + reader_role_grants(conn, role)


# How many of the privileges found a refusal names; then how many more there are.
NAMED_GRANTS = 10


def reader_role_grants(conn: psycopg.Connection, role: str) -> list[str]:
    """Each privilege beyond reading the role holds on an object of this database, directly,
    through a role it belongs to or through PUBLIC, as `it has INSERT on table x.y (through
    z)`: tables, columns, sequences, SECURITY DEFINER functions, large objects, foreign-data
    wrappers and servers, default privileges, and (PostgreSQL 15 and later) settings."""
    rows = all_rows(conn, QUERIES["meta/get_role_grants"], {"role": role})
    if conn.info.server_version >= 150000:
        rows += all_rows(conn, QUERIES["meta/get_role_parameter_grants"], {"role": role})
    found = [
        f"it has {row['privilege']} on {row['kind']} {row['name']}"
        + ("" if row["grantee"] == role else f" (through {row['grantee']})")
        for row in rows
    ]
    if len(found) > NAMED_GRANTS:
        found = [*found[:NAMED_GRANTS], f"and {len(found) - NAMED_GRANTS} more privileges"]
    return found


def password_verifier(conn: psycopg.Connection, role: str, password: str) -> str:
    """The SCRAM-SHA-256 verifier of password, computed here: the password never reaches the
    server (nor its statement log) in clear."""
    verifier = conn.pgconn.encrypt_password(password.encode(), role.encode(), b"scram-sha-256")
    return verifier.decode("ascii")


def create_reader_role(conn: psycopg.Connection, role: str, password: str | None) -> None:
    """Create (or update) a login role with SELECT on the graph and nothing else.

    An existing role that could do more than read (superuser, CREATEROLE, CREATEDB, an owner
    of the registry's objects, the loader itself, a member of a predefined role beyond
    reading, one that may create in a schema, create schemas or make temporary tables, one
    with any privilege beyond SELECT on an object of the database: reader_role_grants) is
    refused with ReaderRoleRefused and left as it was: the whole command is one transaction.
    PUBLIC's CREATE on schema public and TEMPORARY on the database are revoked first, so the
    role is judged, and a new one made, by what it holds itself. The role is recorded in
    registry_meta.reader_roles so that every later load grants it SELECT on the graph it
    builds.
    """
    name = sql.Identifier(role)
    with conn.transaction():
        problems = reader_role_problems(conn, role)
        if problems:
            raise ReaderRoleRefused(
                f"role {role} cannot be the read-only role: " + "; ".join(problems)
            )
        if scalar(conn, QUERIES["meta/public_schema_exists"]):
            # PostgreSQL 14 and older grant CREATE on public to PUBLIC; 15 no longer does.
            conn.execute(sql.SQL("REVOKE CREATE ON SCHEMA public FROM PUBLIC"))
        # Every server grants TEMPORARY on a new database to PUBLIC: a temporary table is
        # somewhere to write (COPY ... FROM PROGRAM needs one). The registry never uses them.
        conn.execute(
            sql.SQL("REVOKE TEMPORARY ON DATABASE {} FROM PUBLIC").format(
                sql.Identifier(conn.info.dbname)
            )
        )
        if not scalar(conn, QUERIES["meta/role_exists"], {"role": role}):
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(name))
        # What the role holds itself, or through roles it belongs to: refused, not taken away
        # (an operator granted it on purpose, so the role is not the read-only one). A new
        # role holds nothing here unless this command could not revoke PUBLIC's rights.
        powers = reader_role_powers(conn, role)
        if powers:
            raise ReaderRoleRefused(
                f"role {role} cannot be the read-only role: " + "; ".join(powers)
            )
        if password is not None:
            verifier = password_verifier(conn, role, password)
            conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(name, sql.Literal(verifier)))
        conn.execute(sql.SQL("ALTER ROLE {} SET default_transaction_read_only = on").format(name))
        conn.execute(sql.SQL("GRANT USAGE ON SCHEMA graph, registry_meta TO {}").format(name))
        conn.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA graph TO {}").format(name))
        conn.execute(sql.SQL("GRANT SELECT ON registry_meta.schema_migrations TO {}").format(name))
        conn.execute(sql.SQL("GRANT SELECT ON registry_meta.generations TO {}").format(name))
        # The kept change sets and the net changes built from them (docs/api.md, Changes since any
        # generation).
        conn.execute(
            sql.SQL(
                "GRANT SELECT ON registry_meta.change_log, registry_meta.net_changes, "
                "registry_meta.net_counts, registry_meta.net_buckets TO {}"
            ).format(name)
        )
        for schema in scalars(conn, QUERIES["meta/list_generation_schemas"]):
            conn.execute(
                sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sql.Identifier(schema), name)
            )
            conn.execute(
                sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(
                    sql.Identifier(schema), name
                )
            )
        conn.execute(QUERIES["meta/record_reader_role"], {"role": role})
