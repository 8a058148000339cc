"""Rows read by column name: a statement's columns are named in its .sql file, and Python
reads them by those names, never by their place in the SELECT list. A statement of one
column is read as values (scalar, scalars), which nothing could mistake for another column."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row, tuple_row

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


def _one_column(cursor: psycopg.Cursor[Any]) -> None:
    """Fail unless the statement the cursor ran returns exactly one column."""
    columns = cursor.description or []
    assert len(columns) == 1, f"a value read from {len(columns)} columns: read the row by name"


def scalar(conn: psycopg.Connection, statement: Statement, params: Any = None) -> Any:
    """The one column of the first row statement returns; None when it returns no row."""
    cursor = conn.cursor(row_factory=tuple_row).execute(statement, params)
    _one_column(cursor)
    row = cursor.fetchone()
    return None if row is None else row[0]


def scalars(conn: psycopg.Connection, statement: Statement, params: Any = None) -> list[Any]:
    """The one column of every row statement returns, in order."""
    cursor = conn.cursor(row_factory=tuple_row).execute(statement, params)
    _one_column(cursor)
    return [row[0] for row in cursor.fetchall()]
