"""Reading a JWKS document over HTTP(S) within a total deadline and a size cap.

A key source is outside the service's control: one that answers slowly byte by byte, sends
megabytes, or never finishes must cost a request a bounded time and memory. A socket
timeout alone bounds each read, not the whole fetch, so a timer shuts the connection down at
the deadline whatever the client library is waiting for, and every read's timeout is the
time left.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import threading
import time
from urllib.parse import urlsplit

MAX_JWKS_BYTES = 256 * 1024
_CHUNK = 16 * 1024


class JwksFetchError(Exception):
    """The document could not be had: unreachable, too slow, too big, or not a 200."""


def fetch_jwks_bytes(url: str, deadline_s: float, max_bytes: int = MAX_JWKS_BYTES) -> bytes:
    """The body of a GET of url (http or https), read within deadline_s seconds in all and
    at most max_bytes long; JwksFetchError otherwise. Redirects are not followed."""
    parts = urlsplit(url)
    ends_at = time.monotonic() + deadline_s
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    connection: http.client.HTTPConnection
    if parts.scheme.lower() == "https":
        connection = http.client.HTTPSConnection(
            parts.hostname or "",
            parts.port,
            timeout=deadline_s,
            context=ssl.create_default_context(),
        )
    else:
        connection = http.client.HTTPConnection(
            parts.hostname or "", parts.port, timeout=deadline_s
        )
    expired = threading.Event()

    def cut_off() -> None:
        """At the deadline: end the connection, so whatever read is waiting returns."""
        expired.set()
        sock = connection.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    timer = threading.Timer(deadline_s, cut_off)
    timer.daemon = True
    timer.start()
    try:
        connection.request("GET", target, headers={"Accept": "application/json"})
        response = connection.getresponse()
        if response.status != 200:
            raise JwksFetchError(f"HTTP {response.status}")
        declared = response.getheader("Content-Length")
        if declared is not None and declared.isdigit() and int(declared) > max_bytes:
            raise JwksFetchError(f"document of {declared} bytes, over {max_bytes}")
        body = bytearray()
        while True:
            left = ends_at - time.monotonic()
            if left <= 0:
                raise JwksFetchError(f"not complete within {deadline_s:g} s")
            if connection.sock is not None:
                connection.sock.settimeout(left)
            chunk = response.read1(min(_CHUNK, max_bytes + 1 - len(body)))
            if not chunk:
                break
            body += chunk
            if len(body) > max_bytes:
                raise JwksFetchError(f"document over {max_bytes} bytes")
        if expired.is_set():
            raise JwksFetchError(f"not complete within {deadline_s:g} s")
        return bytes(body)
    except (OSError, http.client.HTTPException) as error:
        if expired.is_set():
            raise JwksFetchError(f"not complete within {deadline_s:g} s") from None
        raise JwksFetchError(f"{type(error).__name__}: {error}") from None
    finally:
        timer.cancel()
        connection.close()
