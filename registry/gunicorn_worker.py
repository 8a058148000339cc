"""gunicorn's sync worker, writing each answer's head together with the start of its body.

gunicorn writes a response's status line and headers with one system call and its body with
another. A worker killed between the two (an app host lost, docs/scaling.md) has sent nginx
a head without a body: nginx has passed it on, cannot retry the request elsewhere, and the
client gets a cut answer. Held back until the body's first piece, the head goes out in the
same write, so a small answer (every page and lookup: one piece) is either wholly in the
kernel when the worker dies, and still delivered, or not sent at all, and nginx retries it
on another instance (`proxy_next_upstream`). It also spares a system call and a packet.

gunicorn.conf.py selects this worker; REGISTRY_WORKER_CLASS chooses another.
"""

from __future__ import annotations

import socket
from typing import Any

from gunicorn.workers.sync import SyncWorker


class HeadWithBody:
    """A client socket whose first sendall (gunicorn's head) waits for the second.

    Every other use of the socket sends what is held first, so the bytes keep their order
    whatever gunicorn does next (sendfile, chunked writes, close).
    """

    def __init__(self, sock: socket.socket):
        """Wrap the accepted socket of one request."""
        self._sock = sock
        self._held: bytes | None = None
        self._first = True

    def sendall(self, data: bytes) -> None:
        """Hold the first write; send it with the next one, in one call."""
        if self._first:
            self._first = False
            self._held = bytes(data)
            return
        held, self._held = self._held, None
        self._sock.sendall(held + data if held else data)

    def flush(self) -> None:
        """Send what is held (a head with no body after it), once."""
        self._first = False
        held, self._held = self._held, None
        if held:
            self._sock.sendall(held)

    def __getattr__(self, name: str) -> Any:
        """Anything else (sendfile, setsockopt, shutdown, close...): the held bytes first."""
        self.flush()
        return getattr(self._sock, name)


class OneWriteSyncWorker(SyncWorker):
    """gunicorn's sync worker, each request's client socket wrapped in HeadWithBody."""

    def handle_request(self, listener: Any, req: Any, client: Any, addr: Any) -> Any:
        """gunicorn's handling, then whatever is still held goes out."""
        sock = HeadWithBody(client)
        try:
            return super().handle_request(listener, req, sock, addr)
        finally:
            sock.flush()
