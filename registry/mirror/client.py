"""The mirror's HTTP client: urllib3, one connection pool, answers streamed line by line.

urllib3 rather than the standard library: its connect and read timeouts hold while a body
streams, a chunked body that ends without its last chunk raises `ProtocolError` instead of
reading as complete (a cut export never looks whole, docs/export.md), and one connection is
reused from step to step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from types import TracebackType
from typing import Any

import orjson
import urllib3
from urllib3.exceptions import HTTPError, SSLError

NDJSON = "application/x-ndjson"
JSON = "application/json"
# The service never goes this long without a byte while it answers (each FETCH of an export
# is bounded by its statement timeout, 5 s by default); connecting takes far less.
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 60.0
# A body is read this much at a time and split into lines in one call per block (urllib3's
# own line iterator costs a Python frame per line).
BLOCK_BYTES = 1 << 20
# An error body is read for its message only, never whole whatever its size.
ERROR_BODY_LIMIT = 64 * 1024
USER_AGENT = "registry-mirror/1"


class _Waiting:
    """Whether the mirror's main thread is blocked on the service now: a request sent and its
    answer's headers not come yet, or the next block of a body being read. A signal that asks
    the mirror to stop ends such a wait at once (command.stop_on_signals) rather than at its
    read timeout, a minute away when the service or the network hangs."""

    now = False

    @contextmanager
    def during(self) -> Iterator[None]:
        """Mark the block as a wait on the service."""
        self.now = True
        try:
            yield
        finally:
            self.now = False


WAITING = _Waiting()


class Refused(Exception):
    """401 or 403: the token is not good enough; retrying cannot help."""

    def __init__(self, status: int, message: str):
        super().__init__(f"the service refused the token ({status}): {message}")
        self.status = status


class Failed(Exception):
    """An answer or body the mirror cannot use, and that asking again would not change."""


class Retryable(Exception):
    """A failure worth asking again: the connection, a cut body, 429, 5xx.

    `retry_after` is the service's `Retry-After` in seconds when it gave one.
    """

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


@dataclass
class Answer:
    """One HTTP answer whose body is read as it arrives."""

    status: int
    headers: Any
    raw: urllib3.BaseHTTPResponse

    def header(self, name: str) -> str | None:
        """One header's value, or None."""
        value = self.headers.get(name)
        return None if value is None else str(value)

    def blocks(self) -> Iterator[bytes]:
        """The body as it arrives, in blocks of up to BLOCK_BYTES that end anywhere, gzip
        undone (nginx compresses; urllib3 leaves a chunked body as sent unless told); a cut
        body raises Retryable, whatever was read before it."""
        stream = self.raw.stream(BLOCK_BYTES, decode_content=True)
        while True:
            try:
                with WAITING.during():
                    block = next(stream, None)
            except HTTPError as error:
                raise Retryable(f"the answer was cut short: {error}") from error
            if block is None:
                return
            yield block

    def json(self) -> Any:
        """A small JSON body, decoded."""
        try:
            with WAITING.during():
                text = self.raw.read()
            return orjson.loads(text)
        except HTTPError as error:
            raise Retryable(f"the answer was cut short: {error}") from error
        except orjson.JSONDecodeError as error:
            raise Failed(
                f"the service answered {self.status} with a body that is not JSON"
            ) from error

    def message(self) -> str:
        """What an error answer says: its `error` and `message`, else the start of its body."""
        try:
            with WAITING.during():
                text = self.raw.read(ERROR_BODY_LIMIT)
        except HTTPError:
            return "(the answer was cut short)"
        try:
            body = orjson.loads(text)
        except orjson.JSONDecodeError:
            return text[:200].decode("utf-8", "replace").strip() or "(no body)"
        if not isinstance(body, dict):
            return str(body)[:200]
        parts = [str(body[key]) for key in ("error", "message") if body.get(key)]
        return ": ".join(parts) or str(body)[:200]

    def close(self) -> None:
        """Give the connection back for the next request once the body was read to its end;
        a body left unread closes it instead (reading the rest could take minutes)."""
        if not self.raw.closed:
            self.raw.close()
        self.raw.release_conn()

    def __enter__(self) -> Answer:
        """The answer, closed when the block ends."""
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the answer."""
        self.close()


class Client:
    """GET requests to one registry; urllib3 keeps the connection.

    `token` is the token, or what gives it at each request (a token file read again, so
    that a token replaced in it is sent from the next request on).
    """

    def __init__(self, base_url: str, token: str | Callable[[], str]):
        self.base_url = base_url.rstrip("/")
        self.token = token if callable(token) else (lambda: token)
        self.pool = urllib3.PoolManager(
            retries=False,
            timeout=urllib3.Timeout(connect=CONNECT_TIMEOUT_S, read=READ_TIMEOUT_S),
            headers={"Accept-Encoding": "gzip", "User-Agent": USER_AGENT},
        )

    def get(self, path: str, accept: str, headers: dict[str, str] | None = None) -> Answer:
        """GET base_url + path; the body is left to stream. Connection failures and the
        answers worth asking again (429, 5xx) raise Retryable, 401 and 403 Refused."""
        try:
            with WAITING.during():
                raw = self.pool.request(
                    "GET",
                    self.base_url + path,
                    headers={
                        **self.pool.headers,
                        "Authorization": f"Bearer {self.token()}",
                        "Accept": accept,
                        **(headers or {}),
                    },
                    preload_content=False,
                    decode_content=True,
                )
        except SSLError as error:
            raise Failed(f"cannot reach {self.base_url}: {error}") from error
        except HTTPError as error:
            raise Retryable(f"cannot reach {self.base_url}: {error}") from error
        answer = Answer(raw.status, raw.headers, raw)
        try:
            _check_status(answer)
        except BaseException:
            answer.raw.close()
            raise
        return answer

    def close(self) -> None:
        """Close every pooled connection."""
        self.pool.clear()


def _check_status(answer: Answer) -> None:
    """Raise for the statuses no step goes on from: 401/403, 429, 5xx."""
    status = answer.status
    if status in (401, 403):
        raise Refused(status, answer.message())
    if status in (429, 503):
        raise Retryable(
            f"the service answered {status}: {answer.message()}",
            retry_after_seconds(answer.header("Retry-After")),
        )
    if status >= 500:
        raise Retryable(f"the service answered {status}: {answer.message()}")


def retry_after_seconds(value: str | None) -> float | None:
    """Retry-After as seconds from now (RFC 9110: a number of seconds or an HTTP-date), or
    None when absent or unreadable."""
    if value is None:
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    from datetime import UTC, datetime

    if when.tzinfo is None:
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())
