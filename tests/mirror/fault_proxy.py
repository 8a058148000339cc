"""A loopback HTTP proxy in front of a real gunicorn that plays the faults a mirror must get
past, one per request in the order given, then passes requests through: an answer of its
own (503, 429, 500), a body cut without its last chunk, a body ended properly one line
short, a body naming one origin twice, a header rewritten. It records every request and
the status answered."""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import urllib3

# Hop-by-hop and framing headers: the proxy frames its own answers.
NOT_PASSED = {"connection", "transfer-encoding", "content-length", "keep-alive", "host"}


@dataclass
class Answer:
    """Answer this instead of asking gunicorn."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b'{"success": false, "error": "Service Unavailable"}'


@dataclass
class Cut:
    """Pass the answer, but end its body after half its lines without the last chunk."""


@dataclass
class Short:
    """Pass the answer, its body ended properly but one line short."""


@dataclass
class Twice:
    """Pass the answer with its first line sent again in place of its last: as many lines as
    it announced, one of them twice."""


@dataclass
class Stall:
    """Pass the answer, but hold its body half-way for this long (the proxy's `stalled`
    event says when it has begun to)."""

    seconds: float


@dataclass
class Header:
    """Pass the answer with this header's value replaced."""

    name: str
    value: str


Fault = Answer | Cut | Short | Twice | Stall | Header


@dataclass
class Seen:
    """One request the proxy answered."""

    path: str
    headers: dict[str, str]
    status: int


class FaultProxy:
    """The proxy, listening on loopback until closed."""

    def __init__(self, upstream: str):
        self.upstream = upstream.rstrip("/")
        self.faults: list[Fault] = []
        self.seen: list[Seen] = []
        self.stalled = threading.Event()
        self.pool = urllib3.PoolManager(retries=False)
        self.server = _Server(("127.0.0.1", 0), _handler(self))
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base(self) -> str:
        """Its URL, no trailing slash."""
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        """Stop listening."""
        self.server.shutdown()
        self.server.server_close()

    def next_fault(self) -> Fault | None:
        """The fault for the next request, if any is left."""
        return self.faults.pop(0) if self.faults else None


class _Server(ThreadingHTTPServer):
    """Threads that end with the test, whatever connection they still wait on; a client
    that hangs up mid-answer (as a mirror does on a body it refuses) is no error here."""

    daemon_threads = True
    block_on_close = False

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet."""


def _handler(proxy: FaultProxy) -> type[BaseHTTPRequestHandler]:
    """The request handler class bound to this proxy."""

    class Handler(BaseHTTPRequestHandler):
        """Answers each GET as the next fault says."""

        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet."""

        def do_GET(self) -> None:
            """Play the next fault, or pass the request through."""
            fault = proxy.next_fault()
            headers = {k: v for k, v in self.headers.items() if k.lower() not in NOT_PASSED}
            if isinstance(fault, Answer):
                self._answer(fault)
                proxy.seen.append(Seen(self.path, headers, fault.status))
                return
            upstream = proxy.pool.request(
                "GET", proxy.upstream + self.path, headers=headers, decode_content=False
            )
            proxy.seen.append(Seen(self.path, headers, upstream.status))
            self.send_response(upstream.status)
            for name, value in upstream.headers.items():
                if name.lower() in NOT_PASSED:
                    continue
                if isinstance(fault, Header) and name.lower() == fault.name.lower():
                    value = fault.value
                self.send_header(name, value)
            if upstream.status == 304:
                self.end_headers()
                return
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            lines = upstream.data.splitlines(keepends=True)
            if isinstance(fault, Cut):
                self._chunks(lines[: len(lines) // 2])
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            if isinstance(fault, Stall):
                self._chunks(lines[: len(lines) // 2])
                self.wfile.flush()
                proxy.stalled.set()
                time.sleep(fault.seconds)
                lines = lines[len(lines) // 2 :]
            if isinstance(fault, Twice):
                lines = lines[:-1] + lines[:1]
            self._chunks(lines[:-1] if isinstance(fault, Short) else lines)
            self.wfile.write(b"0\r\n\r\n")

        def _chunks(self, lines: list[bytes]) -> None:
            """Each line as one chunk."""
            for line in lines:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))

        def _answer(self, answer: Answer) -> None:
            """An answer of the proxy's own."""
            self.send_response(answer.status)
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            self.wfile.write(answer.body)

    return Handler
