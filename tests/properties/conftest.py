"""Fixtures of the property tests: one database and app per test function, reloaded per example."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql

from registry.database.conninfo import with_database
from tests.conftest import app_config, load_records, make_token

# A linguistic default collation, where the server has ICU: the documented order and search
# hold "whatever the database's locale", and the usual C.UTF-8 default would hide a query
# that forgot COLLATE "C" (in en-US, "a" < "B"; in code-point order, "B" < "a").
LINGUISTIC_DATABASE = (
    "CREATE DATABASE {} TEMPLATE template0 ENCODING 'UTF8'"
    " LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'"
)


class LoadedGraph:
    """A database that each example reloads with the real loader, and the app over it."""

    def __init__(self, conninfo: str, app: Any):
        self.conninfo = conninfo
        self.app = app
        self.client = app.test_client()
        self.headers = {"Authorization": f"Bearer {make_token()}"}

    def load(self, records: list[dict[str, Any]]) -> None:
        """Replace the graph with these records (a load replaces everything)."""
        load_records(self.conninfo, records)

    def get(self, path: str, query: dict[str, str] | None = None, *, admin: bool = True) -> Any:
        """GET path with the admin token (or none), returning the response."""
        return self.client.get(
            path, query_string=query or {}, headers=self.headers if admin else {}
        )

    def get_json(
        self, path: str, query: dict[str, str] | None = None, *, admin: bool = True
    ) -> Any:
        """GET path and return its JSON body, which must come with 200 and application/json."""
        response = self.get(path, query, admin=admin)
        assert response.status_code == 200, (path, query, response.status_code, response.data)
        assert response.mimetype == "application/json"
        return response.get_json()


@pytest.fixture
def graph_database(server_url: str, database_factory: Callable[[], str]) -> Iterator[str]:
    """A fresh database: en-US (ICU) collation where the server offers it, else the default."""
    name = f"registry_properties_{uuid.uuid4().hex[:8]}"
    try:
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(sql.SQL(LINGUISTIC_DATABASE).format(sql.Identifier(name)))
        linguistic = True
    except psycopg.Error:  # no ICU in this build (the embedded server): the default will do
        linguistic = False
    if not linguistic:
        yield database_factory()
        return
    try:
        yield with_database(server_url, name)
    finally:
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@pytest.fixture
def registry_graph(graph_database: str) -> Iterator[LoadedGraph]:
    """A fresh database with an empty graph and the app over it, for one test function."""
    from app import create_app

    conninfo = graph_database
    load_records(conninfo, [])
    # One connection, opened before the first example: the pool jitters each new
    # connection's lifetime with the global `random`, and a pool filling itself in the
    # background while hypothesis draws an example fails the test as a random-using strategy.
    app = create_app(app_config(conninfo, REGISTRY_POOL_MIN_SIZE=1, REGISTRY_POOL_MAX_SIZE=1))
    app.extensions["registry_db"].pool.wait(timeout=10)
    yield LoadedGraph(conninfo, app)
    app.extensions["registry_db"].close()
