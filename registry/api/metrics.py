"""Prometheus metrics (contract §9): `GET /metrics`, summed over every gunicorn worker.

Each worker counts what it answers into prometheus_client's multiprocess files (the folder
PROMETHEUS_MULTIPROC_DIR, which gunicorn.conf.py sets up, wipes at master start and in which
it marks dead workers and folds their counts into an archive); `/metrics` merges every file
(registry.api.metrics_files), so whichever worker answers a scrape, the figures are the
whole service's. Without that variable (the Flask test client, a plain
`flask run`) the figures are this process's own.

Labels are bounded on purpose: a request is counted under its route template
(`/registry/origins/<originId>`, never the id), unrouted paths under `unmatched`, unknown
methods under `other`, 503s and token rejections under a fixed list of causes and reasons.
`/metrics` itself is not counted. The current generation and its load time are read from the
database at scrape time (one tiny query), so they are right whichever worker answers.
"""

from __future__ import annotations

import fcntl
import logging
import os
import platform
import time
from collections.abc import Callable, Iterable, Iterator
from importlib import metadata
from typing import Any

from flask import Blueprint, Flask, Response, current_app, request
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import REGISTRY, Collector

from registry.api.metrics_files import merged_text
from registry.api.responses import GET_ROUTE
from registry.database.pool import Database
from registry.database.status import LiveGeneration, get_live_generation
from schemas.params import refuse_any_query

log = logging.getLogger("registry.metrics")
# The *_created series only double the output; multiprocess mode leaves them out anyway.
disable_created_metrics()

bp = Blueprint("metrics", __name__)

METRICS_PATH = "/metrics"
# The lock file gunicorn.conf.py takes while it folds a dead worker's files into the archive.
METRICS_LOCK = "compaction.lock"
# Prometheus text format 0.0.4 (contract §9), whatever the library's newest default is.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
ROUTE_KEY = "registry.route"
UNMATCHED = "unmatched"
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
# 1 ms to 5 s: a lookup takes a few ms, the statement budget is 5 s.
DURATION_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)

UNAVAILABLE_CAUSES = (
    "pool_timeout",
    "statement_timeout",
    "database_down",
    "no_graph",
    "jwks_unavailable",
)
REJECTION_REASONS = (
    "missing",
    "malformed",
    "bad_signature",
    "algorithm_not_allowed",
    "unknown_key",
    "expired",
    "not_yet_valid",
    "wrong_audience",
    "wrong_issuer",
    "forbidden_role",
    "jwks_unavailable",
)
# TokenRejected.reason (registry.tokens.verifier) to a reason label; anything else is malformed.
_REASON_LABELS = {
    "InvalidSignatureError": "bad_signature",
    "algorithm not allowed": "algorithm_not_allowed",
    "InvalidAlgorithmError": "algorithm_not_allowed",
    "no kid": "unknown_key",
    "unknown kid": "unknown_key",
    "key does not fit the algorithm": "unknown_key",
    "no key for the algorithm": "unknown_key",
    "ExpiredSignatureError": "expired",
    "ImmatureSignatureError": "not_yet_valid",
    "InvalidAudienceError": "wrong_audience",
    "InvalidIssuerError": "wrong_issuer",
}

REQUESTS = Counter(
    "registry_http_requests",
    "HTTP requests answered, by route template, method and status (not /metrics).",
    ("route", "method", "status"),
)
DURATION = Histogram(
    "registry_http_request_duration_seconds",
    "Time from a request's arrival to the last byte of its answer, by route template.",
    ("route",),
    buckets=DURATION_BUCKETS,
)
UNAVAILABLE = Counter(
    "registry_unavailable",
    "Answers 503 (Service Unavailable), by cause.",
    ("cause",),
)
TOKEN_REJECTIONS = Counter(
    "registry_token_rejections",
    "Requests under /registry refused for their token (401, 403 or 503), by reason.",
    ("reason",),
)
POOL_MAX = Gauge(
    "registry_db_pool_max_connections",
    "Connections the workers' pools may open, summed over live workers.",
    multiprocess_mode="livesum",
)
POOL_OPEN = Gauge(
    "registry_db_pool_connections",
    "Connections the workers' pools hold open, summed over live workers.",
    multiprocess_mode="livesum",
)
POOL_IN_USE = Gauge(
    "registry_db_pool_connections_in_use",
    "Connections lent to a request right now, summed over live workers.",
    multiprocess_mode="livesum",
)
POOL_WAITING = Gauge(
    "registry_db_pool_requests_waiting",
    "Requests waiting for a pooled connection, summed over live workers.",
    multiprocess_mode="livesum",
)

for _cause in UNAVAILABLE_CAUSES:
    UNAVAILABLE.labels(_cause)
for _reason in REJECTION_REASONS:
    TOKEN_REJECTIONS.labels(_reason)

StartResponse = Callable[..., Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


def rejection_reason(token_reason: str) -> str:
    """The reason label of a TokenRejected reason (a short code; see the verifier)."""
    return _REASON_LABELS.get(token_reason, "malformed")


def count_token_rejection(reason: str) -> None:
    """One request refused for its token; reason is one of REJECTION_REASONS."""
    TOKEN_REJECTIONS.labels(reason).inc()


def count_unavailable(cause: str) -> None:
    """One 503; cause is one of UNAVAILABLE_CAUSES."""
    UNAVAILABLE.labels(cause).inc()


def observe_pool(database: Database) -> None:
    """Record this worker's pool figures (called when a connection is lent and given back)."""
    stats = database.pool_stats()
    if stats is None:
        return
    size = stats.get("pool_size", 0)
    POOL_OPEN.set(size)
    POOL_IN_USE.set(size - stats.get("pool_available", 0))
    POOL_WAITING.set(stats.get("requests_waiting", 0))


class _CountedBody:
    """The response body, passed through; the request is counted once it ends or closes."""

    def __init__(self, body: Iterable[bytes], finish: Callable[[], None]):
        """Wrap body; finish() is called exactly once."""
        self._body = body
        self._finish = finish
        self._finished = False

    def __iter__(self) -> Iterator[bytes]:
        """Yield the body's chunks, then count the request."""
        yield from self._body
        self._end()

    def close(self) -> None:
        """Close the wrapped body (WSGI requires it) and count if that has not happened yet."""
        try:
            close = getattr(self._body, "close", None)
            if close is not None:
                close()
        finally:
            self._end()

    def _end(self) -> None:
        """Count the request, once."""
        if not self._finished:
            self._finished = True
            self._finish()


class RequestMetricsMiddleware:
    """WSGI middleware: count each request by route template, method and status, and time it."""

    def __init__(self, app: WsgiApp):
        """Wrap a WSGI app."""
        self.app = app

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        """Run the request; count it when its body has been produced."""
        started = time.perf_counter()
        status = ["500"]

        def start(status_line: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            """Note the status."""
            status[0] = status_line.split(" ", 1)[0]
            return start_response(status_line, headers, exc_info)

        def finish() -> None:
            """Count the request, unless it was a scrape."""
            route = environ.get(ROUTE_KEY, UNMATCHED)
            if route == METRICS_PATH:
                return
            method = environ.get("REQUEST_METHOD", "")
            REQUESTS.labels(route, method if method in METHODS else "other", status[0]).inc()
            DURATION.labels(route).observe(time.perf_counter() - started)

        try:
            body = self.app(environ, start)
        except BaseException:
            finish()
            raise
        return _CountedBody(body, finish)


def _note_route() -> None:
    """Remember the matched route's template for the middleware (before any other hook)."""
    rule = request.url_rule
    request.environ[ROUTE_KEY] = rule.rule if rule is not None else UNMATCHED


class ServiceCollector(Collector):
    """What is read at scrape time: build info, and the live generation from the database."""

    def __init__(self, read_live: Callable[[], LiveGeneration | None] | None):
        """Read the live generation with read_live (None: leave those series out)."""
        self.read_live = read_live

    def collect(self) -> Iterator[Metric]:
        """Build info always; the generation when the database answers."""
        build = GaugeMetricFamily(
            "registry_build_info",
            "The running code: the package version and Python's (value always 1).",
            labels=("version", "python"),
        )
        build.add_metric((_package_version(), platform.python_version()), 1)
        yield build
        if self.read_live is None:
            return
        reachable = GaugeMetricFamily(
            "registry_database_reachable",
            "1 when the scrape could read the live generation from the database, else 0.",
        )
        try:
            live = self.read_live()
        except Exception as error:  # a scrape must answer whatever the database does
            log.debug("metrics: live generation not read: %s", type(error).__name__)
            reachable.add_metric((), 0)
            yield reachable
            return
        reachable.add_metric((), 1)
        yield reachable
        if live is None:
            return
        yield GaugeMetricFamily(
            "registry_generation",
            "The generation answering requests that name none (contract §7).",
            value=live.generation,
        )
        yield GaugeMetricFamily(
            "registry_generation_loaded_timestamp_seconds",
            "When the live generation was committed (Unix time).",
            value=live.loaded_at.timestamp(),
        )


class _LocalCollector(Collector):
    """This process's own metrics (no multiprocess folder): the default registry's."""

    def collect(self) -> Iterable[Metric]:
        """Everything the default registry holds."""
        return REGISTRY.collect()


def _read_live_generation() -> LiveGeneration | None:
    """The live generation, through a connection of this worker's pool."""
    database: Database = current_app.extensions["registry_db"]
    conn = database.getconn()
    try:
        return get_live_generation(conn)
    finally:
        database.putconn(conn)


def _package_version() -> str:
    """The installed package's version."""
    try:
        return metadata.version("broadcast-registry")
    except metadata.PackageNotFoundError:
        return "unknown"


@bp.get(METRICS_PATH, **GET_ROUTE)
def metrics() -> Response:
    """GET /metrics: Prometheus text format, the whole service's figures; no token."""
    refuse_any_query(request.args.to_dict(flat=False))
    service = CollectorRegistry(auto_describe=False)
    service.register(ServiceCollector(_read_live_generation))
    text = generate_latest(service)
    folder = current_app.config.get("PROMETHEUS_MULTIPROC_DIR")
    if not folder:
        local = CollectorRegistry(auto_describe=False)
        local.register(_LocalCollector())
        return _metrics_response(generate_latest(local) + text)
    # gunicorn's master folds dead workers' files into an archive under an exclusive lock
    # (gunicorn.conf.py); reading under a shared one, a scrape never counts a file twice.
    with open(os.path.join(folder, METRICS_LOCK), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)
        return _metrics_response(merged_text(folder) + text)


def _metrics_response(text: bytes) -> Response:
    """Prometheus text format 0.0.4."""
    return Response(text, mimetype=None, content_type=CONTENT_TYPE)


def register_metrics(app: Flask) -> None:
    """Count every request (a WSGI middleware), note route templates, and serve /metrics."""
    app.before_request(_note_route)
    app.wsgi_app = RequestMetricsMiddleware(app.wsgi_app)  # type: ignore[method-assign]
    app.register_blueprint(bp)
    POOL_MAX.set(int(app.config["REGISTRY_POOL_MAX_SIZE"]))
