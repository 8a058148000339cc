"""The sync worker's socket (registry/gunicorn_worker.py): an answer's head leaves in the same
write as its body's first piece, and the bytes keep their order whatever comes next."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from registry.gunicorn_worker import HeadWithBody, OneWriteSyncWorker

HEAD = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"


class Recorded:
    """One end of a real socket pair, recording each sendall made on it."""

    def __init__(self, sock: socket.socket):
        """Wrap sock."""
        self.sock = sock
        self.writes: list[bytes] = []

    def sendall(self, data: bytes) -> None:
        """Record, then send."""
        self.writes.append(bytes(data))
        self.sock.sendall(data)

    def __getattr__(self, name: str) -> Any:
        """Everything else is the socket's."""
        return getattr(self.sock, name)


@pytest.fixture
def pair() -> Iterator[tuple[Recorded, socket.socket]]:
    """A connected pair of sockets: the worker's end, recorded, and the client's."""
    worker, client = socket.socketpair()
    with worker, client:
        yield Recorded(worker), client


def received(client: socket.socket, size: int) -> bytes:
    """Exactly size bytes from the client's end."""
    data = b""
    while len(data) < size:
        data += client.recv(size - len(data))
    return data


def test_a_small_answer_is_one_write(pair: tuple[Recorded, socket.socket]) -> None:
    worker, client = pair
    sock = HeadWithBody(worker)  # type: ignore[arg-type]
    sock.sendall(HEAD)
    assert worker.writes == []
    sock.sendall(b"hello")
    sock.flush()
    assert worker.writes == [HEAD + b"hello"]
    assert received(client, len(HEAD) + 5) == HEAD + b"hello"


def test_a_head_without_a_body_goes_out_at_the_end(pair: tuple[Recorded, socket.socket]) -> None:
    worker, client = pair
    sock = HeadWithBody(worker)  # type: ignore[arg-type]
    sock.sendall(HEAD)
    sock.flush()
    sock.flush()
    assert worker.writes == [HEAD]
    assert received(client, len(HEAD)) == HEAD


def test_a_streamed_body_keeps_its_order(pair: tuple[Recorded, socket.socket]) -> None:
    worker, client = pair
    sock = HeadWithBody(worker)  # type: ignore[arg-type]
    for piece in (HEAD, b"one", b"two", b"three"):
        sock.sendall(piece)
    sock.flush()
    assert worker.writes == [HEAD + b"one", b"two", b"three"]
    assert received(client, len(HEAD) + 11) == HEAD + b"onetwothree"


def test_any_other_use_of_the_socket_sends_the_head_first(
    pair: tuple[Recorded, socket.socket],
) -> None:
    """gunicorn sends files with socket.sendfile after its head: the head must lead."""
    worker, client = pair
    sock = HeadWithBody(worker)  # type: ignore[arg-type]
    sock.sendall(HEAD)
    with tempfile.TemporaryFile() as file:
        file.write(b"file!")
        file.seek(0)
        sock.sendfile(file)
    assert received(client, len(HEAD) + 5) == HEAD + b"file!"


def test_gunicorn_conf_uses_the_one_write_worker() -> None:
    """The shipped configuration selects it when REGISTRY_WORKER_CLASS is unset (read in a
    child: the file sets environment variables for gunicorn)."""
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k != "REGISTRY_WORKER_CLASS"}
    env["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp()
    code = "import runpy; print(runpy.run_path('gunicorn.conf.py')['worker_class'])"
    shown = subprocess.run(
        [sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, check=True
    )
    assert shown.stdout.strip() == f"{OneWriteSyncWorker.__module__}.OneWriteSyncWorker"
    assert OneWriteSyncWorker.__name__.endswith("SyncWorker")  # gunicorn's test for sync
