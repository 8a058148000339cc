"""The digests of graphs loaded before digests existed (migration 010), computed by the
upgrade from their stored records with the one definition (registry.digest), so that every
kept generation answers with its `Registry-Digest` at once."""

from __future__ import annotations

import psycopg
from psycopg import sql

from registry.database.queries import QUERIES
from registry.database.rows import all_rows, one_row
from registry.digest import MODULUS, as_hex, text_hash

# Records fetched at a time from a kept graph: memory stays flat however large it is.
_BATCH = 5000


def _in_schema(name: str, schema: str) -> sql.Composed:
    """The SQL file name with {schema} naming schema."""
    return sql.SQL(QUERIES[name]).format(schema=sql.Identifier(schema))


def fill_digests(conn: psycopg.Connection) -> list[int]:
    """In the caller's transaction, compute and record the digest of every kept graph that
    has none; the generations filled in, oldest first."""
    filled = []
    for listed in all_rows(conn, QUERIES["meta/list_graph_schemas"]):
        schema = listed["schema"]
        row = one_row(conn, _in_schema("meta/get_graph_digest", schema))
        if row["digest"] is not None or row["generation"] is None:
            continue
        digest = graph_digest(conn, schema)
        params = {"digest": digest, "generation": row["generation"]}
        conn.execute(_in_schema("meta/record_graph_digest", schema), params)
        filled.append(int(row["generation"]))
    return sorted(filled)


def graph_digest(conn: psycopg.Connection, schema: str) -> str:
    """The digest of the records stored in schema, read through a server-side cursor."""
    total = 0
    with conn.cursor(name="registry_digest") as cursor:
        cursor.itersize = _BATCH
        cursor.execute(_in_schema("meta/read_graph_records", schema))
        for (doc,) in cursor:
            total = (total + text_hash(doc)) % MODULUS
    return as_hex(total)
