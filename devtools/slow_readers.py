"""Exports streaming to slow readers, for `make bench`'s rows beside exports (docs/export.md,
Capacity).

Each reader is a real socket with a small receive window that asks for the whole NDJSON
export and reads it at 10 KB/s, in a thread of its own, until the bench is done with it.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

RATE = 10 * 1024
WINDOW = 64 * 1024


def _read_slowly(sock: socket.socket, stop: threading.Event) -> None:
    """Read at RATE until stop is set or the server closes."""
    started, taken = time.monotonic(), 0
    while not stop.is_set():
        try:
            chunk = sock.recv(1024)
        except OSError:
            return
        if not chunk:
            return
        taken += len(chunk)
        ahead = taken / RATE - (time.monotonic() - started)
        if ahead > 0:
            stop.wait(ahead)


@contextmanager
def slow_exports(port: int, token: str, count: int) -> Iterator[list[int]]:
    """count NDJSON exports of every origin from 127.0.0.1:port, each read at 10 KB/s while
    the block runs; yields the HTTP status each got (a 503 is the export limit)."""
    stop = threading.Event()
    sockets: list[socket.socket] = []
    threads: list[threading.Thread] = []
    statuses: list[int] = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, WINDOW)
            sock.settimeout(60)
            sock.connect(("127.0.0.1", port))
            sockets.append(sock)
            request = (
                "GET /registry/origins HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                f"Authorization: Bearer {token}\r\nAccept: application/x-ndjson\r\n\r\n"
            )
            sock.sendall(request.encode())
            head = sock.recv(4096)
            statuses.append(int(head.split(b" ", 2)[1]))
            thread = threading.Thread(target=_read_slowly, args=(sock, stop), daemon=True)
            thread.start()
            threads.append(thread)
        yield statuses
    finally:
        stop.set()
        for sock in sockets:
            sock.close()
        for thread in threads:
            thread.join(timeout=5)
