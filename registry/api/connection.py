"""The per-request connection: lent by the worker's pool on first use, kept on `g`, given back."""

from __future__ import annotations

from collections.abc import Callable

import psycopg
from flask import Flask, current_app, g, request

from registry.api.metrics import observe_pool
from registry.database.pool import Database, has_generation, is_standby


def init_app(app: Flask) -> None:
    """Attach the pool to the app and return connections at the end of each request."""
    app.extensions["registry_db"] = Database(app.config)
    app.teardown_appcontext(_release_connection)


def get_connection() -> psycopg.Connection:
    """The connection of this request, checked out of the pool on first use."""
    if "registry_conn" not in g:
        database: Database = current_app.extensions["registry_db"]
        conn = database.getconn()
        pinned = _pinned_generation()
        if pinned is not None and is_standby(conn) and not has_generation(conn, pinned):
            # A standby that has not replayed the generation asked for would answer 404 where
            # the primary answers it: ask the primary (docs/scaling.md, consistency).
            database.putconn(conn)
            conn = database.getconn_primary()
        g.registry_conn = conn
        observe_pool(database)
    return g.registry_conn


def _pinned_generation() -> int | None:
    """The request's generation=n, when it is one plain number (the schema judges the rest)."""
    values = request.args.getlist("generation")
    if len(values) == 1 and values[0].isdigit() and len(values[0]) < 19:
        return int(values[0])
    return None


def _release_connection(_exc: BaseException | None) -> None:
    """Give the request's connection back to the pool."""
    conn = g.pop("registry_conn", None)
    if conn is not None:
        database: Database = current_app.extensions["registry_db"]
        database.putconn(conn)
        observe_pool(database)


def take_connection() -> tuple[psycopg.Connection, Callable[[], None]]:
    """This request's connection, taken over by the caller with the function that gives it back.

    For a streamed body, which is written after the request's teardown has run: the caller
    keeps the connection until the last byte is out (or the client has gone), then calls
    the returned function exactly once.
    """
    conn = get_connection()
    del g.registry_conn
    database: Database = current_app.extensions["registry_db"]

    def give_back() -> None:
        database.putconn(conn)
        observe_pool(database)

    return conn, give_back
