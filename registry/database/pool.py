"""The pool of one process: opened after the fork, failing fast while the database is away.

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
from psycopg.types.json import set_json_loads
from psycopg_pool import ConnectionPool, PoolTimeout

from registry.database.conninfo import (
    connection_kwargs,
    is_multi_host,
    prefers_standby,
    primary_reader_conninfo,
    reader_conninfo,
    request_settings,
    resolve_database_url,
    standby_conninfo,
)
from registry.database.generations import current_generation
from registry.database.hosts import ProbeConnection, VerifiedConnection, suspect_host
from registry.database.queries import QUERIES
from registry.database.rows import scalar

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
# A standby's replay lag is asked at most this often per connection (one tiny query).
LAG_CHECK_S = 1.0
# Reads prefer a standby (target_session_attrs=prefer-standby), and libpq puts a connection
# on the primary only when no standby answered as it was made. Such a connection would stay
# there for the pool's whole max_lifetime after the standby came back: reads would load the
# primary for minutes and stall if it then went away. So while one exists, a thread of the
# process asks this often, on a connection of its own, whether a standby answers; when one
# does, the pool is drained and libpq places every new connection again.
STANDBY_PROBE_S = 3.0
# The application_name of the connections that read from the primary on purpose (a standby
# too far behind, or without the generation a request pins); the others are the service's.
PRIMARY_READS_NAME = "broadcast-registry-primary-reads"


def has_generation(conn: psycopg.Connection, generation: int) -> bool:
    """Whether this server has replayed generation (or a newer one) yet."""
    try:
        newest = current_generation(conn)
    except (psycopg.errors.UndefinedTable, psycopg.errors.InvalidSchemaName):
        return False  # no graph replayed here yet at all
    return newest is not None and newest.generation >= generation


def is_cut_off(conn: psycopg.Connection) -> bool:
    """Whether a connection given back was left in the middle of an exchange.

    psycopg ends every exchange that merely fails (the connection is then idle, or in a failed
    transaction); one left busy was cut off mid-way. Through PgBouncer that is how a stopped
    server shows: the pooler keeps the client's socket open, so psycopg has not seen the
    connection break, but the request's pipeline (begin, settings) is left aborted and busy.
    """
    status = conn.info.transaction_status
    return status in (psycopg.pq.TransactionStatus.ACTIVE, psycopg.pq.TransactionStatus.UNKNOWN)


def is_standby(conn: psycopg.Connection) -> bool:
    """Whether the server is a hot standby (PostgreSQL 14+ reports it at login; no query)."""
    return conn.info.parameter_status("in_hot_standby") == "on"


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
        # Through a transaction-mode pooler each request runs in a transaction of its own
        # that carries the session settings (docs/scaling.md).
        self._per_request_settings = bool(settings.get("REGISTRY_PGBOUNCER"))
        self._multi_host = False
        # Reads a standby cannot answer go to the primary, through a pool of its own that
        # opens connections only when needed.
        self._primary_pool: ConnectionPool | None = None
        self._from_primary: weakref.WeakSet[psycopg.Connection] = weakref.WeakSet()
        # When each standby connection was last found within the lag limit.
        self._fresh_at: weakref.WeakKeyDictionary[psycopg.Connection, float] = (
            weakref.WeakKeyDictionary()
        )
        self._max_lag_s = float(settings.get("REGISTRY_MAX_REPLICA_LAG_S", 10.0))
        # Whether reads prefer a standby, and the thread that waits for one to answer again
        # while some pooled connection fell back to a primary.
        self._prefers_standby = False
        self._standby_probe: threading.Thread | None = None

    @property
    def pool(self) -> ConnectionPool:
        """The open pool of this process; opened on first use."""
        if self._pool is None or self._pid != os.getpid():
            with self._lock:
                if self._pool is None or self._pid != os.getpid():
                    self._last_used = weakref.WeakKeyDictionary()
                    self._fresh_at = weakref.WeakKeyDictionary()
                    self._from_primary = weakref.WeakSet()
                    self._primary_pool = None
                    self._standby_probe = None
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
        conninfo = reader_conninfo(resolve_database_url(s))
        self._multi_host = is_multi_host(conninfo)
        self._prefers_standby = prefers_standby(conninfo)
        pool = ConnectionPool(
            conninfo,
            open=False,
            min_size=int(s["REGISTRY_POOL_MIN_SIZE"]),
            max_size=int(s["REGISTRY_POOL_MAX_SIZE"]),
            timeout=float(s["REGISTRY_POOL_TIMEOUT_S"]),
            max_lifetime=float(s.get("REGISTRY_POOL_MAX_LIFETIME_S", 600.0)),
            max_waiting=int(s["REGISTRY_POOL_MAX_WAITING"]),
            # Give up on a failed connection attempt at once (after one immediate retry)
            # rather than back off for seconds: a backing-off attempt blocks the pool from
            # starting another, so the database coming back would go unnoticed for that long.
            # Each request that finds no connection starts a fresh attempt instead.
            reconnect_timeout=0,
            reconnect_failed=self._connect_failed,
            check=self._check_if_idle,
            configure=self._configure_reader,
            kwargs=connection_kwargs(s, conninfo),
            connection_class=VerifiedConnection if self._multi_host else psycopg.Connection,
            name="registry",
        )
        pool.open(wait=False)
        return pool

    def _open_primary_pool(self) -> ConnectionPool:
        """The pool of primary connections, for reads that no standby can answer now."""
        s = self._settings
        conninfo = primary_reader_conninfo(reader_conninfo(resolve_database_url(s)))
        pool: ConnectionPool = ConnectionPool(
            conninfo,
            open=False,
            min_size=0,
            max_size=int(s["REGISTRY_POOL_MAX_SIZE"]),
            timeout=float(s["REGISTRY_POOL_TIMEOUT_S"]),
            max_waiting=int(s["REGISTRY_POOL_MAX_WAITING"]),
            max_lifetime=float(s.get("REGISTRY_POOL_MAX_LIFETIME_S", 600.0)),
            reconnect_timeout=0,
            check=self._check_if_idle,
            configure=self._configure_connection,
            # Named apart, so that an operator (pg_stat_activity, PgBouncer's SHOW CLIENTS)
            # tells these deliberate primary reads from readers that fell back to a primary.
            kwargs={**connection_kwargs(s, conninfo), "application_name": PRIMARY_READS_NAME},
            connection_class=VerifiedConnection,
            name="registry-primary",
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

    def _configure_reader(self, conn: psycopg.Connection) -> None:
        """A new connection of the readers' pool: on a primary for want of a standby, it
        starts the wait for a standby (STANDBY_PROBE_S)."""
        self._configure_connection(conn)
        if self._prefers_standby and not is_standby(conn):
            self._start_standby_probe(conn)

    def _start_standby_probe(self, conn: psycopg.Connection) -> None:
        """Start the thread that waits for a standby, unless it runs already."""
        with self._lock:
            if self._standby_probe is not None:
                return
            self._standby_probe = threading.Thread(
                target=self._wait_for_standby, name="registry-standby-probe", daemon=True
            )
            self._standby_probe.start()
        log.warning(
            "no standby answered: reads run on the primary %s:%s until one answers again",
            conn.info.host, conn.info.port,
        )  # fmt: skip

    def _wait_for_standby(self) -> None:
        """Every STANDBY_PROBE_S, connect to a standby only; once one answers, drain the pool."""
        pid = os.getpid()
        conninfo = standby_conninfo(reader_conninfo(resolve_database_url(self._settings)))
        kwargs = connection_kwargs(self._settings, conninfo)
        while True:
            time.sleep(STANDBY_PROBE_S)
            pool = self._pool
            if pool is None or self._pid != pid or pool.closed:
                return  # the pool was closed or replaced: its own connections will say
            try:
                with ProbeConnection.connect(conninfo, **kwargs) as conn:
                    host, port = conn.info.host, conn.info.port
            except psycopg.Error:
                continue
            with self._lock:
                self._standby_probe = None  # a fallback after this starts a new wait
            log.info("standby %s:%s answers again: reads move back to the standbys", host, port)
            # Idle connections are replaced now, lent ones when given back; libpq places the
            # new ones, on a standby while one answers.
            pool.drain()
            return

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
                # With several hosts the siblings may sit behind a pooler that makes each
                # check wait: replace them without checking, away from this host.
                if self._multi_host:
                    suspect_host(conn)
                    if self._pool is not None:
                        self._pool.drain()
                elif self._pool is not None:
                    self._pool.check()
                raise

    def getconn(self) -> psycopg.Connection:
        """Lend a connection; while the database is unreachable, fail at once or probe.

        A standby further behind than REGISTRY_MAX_REPLICA_LAG_S is not used: the request
        gets a primary connection instead.
        """
        conn = self._lend()
        try:
            if self._per_request_settings:
                self._begin_request(conn)
            fresh = not is_standby(conn) or self._fresh_enough(conn)
        except BaseException:
            self.putconn(conn)
            raise
        if fresh:
            return conn
        self.putconn(conn)
        return self.getconn_primary()

    def getconn_primary(self) -> psycopg.Connection:
        """A connection to the primary, for a read that no standby can answer now."""
        if not self._multi_host:
            return self.getconn()  # one host: there is no other to ask
        with self._lock:
            if self._primary_pool is None:
                self._primary_pool = self._open_primary_pool()
        conn = self._primary_pool.getconn()
        self._from_primary.add(conn)
        if self._per_request_settings:
            try:
                self._begin_request(conn)
            except BaseException:
                self.putconn(conn)
                raise
        return conn

    def _fresh_enough(self, conn: psycopg.Connection) -> bool:
        """Whether a standby connection is within the lag limit (asked once a second)."""
        now = time.monotonic()
        if now - self._fresh_at.get(conn, -LAG_CHECK_S) < LAG_CHECK_S:
            return True
        lag = float(scalar(conn, QUERIES["session/get_replica_lag"]) or 0.0)
        if lag > self._max_lag_s:
            log.warning(
                "standby %s:%s is %.1f s behind (limit %.1f s): reading from the primary",
                conn.info.host, conn.info.port, lag, self._max_lag_s,
            )  # fmt: skip
            return False
        self._fresh_at[conn] = now
        return True

    def _lend(self) -> psycopg.Connection:
        """A connection from the pool, or an immediate failure while the database is away."""
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

    def _begin_request(self, conn: psycopg.Connection) -> None:
        """Open the request's read-only transaction with its settings, in one round trip."""
        with conn.pipeline():
            conn.execute(QUERIES["session/begin_request"])
            conn.execute(QUERIES["session/set_request_settings"], request_settings(self._settings))

    def _end_request(self, conn: psycopg.Connection) -> None:
        """Close the request's transaction, so the pooler can lend its server connection on."""
        status = conn.info.transaction_status
        try:
            if status == psycopg.pq.TransactionStatus.INTRANS:
                conn.execute(QUERIES["session/end_request"])
            elif status == psycopg.pq.TransactionStatus.INERROR:
                conn.rollback()
        except psycopg.Error:
            pass  # the connection broke; the pool discards it

    def putconn(self, conn: psycopg.Connection) -> None:
        """Give a connection back; the pool discards it if it broke."""
        self._last_used[conn] = time.monotonic()
        if self._per_request_settings and not conn.broken:
            self._end_request(conn)
        if self._multi_host and (conn.broken or is_cut_off(conn)):
            # Its host failed (stopped, or its pooler gave up waiting for the server): the
            # pool's other connections to it would each fail a request the same way, so
            # they are replaced now, and new ones go to the other hosts (SUSPECT_S).
            suspect_host(conn)
            pool = self._primary_pool if conn in self._from_primary else self._pool
            if pool is not None:
                pool.drain()
        if conn.broken and not self._multi_host:
            # Lost in the middle of a request: most likely the server stopped or restarted.
            # Assume so until a new connection proves otherwise (it ends the state as soon as
            # it lands), so that the next requests do not each wait out the pool timeout.
            # With several hosts the next connection goes to another one at once instead;
            # only a failed attempt (every host refused) means the database is away.
            self._mark_unreachable("a connection broke during a request")
        if conn in self._from_primary and self._primary_pool is not None:
            self._from_primary.discard(conn)
            self._primary_pool.putconn(conn)
            return
        self.pool.putconn(conn)

    def pool_stats(self) -> dict[str, int] | None:
        """This process's pool figures (psycopg_pool's get_stats), None before it is opened."""
        if self._pool is None or self._pid != os.getpid():
            return None
        return self._pool.get_stats()

    def close(self) -> None:
        """Close this process's pool, if it has one."""
        with self._lock:
            if self._pool is not None and self._pid == os.getpid():
                self._pool.close()
                if self._primary_pool is not None:
                    self._primary_pool.close()
            self._pool = None
            self._primary_pool = None
            self._pid = None
