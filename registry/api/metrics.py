"""Prometheus metrics (docs/operations.md): `GET /metrics`, summed over every gunicorn worker.

Each worker counts what it answers into prometheus_client's multiprocess files (the folder
PROMETHEUS_MULTIPROC_DIR, which gunicorn.conf.py sets up, wipes at master start and in which
it marks dead workers and folds their counts into an archive); `/metrics` merges every file
(registry.api.metrics_files), so whichever worker answers a scrape, the figures are the
whole service's. Without that variable (the Flask test client, a plain
`flask run`) the figures are this process's own.

Labels are bounded on purpose: a request is counted under its route template
(`/registry/origins/<originId>`, never the id), unrouted paths under `unmatched`, unknown
methods under `other`, 503s and token rejections under a fixed list of causes and reasons.
`/metrics` itself is not counted. The current generation, its load time and its change counts
are read from the database at scrape time (two tiny queries), so they are right whichever
worker answers.
"""

from __future__ import annotations

import fcntl
import logging
import os
import platform
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
from registry.api.request_log import observe_requests
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
# Prometheus text format 0.0.4 (docs/operations.md), whatever the library's newest default is.
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
    "graph_layout",
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

EXPORTS_IN_FLIGHT = Gauge(
    "registry_exports_in_flight",
    "Exports (NDJSON, CSV) streaming right now, summed over live workers.",
    multiprocess_mode="livesum",
)
EXPORT_REFUSALS = Counter(
    "registry_exports_refused",
    "Exports refused before their first byte: the instance's limit (503, REGISTRY_MAX_EXPORTS)"
    " or the database (503).",
    ("cause",),
)
EXPORT_CUTS = Counter(
    "registry_exports_cut",
    "Exports that ended before their last row: the client went away, stopped reading for the"
    " send timeout, the database failed, the worker died (counted by the master), or anything"
    " else (a shutdown).",
    ("cause",),
)
EXPORT_REFUSAL_CAUSES = ("limit", "unavailable")
# worker_lost is counted by gunicorn's master for a worker that died with exports in flight
# (gunicorn.conf.py, registry.api.metrics_files.lost_exports).
EXPORT_CUT_CAUSES = ("client_gone", "send_timeout", "database", "worker_lost", "other")

for _cause in EXPORT_REFUSAL_CAUSES:
    EXPORT_REFUSALS.labels(_cause)
for _cause in EXPORT_CUT_CAUSES:
    EXPORT_CUTS.labels(_cause)
for _cause in UNAVAILABLE_CAUSES:
    UNAVAILABLE.labels(_cause)
for _reason in REJECTION_REASONS:
    TOKEN_REJECTIONS.labels(_reason)


def rejection_reason(token_reason: str) -> str:
    """The reason label of a TokenRejected reason (a short code; see the verifier)."""
    return _REASON_LABELS.get(token_reason, "malformed")


def count_token_rejection(reason: str) -> None:
    """One request refused for its token; reason is one of REJECTION_REASONS."""
    TOKEN_REJECTIONS.labels(reason).inc()


def count_unavailable(cause: str) -> None:
    """One 503; cause is one of UNAVAILABLE_CAUSES."""
    UNAVAILABLE.labels(cause).inc()


def count_export_refused(cause: str) -> None:
    """One export refused; cause is one of EXPORT_REFUSAL_CAUSES."""
    EXPORT_REFUSALS.labels(cause).inc()


def observe_export_started() -> None:
    """One more export streaming in this process."""
    EXPORTS_IN_FLIGHT.inc()


def observe_export_ended(cut: str | None) -> None:
    """One export ended: whole (cut None), or cut for a cause of EXPORT_CUT_CAUSES."""
    EXPORTS_IN_FLIGHT.dec()
    if cut is not None:
        EXPORT_CUTS.labels(cut).inc()


# This process's last pool figures written: (pid, open, in use, waiting). A gauge is a
# write to a shared file under a lock; a request changes at most the in-use one.
_pool_written: tuple[int, int, int, int] = (-1, -1, -1, -1)


def observe_pool(database: Database) -> None:
    """Record this worker's pool figures (called when a connection is lent and given back).

    Only the figures that changed since this process last wrote them are written.
    """
    global _pool_written
    stats = database.pool_stats()
    if stats is None:
        return
    size = stats.get("pool_size", 0)
    in_use = size - stats.get("pool_available", 0)
    figures = (os.getpid(), size, in_use, stats.get("requests_waiting", 0))
    last = _pool_written
    if figures == last:
        return
    fresh = figures[0] != last[0]
    if fresh or figures[1] != last[1]:
        POOL_OPEN.set(figures[1])
    if fresh or figures[2] != last[2]:
        POOL_IN_USE.set(figures[2])
    if fresh or figures[3] != last[3]:
        POOL_WAITING.set(figures[3])
    _pool_written = figures


# (route, method, status) -> the request counter's and the duration histogram's children:
# looked up once per combination, which the labels' bounds keep to a few dozen.
_request_series: dict[tuple[str, str, str], tuple[Any, Any]] = {}


def count_request(environ: dict[str, Any], status: int, seconds: float) -> None:
    """Count one answered request by route template, method and status, and time it.

    Called by the request log's middleware as each answer ends; a scrape is not counted.
    """
    route = environ.get(ROUTE_KEY, UNMATCHED)
    if route == METRICS_PATH:
        return
    method = environ.get("REQUEST_METHOD", "")
    key = (route, method if method in METHODS else "other", str(status or 500))
    series = _request_series.get(key)
    if series is None:
        series = _request_series[key] = (REQUESTS.labels(*key), DURATION.labels(route))
    series[0].inc()
    series[1].observe(seconds)


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
            "The generation answering requests that name none (docs/api.md, Generations and"
            " conditional requests).",
            value=live.generation,
        )
        yield GaugeMetricFamily(
            "registry_generation_loaded_timestamp_seconds",
            "When the live generation was committed (Unix time).",
            value=live.loaded_at.timestamp(),
        )
        yield from _change_set_series(live)
        if live.changes is None:
            return  # loaded before change sets were recorded: no series rather than a guess
        changes = GaugeMetricFamily(
            "registry_generation_changes",
            "Origins the live generation added, removed and changed against its previous"
            " generation (docs/api.md, Changes between generations), by kind.",
            labels=("kind",),
        )
        for kind, count in live.changes.items():
            changes.add_metric((kind,), count)
        yield changes


def _change_set_series(live: LiveGeneration) -> Iterator[Metric]:
    """The change sets kept (docs/api.md, Changes since any generation) and their bytes; none when
    no change set is kept."""
    kept = live.change_sets
    if kept is None:
        return
    yield GaugeMetricFamily(
        "registry_change_sets_kept",
        "Generations whose change set is kept, so /registry/changes?since= can answer from"
        " them (docs/api.md, Changes since any generation).",
        value=kept.count,
    )
    if kept.oldest_since is not None:
        yield GaugeMetricFamily(
            "registry_change_sets_oldest_since",
            "The oldest generation a consumer may give as since= (docs/api.md, Changes since any"
            " generation): an older one is answered 410.",
            value=kept.oldest_since,
        )
    if kept.size_bytes is not None:
        yield GaugeMetricFamily(
            "registry_change_sets_bytes",
            "Disk used by the kept change sets, as measured after each load.",
            value=kept.size_bytes,
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
    observe_requests(app, count_request)
    app.register_blueprint(bp)
    POOL_MAX.set(int(app.config["REGISTRY_POOL_MAX_SIZE"]))
