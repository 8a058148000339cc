"""Rows read by column name: a statement's columns are named in its .sql file, and Python
reads them by those names, never by their place in the SELECT list."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

Row = dict[str, Any]
# A statement: a .sql file's text, or one composed with identifiers (psycopg.sql).
Statement = str | sql.SQL | sql.Composed


def one_row(conn: psycopg.Connection, statement: Statement, params: Any = None) -> Row:
    """The one row statement returns (a read query's graph_info row), by column name."""
    row = conn.cursor(row_factory=dict_row).execute(statement, params).fetchone()
    assert row is not None, "the statement returns exactly one row"
    return row


def first_row(conn: psycopg.Connection, statement: Statement, params: Any = None) -> Row | None:
    """The first row statement returns by column name, or None when it returns none."""
    return conn.cursor(row_factory=dict_row).execute(statement, params).fetchone()


def all_rows(conn: psycopg.Connection, statement: Statement, params: Any = None) -> list[Row]:
    """Every row statement returns, by column name."""
    return conn.cursor(row_factory=dict_row).execute(statement, params).fetchall()
