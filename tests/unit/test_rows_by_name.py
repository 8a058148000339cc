"""registry/ reads rows by column name: every fetch goes through registry/database/rows.py,
whose helpers return rows as dicts (one_row, first_row, all_rows) or the one column of a
one-column statement (scalar, scalars), so no Python ties itself to the column order of a
SELECT in another file (`row[5]`, `rows[0][10]`, unpacking a row of several columns).

The exports' batches and the digest's records are the exceptions, each a one-column
statement read through a server-side cursor and unpacked as one column, which fails on a
second. registry/mirror is a client of the service with stores of its own (SQLite and
PostgreSQL), which the import contracts keep from registry.database: not checked here."""

from __future__ import annotations

import ast
from pathlib import Path

import psycopg
import pytest
from psycopg.rows import dict_row

from registry.database.rows import scalar, scalars

ROOT = Path(__file__).resolve().parents[2]
HELPERS = ROOT / "registry" / "database" / "rows.py"
MIRROR = ROOT / "registry" / "mirror"
FETCHES = {"fetchone", "fetchall", "fetchmany"}
# (file, function) that fetch one column through a server-side cursor, unpacked as one.
ONE_COLUMN_STREAMS = {
    ("registry/database/exports.py", "fetch_export_batch"),
    # a since export's keyset batch, read by name (id, line) from a client-side cursor
    ("registry/database/exports.py", "fetchmany"),
}


def fetches_outside_the_helpers() -> list[str]:
    """Each fetch call in registry/ outside rows.py and the one-column streams: file:line."""
    found = []
    for path in sorted((ROOT / "registry").rglob("*.py")):
        if path == HELPERS or MIRROR in path.parents:
            continue
        name = str(path.relative_to(ROOT))
        tree = ast.parse(path.read_text(), name)
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if (name, function.name) in ONE_COLUMN_STREAMS:
                continue
            for node in ast.walk(function):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in FETCHES
                ):
                    found.append(f"{name}:{node.lineno} {function.name}")
    return sorted(set(found))


def test_registry_fetches_rows_only_through_the_helpers() -> None:
    assert fetches_outside_the_helpers() == []


def test_the_one_column_streams_unpack_one_column() -> None:
    """The exceptions read their rows as `(line,)`: a second column would fail, not be lost."""
    source = (ROOT / "registry" / "database" / "exports.py").read_text()
    assert "[line for (line,) in cursor.fetchmany(size)]" in source
    assert "for (doc,) in cursor:" in (ROOT / "registry" / "database" / "digests.py").read_text()


def test_a_value_is_read_from_one_column_only(server_url: str) -> None:
    """scalar and scalars return the column of a one-column statement, whatever the
    connection's row factory, and refuse a statement of two columns: read it by name."""
    with psycopg.connect(server_url, autocommit=True, row_factory=dict_row) as conn:
        assert scalar(conn, "SELECT 7 AS seven") == 7
        assert scalar(conn, "SELECT 7 WHERE false") is None
        assert scalars(conn, "SELECT g FROM generate_series(1, 3) AS g") == [1, 2, 3]
        with pytest.raises(AssertionError, match="2 columns"):
            scalar(conn, "SELECT 7, 8")
        with pytest.raises(AssertionError, match="2 columns"):
            scalars(conn, "SELECT 7, 8")
