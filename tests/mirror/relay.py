"""A loopback TCP relay between `registry mirror` and the server it reads (gunicorn or nginx),
so that a test can hold a step in the middle: the answer's bytes slowed to a rate or paused,
new connections held at a gate, and a count of the bytes passed on, by which a test knows that a
body is under way before it kills, cuts or stops something.

It changes nothing in what passes: bytes go on as they came, and when one side closes the
other is closed too (a server that dies mid-body is a body cut short for the client).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from dataclasses import dataclass, field

PIECE = 16 * 1024
# The relay's receive window towards the server: small, so that what the server has sent but
# the client not yet received stays small too (the kernel doubles it), and a server that
# dies or stops mid-body leaves most of the body unsent rather than queued here.
UPSTREAM_WINDOW = 64 * 1024


@dataclass
class Relay:
    """Listens on a loopback port of its own and passes each connection on to upstream_port."""

    upstream_port: int
    rate: float | None = None  # bytes a second towards the client; None: as fast as it comes
    relayed: int = 0  # bytes passed on to clients so far, all connections together
    connections: int = 0  # connections accepted so far
    _listener: socket.socket = field(init=False)
    _open: threading.Event = field(init=False, default_factory=threading.Event)
    _flowing: threading.Event = field(init=False, default_factory=threading.Event)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)
    _sockets: list[socket.socket] = field(init=False, default_factory=list)
    _closed: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        """Start listening and accepting; the gate starts open, the bytes flowing."""
        self._open.set()
        self._flowing.set()
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def port(self) -> int:
        """The port clients connect to."""
        return int(self._listener.getsockname()[1])

    def hold(self) -> None:
        """Close the gate: connections are accepted but nothing passes until open()."""
        self._open.clear()

    def open(self) -> None:
        """Open the gate again."""
        self._open.set()

    def pause(self) -> None:
        """Stop passing bytes towards clients (a body stays under way, however long a test
        needs it to) until resume()."""
        self._flowing.clear()

    def resume(self) -> None:
        """Pass bytes towards clients again."""
        self._flowing.set()

    def close(self) -> None:
        """Stop accepting and drop every connection."""
        self._closed = True
        self._open.set()
        self._flowing.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.close()

    def _accept(self) -> None:
        """Take connections until closed, each passed on by threads of its own."""
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            with self._lock:
                self._sockets.append(client)
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        """Wait at the gate, connect upstream (or close the client when nothing answers) and
        pass bytes both ways."""
        self._open.wait()
        upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        with self._lock:
            self._sockets.append(upstream)
        try:
            if self._closed:
                raise OSError("the relay is closed")
            upstream.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, UPSTREAM_WINDOW)
            upstream.settimeout(10)
            upstream.connect(("127.0.0.1", self.upstream_port))
        except OSError:
            upstream.close()
            client.close()
            return
        upstream.settimeout(None)
        threading.Thread(target=self._pass, args=(client, upstream, False), daemon=True).start()
        self._pass(upstream, client, True)

    def _pass(self, source: socket.socket, sink: socket.socket, towards_client: bool) -> None:
        """Copy source to sink (at the rate towards the client) until either side ends, then
        end both."""
        started, sent = time.monotonic(), 0
        try:
            while True:
                data = source.recv(PIECE)
                if not data:
                    break
                if towards_client:
                    if not self._flowing.is_set():
                        self._flowing.wait()
                        started, sent = time.monotonic(), 0
                    rate = self.rate
                    if rate:
                        # Sleep until the bytes sent so far fit the rate.
                        ahead = (sent + len(data)) / rate - (time.monotonic() - started)
                        if ahead > 0:
                            time.sleep(ahead)
                    else:
                        started, sent = time.monotonic(), 0
                sink.sendall(data)
                if towards_client:
                    sent += len(data)
                    with self._lock:
                        self.relayed += len(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    sock.close()
