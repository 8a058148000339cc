"""One JSON line per request, and an X-Request-ID on every answer.

A WSGI middleware around the Flask app, so that every request is logged exactly once, whatever
answered it (a view, an error handler, the token hook or Flask itself), with the bytes really
produced and the time until the last of them. The request id is the caller's X-Request-ID when
it looks like one (nginx sends its own when the client sent none), else a new one; it is
returned in the answer and attached to every log line written while the request runs.

What is never logged: headers (so no token and no cookie), query values other than the API's
own parameters, and anything shaped like a JWT, wherever it turns up.
"""

from __future__ import annotations

import logging
import math
import re
import sys
import time
import traceback
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import IO, Any
from urllib.parse import parse_qsl

import orjson
from flask import Flask

from schemas.params import FILTER_NAMES

REQUEST_ID_HEADER = "X-Request-ID"
# The same rule as nginx's map in deploy/nginx.conf: a short token of safe characters, and
# nothing that starts like a JWT (a client must not get a token into our logs this way).
_REQUEST_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@=+/-]{0,127}\Z")
_JWT = re.compile(r"eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]*)?")
_KNOWN_PARAMETERS = frozenset(
    (*FILTER_NAMES, "page", "limit", "generation", "kind", "block", "since")
)
_MAX_PATH = 512
_MAX_VALUE = 100
_MAX_NAME = 40

request_log = logging.getLogger("registry.requests")
current_request_id: ContextVar[str | None] = ContextVar("registry_request_id", default=None)

StartResponse = Callable[..., Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


def request_id_from(header: str | None) -> str:
    """The caller's request id when it is acceptable, else a new random one."""
    if header and _REQUEST_ID.match(header) and not header.startswith("eyJ"):
        return header
    return uuid.uuid4().hex


def _wsgi_text(value: str) -> str:
    """A WSGI string (bytes as latin-1) as the UTF-8 text the client sent."""
    if value.isascii():
        return value
    return value.encode("latin-1", "replace").decode("utf-8", "replace")


def _clip(text: str, limit: int) -> str:
    """text without JWT-shaped parts, cut to limit characters."""
    if "eyJ" in text:
        text = _JWT.sub("[jwt]", text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def loggable_path(environ: dict[str, Any]) -> str:
    """SCRIPT_NAME and PATH_INFO as the client sent them, JWT-shaped parts removed."""
    path = _wsgi_text(environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", ""))
    return _clip(path, _MAX_PATH)


def loggable_query(query_string: str) -> str:
    """The API's own parameters with their values; any other parameter's value redacted."""
    if not query_string:
        return ""
    pairs = []
    for name, value in parse_qsl(_wsgi_text(query_string), keep_blank_values=True):
        if name in _KNOWN_PARAMETERS:
            pairs.append(f"{name}={_clip(value, _MAX_VALUE)}")
        else:
            pairs.append(f"{_clip(name, _MAX_NAME)}=[redacted]")
    return _clip("&".join(pairs), _MAX_PATH)


_second_text: tuple[int, str] = (-1, "")


def utc_millis(created: float) -> str:
    """created (seconds since the epoch) as 2026-11-23T09:10:11.123Z.

    The same text as datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds")
    with Z for +00:00 (microseconds rounded half to even, then cut to milliseconds), without
    building a datetime each time: the seconds part is worked out once per second.
    """
    global _second_text
    whole = math.floor(created)
    micros = round((created - whole) * 1e6)
    if micros >= 1_000_000:
        whole += 1
        micros -= 1_000_000
    second, text = _second_text
    if second != whole:
        text = datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        _second_text = (whole, text)
    return f"{text}.{micros // 1000:03d}Z"


class JsonLineFormatter(logging.Formatter):
    """Every record as one JSON object on one line; a traceback goes in `exception`."""

    def format(self, record: logging.LogRecord) -> str:
        """The record's fields (a request line's own, or the message) as JSON."""
        line: dict[str, Any] = {
            "time": utc_millis(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        fields = getattr(record, "request_fields", None)
        if fields is not None:
            line.update(fields)
        else:
            request_id = current_request_id.get()
            if request_id is not None:
                line["request_id"] = request_id
            line["message"] = record.getMessage()
        if record.exc_info:
            line["exception"] = "".join(traceback.format_exception(*record.exc_info)).rstrip()
        return orjson.dumps(line).decode()


class StderrHandler(logging.StreamHandler):
    """Writes to whatever sys.stderr is at the moment (gunicorn's, or a test's capture)."""

    def __init__(self) -> None:
        """A handler with no stream of its own."""
        logging.Handler.__init__(self)

    @property
    def stream(self) -> IO[str]:
        """The current standard error."""
        return sys.stderr

    @stream.setter
    def stream(self, _value: IO[str]) -> None:
        """Ignore: the stream is always the current standard error."""


def _sole_json_handler() -> StderrHandler | None:
    """The one handler a request record would reach, when it is our plain JSON one.

    Then the request line can be written directly, byte for byte what the handler would
    write, without a LogRecord and the logging machinery (a tenth of a light request's time).
    Anything else in the way (another handler, a filter, a level) takes the ordinary path.
    """
    if request_log.filters:
        return None
    found: list[logging.Handler] = []
    logger: logging.Logger | None = request_log
    while logger is not None:
        found.extend(logger.handlers)
        if not logger.propagate:
            break
        logger = logger.parent
    if len(found) != 1:
        return None
    handler = found[0]
    if (
        not isinstance(handler, StderrHandler)
        or type(handler.formatter) is not JsonLineFormatter
        or handler.filters
        or handler.level > logging.INFO
    ):
        return None
    return handler


def write_request_line(fields: dict[str, Any], created: float | None = None) -> None:
    """Log one request's line: directly when only our JSON handler would see it."""
    handler = _sole_json_handler()
    if handler is None:
        request_log.info("request", extra={"request_fields": fields})
        return
    when = time.time() if created is None else created
    line = {"time": utc_millis(when), "level": "info", "logger": request_log.name}
    line.update(fields)
    text = orjson.dumps(line).decode() + handler.terminator
    with handler.lock:  # type: ignore[union-attr]  # created by Handler.__init__
        stream = handler.stream
        stream.write(text)
        stream.flush()


# Called when a request's answer has ended: (WSGI environ, status code, seconds taken).
RequestObserver = Callable[[dict[str, Any], int, float], None]


class _LoggedBody:
    """The response body, passed through; the request is logged once it ends or closes."""

    __slots__ = ("_body", "_finish", "_finished", "_sent")

    def __init__(self, body: Iterable[bytes], finish: Callable[[int], None]):
        """Wrap body; finish(bytes sent) is called exactly once."""
        self._body = body
        self._finish = finish
        self._sent = 0
        self._finished = False

    def __iter__(self) -> Iterator[bytes]:
        """Yield the body's chunks, counting their bytes."""
        for chunk in self._body:
            self._sent += len(chunk)
            yield chunk
        self._end()

    def close(self) -> None:
        """Close the wrapped body (WSGI requires it) and log if that has not happened yet."""
        try:
            close = getattr(self._body, "close", None)
            if close is not None:
                close()
        finally:
            self._end()

    def _end(self) -> None:
        """Log the request, once."""
        if not self._finished:
            self._finished = True
            self._finish(self._sent)


class RequestLogMiddleware:
    """WSGI middleware: the request id in and out, the request's log line, and its observers.

    This is the one wrapper around the Flask app: whatever else wants to know how a request
    ended (the metrics) adds an observer (`observe_requests`) rather than wrapping the app
    again, so a request pays for one body wrapper and one clock, not one per concern.
    """

    def __init__(self, app: WsgiApp):
        """Wrap a WSGI app."""
        self.app = app
        self.observers: list[RequestObserver] = []

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        """Run the request with its id set, and log it when its body has been produced."""
        started = time.perf_counter()
        request_id = request_id_from(environ.get("HTTP_X_REQUEST_ID"))
        environ["registry.request_id"] = request_id
        current_request_id.set(request_id)
        status: list[int] = [0]

        def start(status_line: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            """Note the status and add the request id header."""
            status[0] = int(status_line[:3])
            headers = [(k, v) for k, v in headers if k.lower() != "x-request-id"]
            headers.append((REQUEST_ID_HEADER, request_id))
            return start_response(status_line, headers, exc_info)

        def finish(sent: int) -> None:
            """Tell the observers, then write the request's line."""
            elapsed = time.perf_counter() - started
            try:
                for observe in self.observers:
                    observe(environ, status[0], elapsed)
            finally:
                if request_log.isEnabledFor(logging.INFO):
                    fields = {
                        "request_id": request_id,
                        "method": environ.get("REQUEST_METHOD", ""),
                        "path": loggable_path(environ),
                        "query": loggable_query(environ.get("QUERY_STRING", "")),
                        "status": status[0],
                        "duration_ms": round(elapsed * 1000, 2),
                        "bytes": sent,
                    }
                    write_request_line(fields)
                current_request_id.set(None)

        try:
            body = self.app(environ, start)
        except BaseException:
            # Flask answers every exception itself; this is the server's own failure.
            status[0] = status[0] or 500
            finish(0)
            raise
        return _LoggedBody(body, finish)


def observe_requests(app: Flask, observer: RequestObserver) -> None:
    """Call observer(environ, status, seconds) as each request ends.

    register_request_logging(app) must have run: its middleware is the one that calls.
    """
    middleware = app.wsgi_app
    if not isinstance(middleware, RequestLogMiddleware):
        raise RuntimeError("register_request_logging(app) must come first")
    middleware.observers.append(observer)


def configure_json_logging() -> None:
    """Send the registry's and psycopg's log records to standard error as JSON lines, once."""
    # psycopg's pool reports failed connection attempts there; without a handler Python's
    # last-resort one would print them as bare text.
    for name in ("registry", "psycopg"):
        logger = logging.getLogger(name)
        if not any(isinstance(handler, StderrHandler) for handler in logger.handlers):
            handler = StderrHandler()
            handler.setFormatter(JsonLineFormatter())
            logger.addHandler(handler)


def register_request_logging(app: Flask) -> None:
    """JSON log lines for the app's records, and one per request."""
    configure_json_logging()
    app.wsgi_app = RequestLogMiddleware(app.wsgi_app)  # type: ignore[method-assign]
