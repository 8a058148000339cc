"""Connections to one of several hosts: checked before use, and away from hosts that failed.

libpq chooses the host (target_session_attrs, load_balance_hosts); these classes add what a
pooler in between hides: a login through PgBouncer succeeds while the server behind it is down.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import psycopg

from registry.database.conninfo import without_host
from registry.database.queries import QUERIES

log = logging.getLogger("registry.db")

# With several hosts, a host whose connection broke or failed its check is left out of new
# connections for this long. Behind PgBouncer a stopped server's pooler still accepts logins,
# and each new connection through it would wait out query_wait_timeout before its check fails;
# left out, the next connection goes to another host at once.
SUSPECT_S = 10.0
# (host, port) -> until when (monotonic) new connections of this process leave it out.
_suspects: dict[tuple[str, str], float] = {}


def suspect_host(conn: psycopg.Connection) -> None:
    """Leave this connection's host out of new connections for SUSPECT_S."""
    try:
        host, port = conn.info.host, str(conn.info.port)
    except psycopg.Error:
        return  # closed: nothing to tell
    if (host, port) not in _suspects or _suspects[(host, port)] < time.monotonic():
        log.warning("database host %s:%s failed: new connections leave it out", host, port)
    _suspects[(host, port)] = time.monotonic() + SUSPECT_S


def without_suspects(conninfo: str) -> str:
    """conninfo without the hosts that failed lately, unless they are all it has."""
    now = time.monotonic()
    for (host, port), until in list(_suspects.items()):
        if until <= now:
            _suspects.pop((host, port), None)
            continue
        conninfo = without_host(conninfo, host, int(port)) or conninfo
    return conninfo


class VerifiedConnection(psycopg.Connection):
    """A connection to one of several hosts that has answered a query before it is used.

    libpq picks the host (target_session_attrs, load_balance_hosts); a login alone does not
    prove the server answers when a pooler is in between: PgBouncer accepts clients, and
    even reports the standby's in_hot_standby, while the server behind it is down. A host
    whose first query fails is left out and libpq picks again among the rest, and so are the
    hosts that failed lately (SUSPECT_S).
    """

    # Whether hosts that failed lately are left out (the standby probe asks them all).
    avoids_suspects = True

    @classmethod
    def connect(cls, conninfo: str = "", **kwargs: Any) -> VerifiedConnection:
        """Connect as libpq chooses, then check; on failure try again without that host."""
        if cls.avoids_suspects:
            conninfo = without_suspects(conninfo)
        while True:
            conn = super().connect(conninfo, **kwargs)
            try:
                conn.execute(QUERIES["session/check_server"])
                return conn
            except psycopg.OperationalError:
                host, port = conn.info.host, conn.info.port
                suspect_host(conn)
                conn.close()
                remaining = without_host(conninfo, host, port)
                if remaining is None:
                    raise
                log.warning("database host %s:%s does not answer; trying the others", host, port)
                conninfo = remaining


class ProbeConnection(VerifiedConnection):
    """A verified connection that asks every host, those that failed lately included."""

    avoids_suspects = False
