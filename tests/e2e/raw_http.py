"""HTTP requests sent exactly as written (no normalising client in between), for the tests
that compare nginx with gunicorn and that time answers during database faults."""

from __future__ import annotations

import http.client
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
