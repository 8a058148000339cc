"""JWKS sources that misbehave, served for real on loopback: one that drips its answer, one
that sends too much, one whose document is nested past any parser's depth. Each must be
"no key" (KeySourceUnavailable: a 503, retried only after the back-off), never a request held
for long, memory without bound, or a 500."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import jwt
import orjson
import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from registry.tokens.jwks_fetch import MAX_JWKS_BYTES
from registry.tokens.keys import JwksKey, JwksKeySet, KeySourceUnavailable

KID = "hostile-test-key"


def jwks_document() -> bytes:
    """A valid one-key JWKS document (EC P-256)."""
    key = ec.generate_private_key(ec.SECP256R1()).public_key()
    jwk = jwt.algorithms.ECAlgorithm.to_jwk(key, as_dict=True)
    return orjson.dumps({"keys": [{**jwk, "kid": KID, "use": "sig", "alg": "ES256"}]})


@dataclass
class HostileServer:
    """A loopback HTTP server whose every answer is written by `answer(connection)`."""

    answer: Callable[[socket.socket, HostileServer], None]
    connections: int = 0
    sent: int = 0
    done: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        """The JWKS URL."""
        return f"http://127.0.0.1:{self.port}/jwks.json"

    def serve(self) -> None:
        """Answer connections until the listener is closed."""
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                request = b""
                while b"\r\n\r\n" not in request and (chunk := conn.recv(4096)):
                    request += chunk
                # OSError: the client hung up, which is what a deadline or a cap should do.
                with contextlib.suppress(OSError):
                    self.answer(conn, self)
            self.done.set()

    def send(self, conn: socket.socket, data: bytes) -> None:
        """Send and count."""
        conn.sendall(data)
        self.sent += len(data)

    def close(self) -> None:
        """Stop listening."""
        self.listener.close()


@pytest.fixture
def hostile() -> Iterator[Callable[..., HostileServer]]:
    """Start hostile servers; each is closed at the end of the test."""
    started: list[HostileServer] = []

    def start(answer: Callable[[socket.socket, HostileServer], None]) -> HostileServer:
        server = HostileServer(answer)
        started.append(server)
        return server

    yield start
    for server in started:
        server.close()


HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"


def test_a_well_behaved_source_gives_its_key(hostile):
    """The fetch itself works: a plain 200 with the document gives the key."""
    body = jwks_document()

    def answer(conn: socket.socket, server: HostileServer) -> None:
        server.send(conn, HEAD + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)

    keys = JwksKeySet(hostile(answer).url, timeout=5.0)
    found = keys.key_for(KID)
    assert found is not None and found.algorithm == "ES256"


def test_a_dripping_source_is_cut_off_at_the_total_deadline(hostile):
    """One byte every 50 ms never trips a per-read timeout of 0.5 s; the fetch's total
    deadline of 0.5 s must end it long before the document is complete."""
    body = HEAD + b"\r\n" + jwks_document()

    def answer(conn: socket.socket, server: HostileServer) -> None:
        for byte in body:
            server.send(conn, bytes([byte]))
            time.sleep(0.05)

    server = hostile(answer)
    keys = JwksKeySet(server.url, timeout=0.5)
    with pytest.raises(KeySourceUnavailable):
        keys.key_for(KID)
    assert server.done.wait(60)
    # Cut off: the server could not send (much) more than the first half.
    assert server.sent < len(body) // 2


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "until-close"])
def test_a_source_sending_too_much_is_refused(hostile, declared: bool):
    """A valid document padded to 64 MB: refused (with or without Content-Length), the rest
    never read.

    "Never read" is seen from the server: it could not hand the whole document to the
    kernel. So the padding must be more than loopback's socket buffers can hold between
    them (Linux lets them grow to tcp_rmem's 32 MB plus tcp_wmem's 4 MB by default): with 4
    MB, the buffers sometimes took all of it before the client hung up.
    """
    document = jwks_document()
    padded = document[:-1] + b', "pad": "' + b"x" * (64 << 20) + b'"}'

    def answer(conn: socket.socket, server: HostileServer) -> None:
        length = f"Content-Length: {len(padded)}\r\n" if declared else ""
        server.send(conn, HEAD + length.encode() + b"\r\n")
        for start in range(0, len(padded), 64 * 1024):
            server.send(conn, padded[start : start + 64 * 1024])

    server = hostile(answer)
    keys = JwksKeySet(server.url, timeout=10.0)
    with pytest.raises(KeySourceUnavailable):
        keys.key_for(KID)
    assert server.done.wait(60)
    assert server.sent < len(padded)
    assert len(padded) > MAX_JWKS_BYTES


def test_a_deeply_nested_document_is_no_key_and_not_refetched_at_once(hostile):
    """100,000 nested arrays (RecursionError for the standard library): no key, and the next
    request within the back-off does not fetch again (the cooldown)."""
    body = b"[" * 100_000 + b"]" * 100_000

    def answer(conn: socket.socket, server: HostileServer) -> None:
        server.send(conn, HEAD + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)

    server = hostile(answer)
    now = [1000.0]
    keys = JwksKeySet(server.url, timeout=5.0, failure_backoff=2.0, clock=lambda: now[0])
    with pytest.raises(KeySourceUnavailable):
        keys.key_for(KID)
    now[0] += 1.0
    with pytest.raises(KeySourceUnavailable):
        keys.key_for(KID)
    assert keys.fetches == 1 and server.connections == 1
    now[0] += 2.0
    with pytest.raises(KeySourceUnavailable):
        keys.key_for(KID)
    assert keys.fetches == 2


@pytest.mark.parametrize(
    "body",
    [
        b'{"keys": {"a": 1}}',
        b'{"keys": [{"kty": "RSA", "kid": "hostile-test-key", "n": 5, "e": []}]}',
        b"\xff\xfe",
        b"",
        b'{"keys": [' + b"[" * 5000 + b"]" * 5000 + b"]}",
    ],
    ids=["keys-not-a-list", "rsa-of-wrong-types", "not-utf8", "empty", "nested-inside-keys"],
)
def test_any_unparseable_document_is_no_key(hostile, body: bytes):
    """Whatever the document holds, the answer is KeySourceUnavailable, never an exception."""

    def answer(conn: socket.socket, server: HostileServer) -> None:
        server.send(conn, HEAD + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)

    with pytest.raises(KeySourceUnavailable):
        JwksKeySet(hostile(answer).url, timeout=5.0).key_for(KID)


def hanging_until(release: threading.Event, body: bytes | None = None):
    """An answer that sends nothing until release is set, then body (if any) as a 200."""

    def answer(conn: socket.socket, server: HostileServer) -> None:
        release.wait(60)
        if body is not None:
            server.send(conn, HEAD + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)

    return answer


def test_a_hanging_source_is_backed_off_from_the_end_of_the_failed_fetch(hostile):
    """A source that never answers costs one fetch up to its deadline; the back-off counts
    from when that fetch gave up, so the next verification is answered at once (the
    documented 503) instead of waiting for the deadline again. The deadline is longer than
    the back-off here, as the 5 s deadline is longer than the 2 s back-off by default."""
    release = threading.Event()
    server = hostile(hanging_until(release))
    keys = JwksKeySet(server.url, timeout=1.0, failure_backoff=0.5)
    try:
        with pytest.raises(KeySourceUnavailable):
            keys.key_for(KID)
        with pytest.raises(KeySourceUnavailable):
            keys.key_for(KID)
        assert keys.fetches == 1 and server.connections == 1
    finally:
        release.set()


def test_keys_last_known_good_answer_while_a_hanging_source_is_asked(hostile):
    """Past the lifespan the request that finds the set expired reads it again; while that
    fetch hangs, other requests whose kid the last good set holds are answered from it at
    once, not after the fetch (the source sends the new set only once they were answered),
    and the fetch under way serves a kid it brings without another one."""
    rotated = ec.generate_private_key(ec.SECP256R1()).public_key()
    rotated_jwk = jwt.algorithms.ECAlgorithm.to_jwk(rotated, as_dict=True)
    first = orjson.loads(jwks_document())
    second = orjson.dumps({"keys": [*first["keys"], {**rotated_jwk, "kid": "rotated"}]})
    release, asked = threading.Event(), threading.Event()
    answers = iter([orjson.dumps(first), second])

    def answer(conn: socket.socket, server: HostileServer) -> None:
        body = next(answers)
        if body is second:
            asked.set()
            release.wait(60)
        server.send(conn, HEAD + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)

    server = hostile(answer)
    now = [1000.0]
    keys = JwksKeySet(server.url, timeout=3.0, lifespan=300.0, clock=lambda: now[0])
    assert keys.key_for(KID) is not None
    now[0] += 301.0
    refreshed: list[JwksKey | None] = []
    refresher = threading.Thread(target=lambda: refreshed.append(keys.key_for(KID)))
    refresher.start()
    try:
        assert asked.wait(60)  # the refresher's fetch is at the source, which holds it
        stale = keys.key_for(KID)
        assert stale is not None and stale.algorithm == "ES256"
        assert refresher.is_alive()  # answered while the fetch was still under way
    finally:
        release.set()
        refresher.join(60)
    assert refreshed and refreshed[0] is not None
    assert keys.key_for("rotated") is not None
    assert keys.fetches == 2 and server.connections == 2
