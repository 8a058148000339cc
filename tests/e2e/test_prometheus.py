"""A real Prometheus scrapes a several-worker gunicorn; its PromQL sums equal what was sent."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from devtools.prometheus_server import prometheus_binary, start_prometheus
from tests.conftest import TEST_SECRET, make_token
from tests.e2e.conftest import fetch
from tests.tools import require_tool

pytestmark = pytest.mark.e2e

UNKNOWN_ORIGIN = "/registry/origins/svc:origin:00000000-0000-4000-8000-999999999999"


def vector(prometheus, promql: str, *labels: str) -> Counter:
    """An instant query's result as {(label values...): integer value}."""
    result = Counter()
    for item in prometheus.query(promql):
        result[tuple(item["metric"].get(name, "") for name in labels)] = int(
            float(item["value"][1])
        )
    return result


def test_prometheus_sums_match_what_was_sent(gunicorn_factory, example_db, tmp_path):
    """Requests of known kinds, scraped by Prometheus, summed by route and status with PromQL."""
    require_tool(prometheus_binary(), "prometheus", "prometheus")
    server = gunicorn_factory(
        {"DATABASE_URL": example_db, "REGISTRY_JWT_SECRET": TEST_SECRET}, workers=3
    )
    prometheus = start_prometheus(tmp_path / "prometheus", f"127.0.0.1:{server.port}")
    try:
        token = {"Authorization": f"Bearer {make_token()}"}
        expired = {"Authorization": f"Bearer {make_token(exp=int(time.time()) - 3600)}"}
        plan = [
            ("/summary", {}, 200, 12),
            ("/registry/summary", token, 200, 5),
            ("/registry/origins?limit=2", token, 200, 7),
            ("/registry/origins?limit=0", token, 400, 2),
            (UNKNOWN_ORIGIN, token, 404, 4),
            ("/registry/origins", {}, 401, 6),
            ("/registry/origins", expired, 401, 3),
            ("/no/such/path", {}, 404, 2),
        ]
        for path, headers, status, times in plan:
            for _ in range(times):
                assert fetch(server.base + path, headers).status == status, path
        expected = Counter(
            {
                ("/summary", "200"): 12,
                ("/registry/summary", "200"): 5,
                ("/registry/origins", "200"): 7,
                ("/registry/origins", "400"): 2,
                ("/registry/origins/<origin_id>", "404"): 4,
                ("/registry/origins", "401"): 9,
                ("unmatched", "404"): 2,
            }
        )
        # /healthz left out: start_gunicorn polls it, and a poll that timed out on a busy
        # machine may still be answered, so its count is not known in advance.
        query = (
            "sum by (route, status) "
            '(registry_http_requests_total{job="registry", route!="/healthz"})'
        )
        deadline = time.monotonic() + 60
        while True:
            got = vector(prometheus, query, "route", "status")
            if got == expected or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert got == expected, prometheus.output()[-2000:]

        total = sum(expected.values())
        histogram = (
            'sum(registry_http_request_duration_seconds_count{job="registry", route!="/healthz"})'
        )
        assert vector(prometheus, histogram) == Counter({(): total})
        every = (
            "sum(registry_http_request_duration_seconds_bucket"
            '{job="registry", route!="/healthz", le="+Inf"})'
        )
        assert vector(prometheus, every) == Counter({(): total})
        rejections = vector(
            prometheus,
            'sum by (reason) (registry_token_rejections_total{job="registry"}) > 0',
            "reason",
        )
        assert rejections == Counter({("missing",): 6, ("expired",): 3})
        assert vector(prometheus, 'up{job="registry"}') == Counter({(): 1})
        # The shipped alert rules load and evaluate against the live series.
        groups = prometheus.api("rules")["groups"]
        rules = {rule["name"]: rule for group in groups for rule in group["rules"]}
        assert "RegistryDown" in rules and "RegistryNoRecentLoad" in rules
        assert all(rule["health"] in ("ok", "unknown") for rule in rules.values())
    finally:
        prometheus.stop()
