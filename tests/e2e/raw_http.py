"""HTTP requests sent exactly as written (no normalising client in between), for the tests
that compare nginx with gunicorn and that time answers during database faults."""

from __future__ import annotations

import http.client
import re
import socket
from dataclasses import dataclass
from typing import Any

import orjson


@dataclass
class Answer:
    """One HTTP answer: status, headers (by lower-case name) and body."""

    status: int
    headers: dict[str, str]
    body: bytes

    def header(self, name: str) -> str | None:
        """A header's value, or None."""
        return self.headers.get(name.lower())

    def json(self) -> Any:
        """The body as JSON."""
        return orjson.loads(self.body)


def request(
    port: int,
    target: str,
    method: str = "GET",
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
) -> Answer:
    """One request on its own connection, the target sent exactly as given."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.putrequest(method, target, skip_host=False, skip_accept_encoding=True)
        for name, value in (headers or {}).items():
            conn.putheader(name, value)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        response = conn.getresponse()
        data = response.read()
        return Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, data)
    finally:
        conn.close()


def raw_request(port: int, data: bytes) -> Answer:
    """Bytes sent as they are on a fresh connection (what http.client would refuse to send),
    and the answer: its Content-Length, or up to the server closing the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(data)
        received = b""
        while b"\r\n\r\n" not in received and (chunk := sock.recv(65536)):
            received += chunk
        head, _, body = received.partition(b"\r\n\r\n")
        length = re.search(rb"(?im)^content-length:\s*([0-9]+)", head)
        while (length is None or len(body) < int(length.group(1))) and (chunk := sock.recv(65536)):
            body += chunk
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return Answer(int(status_line.split()[1]), headers, body)
