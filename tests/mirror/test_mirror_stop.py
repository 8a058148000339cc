"""SIGTERM or SIGINT in `--follow` while the mirror waits on a service that has stopped
answering (docs/mirror.md, "Politeness"): the wait ends at once, the step under way is rolled
back and the mirror exits 0, instead of waiting out its read timeout. The service here takes
the connection and then says nothing more: before the answer's headers, or in the middle of
an export's body."""

from __future__ import annotations

import signal
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from registry.mirror.client import READ_TIMEOUT_S
from tests.mirror.mirror_run import start, wait_for

pytestmark = [pytest.mark.e2e]

HEADERS = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n"
    b"Registry-Generation: 3\r\nRegistry-Digest: " + b"0" * 64 + b"\r\n"
    b"Registry-Total: 2\r\n\r\n"
)
FIRST_LINE = b'{"origin":{"id":"svc:origin:1"}}\n'


class Silent:
    """A listener that reads each request and then sends `sends` (maybe nothing), and never
    anything more while the test lasts."""

    def __init__(self, sends: bytes):
        self.sends = sends
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.requests = 0
        self.connections: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections.append(conn)
            request = b""
            while b"\r\n\r\n" not in request:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                request += chunk
            self.requests += 1
            conn.sendall(self.sends)

    def close(self) -> None:
        self.listener.close()
        for conn in self.connections:
            conn.close()


@pytest.fixture(params=["before its headers", "in its body"])
def silent(request: pytest.FixtureRequest) -> Iterator[Silent]:
    """The service, silent at one of the two places."""
    if request.param == "before its headers":
        sends = b""
    else:
        sends = HEADERS + b"%x\r\n" % len(FIRST_LINE) + FIRST_LINE + b"\r\n"
    server = Silent(sends)
    yield server
    server.close()


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_ends_a_wait_on_a_silent_service(
    silent: Silent, tmp_path: Path, number: int
) -> None:
    target = tmp_path / "copy.sqlite"
    running = start(
        tmp_path / "runs", "sync", "--url", f"http://127.0.0.1:{silent.port}",
        "--into", str(target), "--follow", "1",
    )  # fmt: skip
    try:
        wait_for(lambda: silent.requests == 1, "the export asked for")
        running.signal(number)
        # Without the wait ended, the mirror would sit out its read timeout first.
        done = running.wait(seconds=READ_TIMEOUT_S / 2)
    finally:
        running.kill()
    assert done.returncode == 0, done.stderr
    assert "stopped; the step under way was rolled back" in done.stderr
    assert not target.exists() and list(tmp_path.glob("copy.sqlite*")) == []
