"""From settings to a connection: which database, and the libpq parameters every session gets."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from psycopg.conninfo import conninfo_to_dict, make_conninfo

from registry.database.embedded import embedded_database_url
from registry.settings import state_dir

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
