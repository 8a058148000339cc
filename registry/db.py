"""The connection pool and the per-request connection."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

import orjson
import psycopg
from flask import Flask, current_app, g
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.types.json import set_json_loads
from psycopg_pool import ConnectionPool

from registry.embedded_postgres import embedded_database_url
from registry.settings import state_dir


def resolve_database_url(settings: Mapping[str, Any]) -> str:
    """DATABASE_URL when set, else the embedded server's default database."""
    url = settings.get("DATABASE_URL")
    if url:
        return str(url)
    return embedded_database_url(state_dir(settings))


def with_database(conninfo: str, dbname: str) -> str:
    """The same server and credentials, another database."""
    params = conninfo_to_dict(conninfo)
    params["dbname"] = dbname
    return make_conninfo("", **params)


def database_name(conninfo: str) -> str:
    """The database a conninfo points at (libpq's default: the user name)."""
    params = conninfo_to_dict(conninfo)
    return str(params.get("dbname") or params.get("user") or os.environ.get("USER", "postgres"))


def _configure_connection(conn: psycopg.Connection) -> None:
    """Parse json/jsonb with orjson: the documents are large and this is the hot path."""
    set_json_loads(orjson.loads, conn)


class Database:
    """A lazily opened pool: opened in the process that first uses it, after gunicorn forks."""

    def __init__(self, settings: Mapping[str, Any]):
        self._settings = settings
        self._lock = threading.Lock()
        self._pool: ConnectionPool | None = None
        self._pid: int | None = None

    @property
    def pool(self) -> ConnectionPool:
        """The open pool of this process; opened on first use."""
        if self._pool is None or self._pid != os.getpid():
            with self._lock:
                if self._pool is None or self._pid != os.getpid():
                    self._pool = self._open_pool()
                    self._pid = os.getpid()
        return self._pool

    def _open_pool(self) -> ConnectionPool:
        """Build and open the pool with explicit timeouts and read-only sessions."""
        s = self._settings
        options = (
            "-c default_transaction_read_only=on"
            f" -c statement_timeout={int(s['REGISTRY_STATEMENT_TIMEOUT_MS'])}"
            " -c idle_in_transaction_session_timeout=10000"
        )
        pool = ConnectionPool(
            resolve_database_url(s),
            open=False,
            min_size=int(s["REGISTRY_POOL_MIN_SIZE"]),
            max_size=int(s["REGISTRY_POOL_MAX_SIZE"]),
            timeout=float(s["REGISTRY_POOL_TIMEOUT_S"]),
            max_waiting=int(s["REGISTRY_POOL_MAX_WAITING"]),
            reconnect_timeout=0,
            check=ConnectionPool.check_connection,
            configure=_configure_connection,
            kwargs={
                "autocommit": True,
                "connect_timeout": max(1, round(float(s["REGISTRY_CONNECT_TIMEOUT_S"]))),
                "options": options,
                "application_name": "broadcast-registry",
            },
            name="registry",
        )
        pool.open(wait=False)
        return pool

    def close(self) -> None:
        """Close this process's pool, if it has one."""
        with self._lock:
            if self._pool is not None and self._pid == os.getpid():
                self._pool.close()
            self._pool = None
            self._pid = None


def init_app(app: Flask) -> None:
    """Attach the pool to the app and return connections at the end of each request."""
    app.extensions["registry_db"] = Database(app.config)
    app.teardown_appcontext(_release_connection)


def get_connection() -> psycopg.Connection:
    """The connection of this request, checked out of the pool on first use."""
    if "registry_conn" not in g:
        database: Database = current_app.extensions["registry_db"]
        g.registry_conn = database.pool.getconn()
    return g.registry_conn


def _release_connection(_exc: BaseException | None) -> None:
    """Give the request's connection back to the pool."""
    conn = g.pop("registry_conn", None)
    if conn is not None:
        database: Database = current_app.extensions["registry_db"]
        database.pool.putconn(conn)
