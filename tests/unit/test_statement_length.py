"""Every request-time statement stays short enough for psycopg to cache its conversion.

psycopg turns a statement's placeholders into $n once per text and caches the result, but
only for a text of at most MAX_CACHED_STATEMENT_LENGTH bytes: a longer one is converted
again, in Python, on every execution (about 0.1 ms for 5 KB, a tenth of a since page's time:
registry/database/changes_since.py). So the comments of a request-time statement are kept
short enough, its schema named as the longest pinned generation would be.
"""

from __future__ import annotations

import pytest
from psycopg import sql

# psycopg's own limit (a private constant: a new psycopg that moves it fails here first).
from psycopg._queries import MAX_CACHED_STATEMENT_LENGTH

from registry.database.queries import QUERIES

# The folders of the statements a request runs.
REQUEST_TIME = ("origins", "summary", "changes", "session", "exports")
# The longest schema a request may name: graph_g<n>, n a bigint.
LONGEST_SCHEMA = "graph_g" + "9" * 19


def request_statements() -> list[str]:
    """The names of every request-time statement."""
    return [f"{folder}/{name}" for folder in REQUEST_TIME for name, _ in QUERIES.folder(folder)]


def test_the_request_time_statements_are_found() -> None:
    """The check below has the statements of every folder to check."""
    names = request_statements()
    assert {name.split("/")[0] for name in names} == set(REQUEST_TIME)


@pytest.mark.parametrize("name", request_statements())
def test_a_request_time_statement_is_cached_by_psycopg(name: str) -> None:
    """changes/list_net_changes, with its schema and column filled in, is at most 4096 bytes."""
    composed = sql.SQL(QUERIES[name]).format(
        graph=sql.Identifier(LONGEST_SCHEMA), column=sql.Identifier("csv_line")
    )
    text = composed.as_string(None).encode()
    assert len(text) <= MAX_CACHED_STATEMENT_LENGTH, (
        f"sql/{name}.sql is {len(text)} bytes as sent: psycopg converts it again on every"
        f" execution past {MAX_CACHED_STATEMENT_LENGTH}; shorten its comments"
    )
