"""The stack of the export capacity tests (docs/export.md, Capacity) and what they read from it:
gunicorn with short timeouts over a demo graph whose live generation has a large change set, the
shipped nginx and one that does not spool, the export metrics, and the export sessions."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from devtools.production_stack import Gunicorn, Nginx, start_gunicorn, start_nginx
from registry.loader.demo import write_demo_document
from tests.conftest import TEST_SECRET, load_records, make_token
from tests.e2e.raw_http import request

# About 35 MB of NDJSON: well past every buffer between the worker and a stalled reader,
# through nginx too (its 4 MB of buffers and the kernel's socket buffers on both sides, about
# 12 MB in all on loopback), so a cut always falls before the export's last rows.
ORIGINS = 40_000
# The graph loaded before it, of other origins: the live generation's change set removes
# these and adds the ORIGINS (about 50 MB of NDJSON changes).
EARLIER_ORIGINS = 10_000
ADMIN = {"Authorization": f"Bearer {make_token()}"}
NDJSON = {**ADMIN, "Accept": "application/x-ndjson"}
WORKERS = 2
SEND_TIMEOUT_S = 8
WORKER_TIMEOUT_S = 10
# Long enough to outlast the idle-in-transaction limit and gunicorn's timeout.
SLOW_SECONDS = WORKER_TIMEOUT_S + 2
# The two exports of docs/export.md, Capacity: the origins listing and the live generation's
# changes.
EXPORTS = ("/registry/origins", "/registry/changes")


def demo_document(origins: int, seed: int) -> bytes:
    """A demo graph document."""
    with tempfile.TemporaryFile() as file:
        write_demo_document(file, origins, seed)
        file.seek(0)
        return file.read()


@dataclass
class Stack:
    """gunicorn (two workers) over ORIGINS origins loaded over EARLIER_ORIGINS others; nginx
    as shipped in front of it, and one whose spool to disk is off (so that a stalled client
    stalls the worker behind it)."""

    conninfo: str
    document: bytes
    earlier: bytes
    gunicorn: Gunicorn
    nginx: Nginx
    unspooled: Nginx

    def port(self, through: str) -> int:
        """The port of gunicorn ("direct"), nginx ("nginx") or the unspooled nginx."""
        if through == "direct":
            return self.gunicorn.port
        return self.nginx.port if through == "nginx" else self.unspooled.port

    def target(self, through: str, path: str = "/registry/origins") -> str:
        """path under the API's prefix on that port."""
        return path if through == "direct" else "/v1" + path

    def total(self, export: str) -> int:
        """The rows export sends: the JSON page's total of the same URL."""
        page = request(self.gunicorn.port, export + "?limit=1", headers=ADMIN).json()
        return int(page["page"]["total"])


@contextmanager
def running_stack(
    conninfo: str,
    graphs: tuple[bytes, bytes],
    folder: Path,
    workers: int = WORKERS,
    settings: dict[str, str] | None = None,
) -> Iterator[Stack]:
    """graphs (the earlier one, then the live one) loaded into conninfo, gunicorn with short
    timeouts (and settings) on workers workers, and two nginx in front; all stopped after."""
    earlier, document = graphs
    load_records(conninfo, earlier)
    load_records(conninfo, document)
    server = start_gunicorn(
        {
            "DATABASE_URL": conninfo,
            "REGISTRY_JWT_SECRET": TEST_SECRET,
            "REGISTRY_GUNICORN_TIMEOUT": str(WORKER_TIMEOUT_S),
            "REGISTRY_EXPORT_SEND_TIMEOUT_S": str(SEND_TIMEOUT_S),
            "REGISTRY_IDLE_IN_TRANSACTION_TIMEOUT_MS": "1000",
            **(settings or {}),
        },
        folder / "gunicorn.log",
        workers=workers,
    )
    proxies: list[Nginx] = []
    try:
        proxies.append(start_nginx(folder / "nginx", server.port))
        proxies.append(start_nginx(folder / "unspooled", server.port, spool_limit="0"))
        yield Stack(conninfo, document, earlier, server, proxies[0], proxies[1])
    finally:
        for proxy in proxies:
            proxy.stop()
        server.stop()


@pytest.fixture(scope="module")
def stack(
    database_factory: Callable[[], str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    """The demo graphs loaded, gunicorn with short timeouts, and two nginx in front."""
    graphs = demo_document(EARLIER_ORIGINS, 4), demo_document(ORIGINS, 3)
    with running_stack(database_factory(), graphs, tmp_path_factory.mktemp("capacity")) as running:
        yield running


def metric(stack: Stack, name: str) -> float:
    """One sample of gunicorn's /metrics (summed over its workers), 0 when absent."""
    text = request(stack.gunicorn.port, "/metrics").body.decode()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return 0.0


def export_series(stack: Stack) -> dict[str, float]:
    """Every sample of the export metrics (summed over the workers), by its series."""
    text = request(stack.gunicorn.port, "/metrics").body.decode()
    return {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("registry_exports_")
    }


def wait_for(condition: Callable[[], bool], what: str, seconds: float = 30) -> None:
    """Poll until condition holds; fail saying what did not happen."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"within {seconds} s: {what}")
        time.sleep(0.05)


def export_sessions(conninfo: str) -> list[int]:
    """The backends of the database that wait inside an export's transaction (their last
    statement a FETCH of the export's cursor)."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%'"
            " AND query LIKE 'FETCH%'"
        ).fetchall()
    return [int(pid) for (pid,) in rows]


def the_export_session(stack: Stack) -> int:
    """The backend of the one export open, once it has waited on its client at least once.

    The pid seen is the one returned: looking again could miss it, since an export is only
    idle between its FETCHes and through nginx it goes on fetching while nginx fills its
    buffers. Measured under load through the unspooled nginx: looks in the 3 s after the
    first found no idle export at moments in 2 of 4 exports, and a test that looked again to
    terminate "every export session" then terminated none, and saw the export whole.
    """
    seen: list[int] = []

    def one() -> bool:
        seen[:] = export_sessions(stack.conninfo)
        return len(seen) == 1

    wait_for(one, "the export's transaction")
    return seen[0]


def open_transactions(conninfo: str) -> int:
    """How many other backends of the database are inside a transaction, in any state."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid() AND xact_start IS NOT NULL"
        ).fetchone()
    return int(row[0]) if row else 0


def wait_until_no_export(stack: Stack) -> bool:
    """Wait until no export streams and no transaction is open (a case's export, or the
    session of a killed worker's, left over from the case before)."""
    wait_for(
        lambda: (
            metric(stack, "registry_exports_in_flight") == 0
            and open_transactions(stack.conninfo) == 0
        ),
        "no export and no transaction left",
    )
    return True


def all_workers_answer(stack: Stack) -> None:
    """Wait until gunicorn has its workers again and answers."""
    wait_for(lambda: len(stack.gunicorn.worker_pids()) == WORKERS, "gunicorn's workers back")
    wait_for(lambda: request(stack.gunicorn.port, "/summary").status == 200, "gunicorn answering")


def local_backend(pid: int) -> bool:
    """Whether pid is a PostgreSQL process of this machine that this test may signal."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            if b"postgres" not in cmdline.read():
                return False
        os.kill(pid, 0)
    except OSError:
        return False
    return True
