"""The embedded default: a PostgreSQL server of the project's own, started through pgserver."""

from __future__ import annotations

import contextlib
import fcntl
import warnings
from pathlib import Path
from typing import Any


def _pgserver() -> Any:
    """Import pgserver, which warns at import time when XDG_RUNTIME_DIR is unset (harmless)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver
    return pgserver


def embedded_database_url(state_dir: Path, database: str = "postgres") -> str:
    """Start (or reuse) the server under state_dir and return a URI for one of its databases.

    The server is left running when this process exits (cleanup_mode=None) so that the
    `registry` command, gunicorn's workers and the tests all share it; `registry db stop`
    stops it.
    """
    pgdata = state_dir / "pgdata"
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    # pgserver serialises its own start-up, but two gunicorn workers racing through
    # initdb on a brand-new folder is worth one more lock of our own.
    with _locked(state_dir / ".pgserver.lock"):
        server = _pgserver().get_server(pgdata, cleanup_mode=None)
    return str(server.get_uri(database))


def stop_embedded(state_dir: Path) -> bool:
    """Stop the embedded server if one runs under state_dir; say whether one did."""
    pgdata = state_dir / "pgdata"
    if not (pgdata / "postmaster.pid").exists():
        return False
    with _locked(state_dir / ".pgserver.lock"):
        server = _pgserver().get_server(pgdata, cleanup_mode="stop")
        server.cleanup()
    return True


@contextlib.contextmanager
def _locked(path: Path):
    """Hold an exclusive file lock for the duration of the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
