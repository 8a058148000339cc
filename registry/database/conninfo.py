"""From settings to a connection: which database, and the libpq parameters every session gets."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from registry.database.embedded import embedded_database_url, existing_embedded_database_url
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


def resolve_database_url(settings: Mapping[str, Any], create: bool = True) -> str:
    """DATABASE_URL when set, else the embedded server's default database.

    create False (commands that only read): an embedded server that does not exist yet is
    not created; NoEmbeddedServer says where it was looked for.
    """
    url = settings.get("DATABASE_URL")
    if url:
        return str(url)
    if not create:
        return existing_embedded_database_url(state_dir(settings))
    return embedded_database_url(state_dir(settings))


def with_database(conninfo: str, dbname: str) -> str:
    """The same server and credentials, another database."""
    params = conninfo_to_dict(conninfo)
    params["dbname"] = dbname
    return make_conninfo("", **params)


def as_url(conninfo: str) -> str:
    """A conninfo as a postgresql:// URL (what `registry mirror --into` takes): the database
    in the path, every other parameter, a socket folder as host included, in the query."""
    parts = {key: str(value) for key, value in conninfo_to_dict(conninfo).items()}
    name = quote(parts.pop("dbname"), safe="")
    return f"postgresql:///{name}?{urlencode(parts)}"


def with_user(conninfo: str, user: str) -> str:
    """The same server and database, as another role (no password: the server trusts it)."""
    params = conninfo_to_dict(conninfo)
    params.pop("password", None)
    params["user"] = user
    return make_conninfo("", **params)


def database_name(conninfo: str) -> str:
    """The database a conninfo points at (libpq's default: the user name)."""
    params = conninfo_to_dict(conninfo)
    return str(params.get("dbname") or params.get("user") or os.environ.get("USER", "postgres"))


def is_multi_host(conninfo: str) -> bool:
    """Whether a conninfo names several hosts (a libpq multi-host URI or host=a,b)."""
    params = conninfo_to_dict(conninfo)
    return "," in str(params.get("host") or "") or "," in str(params.get("hostaddr") or "")


def without_host(conninfo: str, host: str, port: int) -> str | None:
    """The same conninfo without one of its hosts; None when that was the only one left."""
    params = conninfo_to_dict(conninfo)
    hosts = str(params.get("host") or "").split(",")
    ports = str(params.get("port") or "5432").split(",")
    if len(ports) == 1:
        ports = ports * len(hosts)
    kept = [(h, p) for h, p in zip(hosts, ports, strict=True) if (h, p) != (host, str(port))]
    if not kept or len(kept) == len(hosts):
        return None
    params["host"] = ",".join(h for h, _ in kept)
    params["port"] = ",".join(p for _, p in kept)
    params.pop("hostaddr", None)
    return make_conninfo("", **params)


def reader_conninfo(conninfo: str) -> str:
    """The service's reads: with several hosts, prefer standbys and spread over them.

    A URL that says otherwise keeps its own choice. psycopg makes the attempts itself (every
    host as a standby first, then any host), so `load_balance_hosts` works whatever libpq is
    underneath; a stopped host is refused at once and the next one tried.
    """
    if not is_multi_host(conninfo):
        return conninfo
    params = conninfo_to_dict(conninfo)
    params.setdefault("target_session_attrs", "prefer-standby")
    params.setdefault("load_balance_hosts", "random")
    return make_conninfo("", **params)


def primary_reader_conninfo(conninfo: str) -> str:
    """Reads that a standby cannot answer (too far behind, or a generation it lacks).

    `primary`, not `read-write`: the service's sessions are read-only by their own settings,
    which libpq would take for a standby under `read-write`.
    """
    params = conninfo_to_dict(conninfo)
    params["target_session_attrs"] = "primary"
    params.pop("load_balance_hosts", None)
    return make_conninfo("", **params)


def prefers_standby(conninfo: str) -> bool:
    """Whether libpq may put a read on a primary only for want of a standby (prefer-standby)."""
    if not is_multi_host(conninfo):
        return False
    return conninfo_to_dict(conninfo).get("target_session_attrs") == "prefer-standby"


def standby_conninfo(conninfo: str) -> str:
    """The same hosts, a standby only: whether one answers again after reads fell back."""
    params = conninfo_to_dict(conninfo)
    params["target_session_attrs"] = "standby"
    return make_conninfo("", **params)


def writer_conninfo(conninfo: str) -> str:
    """Loads, migrations and role changes: only the primary, whatever the URL lists or says.

    `primary` (not in recovery) rather than `read-write`: a primary whose role defaults to
    read-only transactions is still the primary, and the load then says what refused it.
    """
    params = conninfo_to_dict(conninfo)
    params["target_session_attrs"] = "primary"
    return make_conninfo("", **params)


def session_options(settings: Mapping[str, Any]) -> str:
    """Server settings of every pooled session: read-only, a time budget per statement, serial.

    No parallel query: every request is a short statement and many run at once, so starting
    parallel workers per statement only adds latency (measured: a flag-filtered page at
    1,000,000 origins spent most of its time in Gather). No JIT, for the same reason: a
    statement the planner prices above jit_above_cost (an export of changes since m at
    300,000 origins, 3,030 lines) compiled 40 functions first, 102 to 124 ms against 50 to
    68 ms without (docs/performance.md).
    """
    return (
        "-c default_transaction_read_only=on"
        f" -c statement_timeout={int(settings['REGISTRY_STATEMENT_TIMEOUT_MS'])}"
        " -c idle_in_transaction_session_timeout="
        f"{int(settings['REGISTRY_IDLE_IN_TRANSACTION_TIMEOUT_MS'])}"
        " -c max_parallel_workers_per_gather=0"
        " -c jit=off"
    )


def request_settings(settings: Mapping[str, Any]) -> dict[str, str]:
    """The same settings as session_options, as values for set_config(..., true) per request.

    Through a transaction-mode pooler the startup `options` cannot carry them (PgBouncer 1.18
    refuses the parameter, and a server connection is shared by every client anyway), so
    each request opens a read-only transaction and sets them locally in it.
    """
    return {
        "statement_timeout": str(int(settings["REGISTRY_STATEMENT_TIMEOUT_MS"])),
        "idle_in_transaction_session_timeout": str(
            int(settings["REGISTRY_IDLE_IN_TRANSACTION_TIMEOUT_MS"])
        ),
        "max_parallel_workers_per_gather": "0",
        "jit": "off",
    }


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
            "application_name": "broadcast-registry",
        }
    )
    if settings.get("REGISTRY_PGBOUNCER"):
        # Transaction pooling: consecutive statements of one client may run on different
        # server connections, so a statement prepared on one is unknown on the next
        # (PgBouncer 1.18 does not track protocol-level prepared statements). No preparing.
        kwargs["prepare_threshold"] = None
    else:
        kwargs["options"] = session_options(settings)
    return kwargs


def connect_primary(settings: Mapping[str, Any]) -> psycopg.Connection:
    """An autocommit connection to the primary of the configured database.

    Loads, migrations and roles change the database, so with a multi-host DATABASE_URL only
    the primary will do (target_session_attrs=primary), whatever the URL says.
    """
    return psycopg.connect(writer_conninfo(resolve_database_url(settings)), autocommit=True)
