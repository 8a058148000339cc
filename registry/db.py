"""The connection pool and the per-request connection.

Resilience, in short (docs/operations.md has the long form): every wait is bounded (connect,
checkout, statement), a connection that failed is discarded when it is given back, one that
sat idle is checked before it is lent again, and while the database cannot be reached requests
answer 503 at once, except a probe every half second per process that notices its return.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections.abc import Mapping
from typing import Any

import orjson
import psycopg
from flask import Flask, current_app, g
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.types.json import set_json_loads
from psycopg_pool import ConnectionPool, PoolTimeout

from registry.embedded_postgres import embedded_database_url
from registry.settings import state_dir

log = logging.getLogger("registry.db")

# A connection lent out again within this many seconds of its last use is trusted without a
# round trip; one idle for longer is checked first, because a database restarted during a
# quiet spell leaves every pooled connection dead and the first requests would pay for it.
IDLE_CHECK_S = 1.0
# While the pool's last attempt to connect failed, requests answer 503 at once instead of
# each waiting out the pool timeout (a sync worker queues everyone behind such a wait), except
# one request per interval per process, which waits briefly for a new connection attempt: the
# probe that notices the database is back. A new connection ends the state.
PROBE_INTERVAL_S = 0.5
PROBE_WAIT_S = 0.1
# TCP keepalives, so a query on a connection whose server vanished from the network (no
# reset, no reply) fails in about 10 s instead of hanging until gunicorn kills the worker.
# Ignored on Unix sockets; a DATABASE_URL that sets any of them keeps its own values.
TCP_DEFAULTS = {
    "keepalives": "1",
    "keepalives_idle": "5",
    "keepalives_interval": "2",
    "keepalives_count": "2",
    "tcp_user_timeout": "10000",
}


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


def session_options(settings: Mapping[str, Any]) -> str:
    """Server settings of every pooled session: read-only, a time budget per statement, serial.

    No parallel query: every request is a short statement and many run at once, so starting
    parallel workers per statement only adds latency (measured: a flag-filtered page at
    1,000,000 origins spent most of its time in Gather).
    """
    return (
        "-c default_transaction_read_only=on"
        f" -c statement_timeout={int(settings['REGISTRY_STATEMENT_TIMEOUT_MS'])}"
        " -c idle_in_transaction_session_timeout=10000"
        " -c max_parallel_workers_per_gather=0"
    )


def connection_kwargs(settings: Mapping[str, Any], conninfo: str) -> dict[str, Any]:
    """libpq parameters of pooled connections: timeouts and keepalives the URL leaves unset."""
    given = conninfo_to_dict(conninfo)
    kwargs: dict[str, Any] = {
        name: value for name, value in TCP_DEFAULTS.items() if name not in given
    }
    kwargs.update(
        {
            "autocommit": True,
            # libpq counts whole seconds and treats anything under 2 as 2.
            "connect_timeout": max(2, round(float(settings["REGISTRY_CONNECT_TIMEOUT_S"]))),
            "options": session_options(settings),
            "application_name": "broadcast-registry",
        }
    )
    return kwargs


class Database:
    """A lazily opened pool: opened in the process that first uses it, after gunicorn forks."""

    def __init__(self, settings: Mapping[str, Any]):
        """Keep the settings; the pool is opened later, in the process that uses it."""
        self._settings = settings
        self._lock = threading.Lock()
        self._pool: ConnectionPool | None = None
        self._pid: int | None = None
        # When each connection was last lent or given back (monotonic seconds).
        self._last_used: weakref.WeakKeyDictionary[psycopg.Connection, float] = (
            weakref.WeakKeyDictionary()
        )
        self._unreachable_since: float | None = None
        self._last_probe = 0.0

    @property
    def pool(self) -> ConnectionPool:
        """The open pool of this process; opened on first use."""
        if self._pool is None or self._pid != os.getpid():
            with self._lock:
                if self._pool is None or self._pid != os.getpid():
                    self._last_used = weakref.WeakKeyDictionary()
                    self._unreachable_since = None
                    self._last_probe = 0.0
                    self._pool = self._open_pool()
                    self._pid = os.getpid()
        return self._pool

    @property
    def unreachable(self) -> bool:
        """Whether this process found the database unreachable and has not connected since."""
        return self._unreachable_since is not None

    def _open_pool(self) -> ConnectionPool:
        """Build and open the pool with explicit timeouts and read-only sessions."""
        s = self._settings
        conninfo = resolve_database_url(s)
        pool = ConnectionPool(
            conninfo,
            open=False,
            min_size=int(s["REGISTRY_POOL_MIN_SIZE"]),
            max_size=int(s["REGISTRY_POOL_MAX_SIZE"]),
            timeout=float(s["REGISTRY_POOL_TIMEOUT_S"]),
            max_waiting=int(s["REGISTRY_POOL_MAX_WAITING"]),
            # Give up on a failed connection attempt at once (after one immediate retry)
            # rather than back off for seconds: a backing-off attempt blocks the pool from
            # starting another, so the database coming back would go unnoticed for that long.
            # Each request that finds no connection starts a fresh attempt instead.
            reconnect_timeout=0,
            reconnect_failed=self._connect_failed,
            check=self._check_if_idle,
            configure=self._configure_connection,
            kwargs=connection_kwargs(s, conninfo),
            name="registry",
        )
        pool.open(wait=False)
        return pool

    def _configure_connection(self, conn: psycopg.Connection) -> None:
        """A new connection: parse json/jsonb with orjson (the hot path); the database is back."""
        set_json_loads(orjson.loads, conn)
        now = time.monotonic()
        self._last_used[conn] = now
        since, self._unreachable_since = self._unreachable_since, None
        if since is not None:
            log.info("database reachable again after %.1f s", now - since)

    def _connect_failed(self, _pool: ConnectionPool) -> None:
        """The pool gave up connecting: remember it, so requests stop queueing behind it."""
        self._mark_unreachable("a connection attempt failed")

    def _mark_unreachable(self, why: str) -> None:
        """Enter the unreachable state (once: the log says when it starts and when it ends)."""
        if self._unreachable_since is None:
            self._unreachable_since = time.monotonic()
            log.warning("database unreachable (%s): answering 503 until it is back", why)

    def _check_if_idle(self, conn: psycopg.Connection) -> None:
        """Check a connection with an empty query only if it has been idle a while."""
        now = time.monotonic()
        last = self._last_used.get(conn)
        self._last_used[conn] = now
        if last is None or now - last >= IDLE_CHECK_S:
            try:
                ConnectionPool.check_connection(conn)
            except psycopg.Error:
                # One dead idle connection usually means the server restarted, and then its
                # idle siblings are dead too: sort them all out now (a dead one fails its
                # check at once), or the pool would back off for a second between each.
                if self._pool is not None:
                    self._pool.check()
                raise

    def getconn(self) -> psycopg.Connection:
        """Lend a connection; while the database is unreachable, fail at once or probe."""
        pool = self.pool
        if self._unreachable_since is None:
            return pool.getconn()
        now = time.monotonic()
        if now - self._last_probe < PROBE_INTERVAL_S:
            raise PoolTimeout("the database could not be reached a moment ago")
        self._last_probe = now
        # Waiting makes the pool start a connection attempt; a refused one fails at once, a
        # slow one finishes in the background and ends the unreachable state when it lands.
        return pool.getconn(timeout=min(PROBE_WAIT_S, pool.timeout))

    def putconn(self, conn: psycopg.Connection) -> None:
        """Give a connection back; the pool discards it if it broke."""
        self._last_used[conn] = time.monotonic()
        if conn.broken:
            # Lost in the middle of a request: most likely the server stopped or restarted.
            # Assume so until a new connection proves otherwise (it ends the state as soon as
            # it lands), so that the next requests do not each wait out the pool timeout.
            self._mark_unreachable("a connection broke during a request")
        self.pool.putconn(conn)

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
        g.registry_conn = database.getconn()
    return g.registry_conn


def _release_connection(_exc: BaseException | None) -> None:
    """Give the request's connection back to the pool."""
    conn = g.pop("registry_conn", None)
    if conn is not None:
        database: Database = current_app.extensions["registry_db"]
        database.putconn(conn)
