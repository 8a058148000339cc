"""Configuration: the one place that reads the environment."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# Every setting the service knows, with its default. Names are the environment variables.
DEFAULTS: dict[str, Any] = {
    "DATABASE_URL": None,
    "REGISTRY_STATE_DIR": ".registry",
    # Where gunicorn's workers write their metrics (set by gunicorn.conf.py when unset).
    "PROMETHEUS_MULTIPROC_DIR": None,
    "REGISTRY_DEV": False,
    # gunicorn's address (gunicorn.conf.py reads it too); `registry serve --bind` defaults to it.
    "REGISTRY_BIND": "127.0.0.1:8000",
    "REGISTRY_JWT_SECRET": None,
    "REGISTRY_JWT_PUBLIC_KEY": None,
    "REGISTRY_JWKS_URL": None,
    "REGISTRY_JWT_ALGORITHMS": None,
    "REGISTRY_JWT_AUDIENCE": None,
    "REGISTRY_JWT_ISSUER": None,
    "REGISTRY_JWT_ROLES_CLAIM": "roles",
    "REGISTRY_STATEMENT_TIMEOUT_MS": 5000,
    # A request's transaction left open this long (ms) is ended by the server; an export's
    # transaction is exempt (its send timeout bounds it instead).
    "REGISTRY_IDLE_IN_TRANSACTION_TIMEOUT_MS": 10000,
    "REGISTRY_CONNECT_TIMEOUT_S": 2,
    "REGISTRY_POOL_MIN_SIZE": 1,
    "REGISTRY_POOL_MAX_SIZE": 4,
    "REGISTRY_POOL_TIMEOUT_S": 1.5,
    "REGISTRY_POOL_MAX_WAITING": 64,
    "REGISTRY_RETRY_AFTER_S": 2,
    "REGISTRY_LOG_LEVEL": "INFO",
    # Connections go through a transaction-mode pooler (PgBouncer): no prepared statements,
    # and the session settings travel with each request's transaction (docs/scaling.md).
    "REGISTRY_PGBOUNCER": False,
    # A pooled connection is replaced after this long, so that connections that moved to
    # another host while one was away drift back to the standbys once they return.
    "REGISTRY_POOL_MAX_LIFETIME_S": 600.0,
    # A standby further behind than this (seconds) is not used for unpinned reads.
    "REGISTRY_MAX_REPLICA_LAG_S": 10.0,
    # Generations kept for pinned reads (docs/api.md, Generations and conditional requests): the
    # current one and those before it.
    "REGISTRY_KEEP_GENERATIONS": 2,
    # Change sets kept for /registry/changes?since= (docs/api.md, Changes since any generation),
    # from 1 to MAX_KEEP_CHANGES; a value below REGISTRY_KEEP_GENERATIONS is raised to it
    # (keep_changes()).
    "REGISTRY_KEEP_CHANGES": 30,
    # A load that would remove more than this percentage of the current generation's origins
    # is refused unless `registry load --force` (docs/loading.md, Dry run and guards). Unset: no
    # such limit.
    "REGISTRY_MAX_REMOVED_PERCENT": None,
    # After its commit, how long (seconds) `registry load` waits for snapshots older than it
    # (an export's) to end so that its read model can be made all-visible; past it, a
    # detached `registry db vacuum` finishes that (docs/loading.md).
    "REGISTRY_LOAD_VACUUM_WAIT_S": 10.0,
    # Exports streaming at once per instance (docs/export.md, Capacity). gunicorn.conf.py sets it to
    # half of the instance's workers (at least 1) when unset; a single process defaults to 1.
    "REGISTRY_MAX_EXPORTS": 1,
    # An export whose client takes nothing for this long (seconds) is ended, cut short. It
    # must be below gunicorn's timeout (REGISTRY_GUNICORN_TIMEOUT), which would end it harder:
    # check_export_send_timeout refuses any other value. 120 s: curl --limit-rate reads in
    # bursts and then takes nothing for up to 100 s (docs/export.md, "Throttled clients"), and
    # such a client must get its whole export.
    "REGISTRY_EXPORT_SEND_TIMEOUT_S": 120.0,
    # Seconds a gunicorn worker may show no sign of life before it is killed (gunicorn.conf.py
    # reads it from here); above the send timeout.
    "REGISTRY_GUNICORN_TIMEOUT": 150,
    # The file whose locks count one instance's exports across its workers; gunicorn.conf.py
    # names one per instance. Unset: the process's own count.
    "REGISTRY_EXPORT_SLOTS_FILE": None,
    # Read by `registry db create-reader` only: the new role's password (never in argv).
    "REGISTRY_READER_PASSWORD": None,
    # Read by `registry mirror` only: the token it sends to the registry it copies (never in
    # argv; `--token-file PATH` is the other way), docs/mirror.md.
    "REGISTRY_TOKEN": None,
}

_INTEGERS = {
    "REGISTRY_STATEMENT_TIMEOUT_MS",
    "REGISTRY_IDLE_IN_TRANSACTION_TIMEOUT_MS",
    "REGISTRY_POOL_MIN_SIZE",
    "REGISTRY_POOL_MAX_SIZE",
    "REGISTRY_POOL_MAX_WAITING",
    "REGISTRY_RETRY_AFTER_S",
    "REGISTRY_KEEP_GENERATIONS",
    "REGISTRY_KEEP_CHANGES",
    "REGISTRY_MAX_EXPORTS",
    "REGISTRY_GUNICORN_TIMEOUT",
}
_POSITIVE = {
    "REGISTRY_KEEP_GENERATIONS",
    "REGISTRY_KEEP_CHANGES",
    "REGISTRY_MAX_EXPORTS",
    "REGISTRY_GUNICORN_TIMEOUT",
}
# The most change sets REGISTRY_KEEP_CHANGES may keep (docs/api.md, Changes since any generation).
# REGISTRY_KEEP_GENERATIONS has the same bound: change sets are never fewer than graphs kept, so
# more graphs than this would raise the change sets past their bound.
MAX_KEEP_CHANGES = 1000
_AT_MOST = {
    "REGISTRY_KEEP_CHANGES": MAX_KEEP_CHANGES,
    "REGISTRY_KEEP_GENERATIONS": MAX_KEEP_CHANGES,
}
_FLOATS = {
    "REGISTRY_CONNECT_TIMEOUT_S",
    "REGISTRY_POOL_TIMEOUT_S",
    "REGISTRY_POOL_MAX_LIFETIME_S",
    "REGISTRY_MAX_REPLICA_LAG_S",
    "REGISTRY_EXPORT_SEND_TIMEOUT_S",
    "REGISTRY_MAX_REMOVED_PERCENT",
    "REGISTRY_LOAD_VACUUM_WAIT_S",
}
_BOOLEANS = {"REGISTRY_DEV", "REGISTRY_PGBOUNCER"}


class SettingsError(ValueError):
    """A setting holds a value the service cannot use."""


def settings_from_environ(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Return the known settings present in the environment, converted to their types."""
    environ = os.environ if environ is None else environ
    found: dict[str, Any] = {}
    for name in DEFAULTS:
        raw = environ.get(name)
        if raw is None or raw == "":
            continue
        found[name] = _convert(name, raw)
    check_export_send_timeout({**DEFAULTS, **found})
    return found


def check_export_send_timeout(settings: Mapping[str, Any]) -> None:
    """Refuse a send timeout that is not finite, above 0 and below gunicorn's timeout.

    0 or less would switch the socket's send timeout off (a client that stops reading would
    hold its export and slot for ever), nan or inf would fail every export, and one at or past
    the worker timeout lets gunicorn kill the worker before the export is ended properly.
    """
    value = settings["REGISTRY_EXPORT_SEND_TIMEOUT_S"]
    worker = settings["REGISTRY_GUNICORN_TIMEOUT"]
    try:
        seconds, worker_seconds = float(value), float(worker)
    except (TypeError, ValueError):
        raise SettingsError(
            f"REGISTRY_EXPORT_SEND_TIMEOUT_S must be a number of seconds, not {value!r}"
        ) from None
    if not (math.isfinite(seconds) and 0 < seconds < worker_seconds):
        raise SettingsError(
            "REGISTRY_EXPORT_SEND_TIMEOUT_S must be a finite number of seconds above 0 and "
            f"below REGISTRY_GUNICORN_TIMEOUT ({worker}), not {value!r}"
        )


def load_settings(overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Defaults, then the environment, then explicit overrides."""
    settings = dict(DEFAULTS)
    settings.update(settings_from_environ())
    if overrides:
        settings.update(overrides)
    return settings


def keep_changes(settings: Mapping[str, Any]) -> int:
    """The change sets a load keeps (docs/api.md, Changes since any generation):
    REGISTRY_KEEP_CHANGES, raised to REGISTRY_KEEP_GENERATIONS when below it."""
    return max(int(settings["REGISTRY_KEEP_CHANGES"]), int(settings["REGISTRY_KEEP_GENERATIONS"]))


def state_dir(settings: Mapping[str, Any]) -> Path:
    """The folder that holds the embedded database and development secrets."""
    return Path(settings["REGISTRY_STATE_DIR"]).expanduser().resolve()


def _convert(name: str, raw: str) -> Any:
    """Convert one environment value to the type its setting takes."""
    try:
        if name in _INTEGERS:
            number = int(raw)
            if name in _POSITIVE and number < 1:
                raise SettingsError(f"{name} must be at least 1, not {raw!r}")
            if name in _AT_MOST and number > _AT_MOST[name]:
                raise SettingsError(f"{name} must be at most {_AT_MOST[name]}, not {raw!r}")
            return number
        if name in _FLOATS:
            value = float(raw)
            if name == "REGISTRY_MAX_REMOVED_PERCENT" and not 0 <= value <= 100:
                raise SettingsError(f"{name} must be a percentage from 0 to 100, not {raw!r}")
            if name == "REGISTRY_LOAD_VACUUM_WAIT_S" and not 0 <= value < float("inf"):
                raise SettingsError(f"{name} must be a number of seconds, 0 or more, not {raw!r}")
            return value
    except SettingsError:
        raise
    except ValueError:
        raise SettingsError(f"{name} must be a number, not {raw!r}") from None
    if name in _BOOLEANS:
        lowered = raw.strip().lower()
        if lowered in {"1", "true", "yes", "on"}:
            return True
        if lowered in {"0", "false", "no", "off"}:
            return False
        raise SettingsError(f"{name} must be true or false, not {raw!r}")
    return raw
