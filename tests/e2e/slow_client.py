"""A real slow HTTP client for the export capacity tests: a raw socket with a small receive
window, reading at a set rate (or not at all), and the chunked body decoded by hand so that a
test sees exactly how an answer ended: with its last chunk, or cut."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field

# A small receive window: what the server can push ahead of the reader is bounded by the
# server's send buffer and this, far less than a whole export.
RECEIVE_WINDOW = 64 * 1024
# The slowest rate an export must serve to the end (docs/export.md, Capacity): 10 KB/s.
SLOW_RATE = 10 * 1024


@dataclass
class Body:
    """A chunked body as received: its data, and whether its last chunk came."""

    data: bytes
    complete: bool

    def lines(self) -> list[bytes]:
        """NDJSON lines (or CSV rows) received whole."""
        parts = self.data.split(b"\n")
        return [part for part in parts[:-1]]


def decode_chunked(raw: bytes) -> Body:
    """The data of a chunked body, and whether it ended with its terminating chunk."""
    data, position = bytearray(), 0
    while True:
        end = raw.find(b"\r\n", position)
        if end < 0:
            return Body(bytes(data), False)
        size = int(raw[position:end].split(b";")[0] or b"0", 16)
        if size == 0:
            return Body(bytes(data), raw[end:].startswith(b"\r\n\r\n"))
        start = end + 2
        if len(raw) < start + size + 2:
            data += raw[start : start + size]
            return Body(bytes(data), False)
        data += raw[start : start + size]
        position = start + size + 2


@dataclass
class SlowClient:
    """One GET on its own connection, read as slowly as a test says; from source, a loopback
    address (nginx counts its limits per client address)."""

    port: int
    target: str
    headers: dict[str, str]
    source: str = "127.0.0.1"
    sock: socket.socket = field(init=False)
    status: int = field(init=False, default=0)
    head: dict[str, str] = field(init=False, default_factory=dict)
    raw: bytearray = field(init=False, default_factory=bytearray)

    def __post_init__(self) -> None:
        """Connect with a small receive window, send the request and read the status line
        and headers."""
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_WINDOW)
        self.sock.settimeout(60)
        self.sock.bind((self.source, 0))
        self.sock.connect(("127.0.0.1", self.port))
        lines = [f"GET {self.target} HTTP/1.1", "Host: 127.0.0.1", "Connection: close"]
        lines += [f"{name}: {value}" for name, value in self.headers.items()]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = self.sock.recv(4096)
            if not chunk:
                break
            received += chunk
        head, _, rest = received.partition(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        self.status = int(status_line.split()[1])
        for line in header_lines:
            name, _, value = line.partition(":")
            self.head[name.strip().lower()] = value.strip()
        self.raw += rest

    def read_for(self, seconds: float, rate: int = SLOW_RATE) -> None:
        """Read at about rate bytes a second for this long (the server may close sooner)."""
        started = time.monotonic()
        self.read_while(lambda: time.monotonic() - started < seconds, rate)

    def read_while(self, going: Callable[[], bool], rate: int = SLOW_RATE) -> None:
        """Read at about rate bytes a second for as long as going() says (the server may
        close sooner)."""
        started = time.monotonic()
        taken = 0
        while going():
            chunk = self.sock.recv(1024)
            if not chunk:
                return
            self.raw += chunk
            taken += len(chunk)
            # Sleep until the bytes taken so far fit the rate.
            ahead = taken / rate - (time.monotonic() - started)
            if ahead > 0:
                time.sleep(ahead)

    def read_rest(self) -> Body:
        """Read at full speed until the server closes; the body as received."""
        while True:
            try:
                chunk = self.sock.recv(1 << 20)
            except ConnectionResetError:
                break
            if not chunk:
                break
            self.raw += chunk
        self.sock.close()
        return self.body()

    def body(self) -> Body:
        """The body received so far (the answer is chunked) or as sent (close-delimited)."""
        if self.head.get("transfer-encoding", "").lower() == "chunked":
            return decode_chunked(bytes(self.raw))
        return Body(bytes(self.raw), False)

    def reset(self) -> None:
        """Go away with a reset, so the server's next write fails at once."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()
