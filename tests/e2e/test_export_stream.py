"""Streamed exports through real gunicorn and deploy/nginx.conf: complete, gzipped when asked,
alive past the worker timeout, and a client that leaves frees the database connection."""

from __future__ import annotations

import csv
import gzip
import io
import socket
import struct
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import orjson
import psycopg
import pytest

from devtools.production_stack import Gunicorn, Nginx, start_gunicorn, start_nginx
from registry.loader.demo import write_demo_document
from tests.conftest import TEST_SECRET, load_records, make_token
from tests.e2e.raw_http import request
from tests.properties.test_export_listing import CONTRACT_COLUMNS as COLUMNS

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("nginx_installed")]


# Enough origins (about 10 MB of NDJSON) that an export outgrows every socket buffer between
# the worker and a client that stops reading.
ORIGINS = 15_000
ADMIN = {"Authorization": f"Bearer {make_token()}"}
NDJSON = {**ADMIN, "Accept": "application/x-ndjson"}
CSV = {**ADMIN, "Accept": "text/csv"}
# gunicorn's timeout for this stack: short, so that the stuck-client case ends quickly; the
# export send timeout must be below it (the service refuses to start otherwise).
WORKER_TIMEOUT_S = 3
SEND_TIMEOUT_S = 2


@dataclass
class ExportStack:
    """One gunicorn worker over a database of ORIGINS origins, and nginx in front of it."""

    conninfo: str
    gunicorn: Gunicorn
    nginx: Nginx

    def port(self, through: str) -> int:
        """gunicorn's port ("direct") or nginx's ("nginx")."""
        return self.gunicorn.port if through == "direct" else self.nginx.port

    def prefix(self, through: str) -> str:
        """The path prefix of the API on that port."""
        return "" if through == "direct" else "/v1"


@pytest.fixture(scope="module")
def export_stack(
    database_factory: Callable[[], str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ExportStack]:
    """The demo graph loaded, one sync worker with a short timeout, and nginx."""
    conninfo = database_factory()
    with tempfile.TemporaryFile() as document:
        write_demo_document(document, ORIGINS, 3)
        document.seek(0)
        load_records(conninfo, document.read())
    folder = tmp_path_factory.mktemp("export")
    server = start_gunicorn(
        {
            "DATABASE_URL": conninfo,
            "REGISTRY_JWT_SECRET": TEST_SECRET,
            "REGISTRY_GUNICORN_TIMEOUT": str(WORKER_TIMEOUT_S),
            "REGISTRY_EXPORT_SEND_TIMEOUT_S": str(SEND_TIMEOUT_S),
        },
        folder / "gunicorn.log",
        workers=1,
    )
    try:
        proxy = start_nginx(folder / "nginx", server.port)
    except BaseException:
        server.stop()
        raise
    yield ExportStack(conninfo, server, proxy)
    proxy.stop()
    server.stop()


def busy_sessions(conninfo: str) -> list[str]:
    """The state of every other session on the database that is not idle."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT state FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            " AND backend_type = 'client backend' AND state <> 'idle'"
        ).fetchall()
    return [str(state) for (state,) in rows]


def wait_until_no_busy_session(conninfo: str, seconds: float = 30) -> list[str]:
    """Poll until no session is busy (or the time is up); what was busy at the end."""
    deadline = time.monotonic() + seconds
    busy = busy_sessions(conninfo)
    while busy and time.monotonic() < deadline:
        time.sleep(0.05)
        busy = busy_sessions(conninfo)
    return busy


def open_export(port: int, target: str, headers: dict[str, str]) -> socket.socket:
    """A raw connection that has sent one GET and read its first bytes.

    Its receive buffer is small, so that what the server can push ahead of the reader is
    bounded by the server's send buffer, far less than the whole export.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 * 1024)
    sock.settimeout(30)
    sock.connect(("127.0.0.1", port))
    lines = [f"GET {target} HTTP/1.1", "Host: 127.0.0.1", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    first = sock.recv(65536)
    assert first.startswith(b"HTTP/1.1 200"), first[:200]
    return sock


def read_all(sock: socket.socket) -> bytes:
    """Everything until the server closes the connection."""
    chunks = []
    while True:
        chunk = sock.recv(1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


@pytest.mark.parametrize("through", ["direct", "nginx"])
def test_a_full_export_arrives_whole(export_stack: ExportStack, through: str):
    """Every origin once, in listing order, as NDJSON and CSV; nginx passes it on unchanged."""
    port, prefix = export_stack.port(through), export_stack.prefix(through)
    answer = request(port, f"{prefix}/registry/origins", headers=NDJSON)
    assert answer.status == 200
    assert answer.header("Content-Type") == "application/x-ndjson"
    # nginx spools exports like every other answer: nothing asks it not to.
    assert answer.header("X-Accel-Buffering") is None
    assert answer.header("Registry-Total") == str(ORIGINS)
    lines = answer.body.split(b"\n")
    assert lines[-1] == b""
    ids = [orjson.loads(line)["origin"]["id"] for line in lines[:-1]]
    assert len(ids) == len(set(ids)) == ORIGINS
    first_page = request(port, f"{prefix}/registry/origins?limit=200", headers=ADMIN).json()
    assert [orjson.loads(line) for line in lines[:200]] == first_page["origins"]
    table = request(port, f"{prefix}/registry/origins", headers=CSV)
    assert table.status == 200
    rows = list(csv.reader(io.StringIO(table.body.decode("utf-8"), newline="")))
    assert tuple(rows[0]) == COLUMNS
    assert [row[0] for row in rows[1:]] == ids


def test_exports_are_gzipped_through_nginx_when_asked(export_stack: ExportStack):
    """gzip for NDJSON and CSV when the client asks; the same bytes once decompressed."""
    for headers in (NDJSON, CSV):
        plain = request(export_stack.gunicorn.port, "/registry/origins", headers=headers)
        zipped = request(
            export_stack.nginx.port,
            "/v1/registry/origins",
            headers={**headers, "Accept-Encoding": "gzip"},
        )
        assert zipped.status == 200
        assert zipped.header("Content-Encoding") == "gzip"
        assert "Accept" in (zipped.header("Vary") or "")
        assert gzip.decompress(zipped.body) == plain.body
        assert len(zipped.body) < len(plain.body) / 3


@pytest.mark.parametrize("through", ["direct", "nginx"])
def test_a_client_that_leaves_frees_the_connection(export_stack: ExportStack, through: str):
    """The client resets the connection after the first bytes: the export's transaction ends
    at once, and the worker (one, with a pool of one) answers the next request."""
    port, prefix = export_stack.port(through), export_stack.prefix(through)
    sock = open_export(port, f"{prefix}/registry/origins", NDJSON)
    if through == "direct":
        # Mid-export: the worker's session is in the export's transaction, waiting on the
        # client. (Through nginx the worker writes into nginx's spool and is soon done.)
        assert len(busy_sessions(export_stack.conninfo)) == 1
    # A reset, not a polite close: the server's next write fails at once.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()
    assert wait_until_no_busy_session(export_stack.conninfo) == []
    after = request(port, f"{prefix}/registry/summary", headers=ADMIN)
    assert after.status == 200
    assert after.json()["canonical_origins"] == ORIGINS


def test_a_slow_reader_finishes_past_the_worker_timeout(export_stack: ExportStack):
    """An export that lasts longer than gunicorn's timeout completes: the worker shows it is
    alive while it waits on its reader. (A reader that stops altogether is cut by the send
    timeout: tests/e2e/test_export_capacity.py.)"""
    target = "/registry/origins"
    # Slow but steady (about 1.5 MB/s): the export lasts longer than the worker timeout.
    sock = open_export(export_stack.gunicorn.port, target, NDJSON)
    started, received = time.monotonic(), []
    while True:
        chunk = sock.recv(32 * 1024)
        if not chunk:
            break
        received.append(chunk)
        time.sleep(0.02)
    sock.close()
    assert time.monotonic() - started > WORKER_TIMEOUT_S * 1.5
    body = b"".join(received)
    assert body.endswith(b"\r\n0\r\n\r\n")  # the chunked body's proper end
    assert wait_until_no_busy_session(export_stack.conninfo) == []
    after = request(export_stack.gunicorn.port, "/registry/summary", headers=ADMIN)
    assert after.status == 200
