"""GET /metrics through gunicorn: the whole service's counts, exact across kills and reloads."""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from devtools.production_stack import Gunicorn, nginx_binary, start_nginx
from tests.conftest import TEST_SECRET, make_token
from tests.e2e.conftest import fetch
from tests.tools import require_tool

pytestmark = pytest.mark.e2e

UNKNOWN_ORIGIN = "/registry/origins/svc:origin:00000000-0000-4000-8000-999999999999"


def scrape(server: Gunicorn) -> dict[str, list[tuple[dict[str, str], float]]]:
    """One scrape of /metrics: every sample by name, with its labels."""
    answer = fetch(server.base + "/metrics")
    assert answer.status == 200
    assert answer.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    samples: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(answer.body.decode()):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((sample.labels, sample.value))
    return samples


def request_counts(samples: dict[str, list[tuple[dict[str, str], float]]]) -> Counter:
    """registry_http_requests_total by (route, method, status), zero series left out.

    /healthz is left out: start_gunicorn polls it until it answers, and on a busy machine a
    poll that timed out may still be answered later, so its count is not known in advance.
    """
    counts: Counter = Counter()
    for labels, value in samples.get("registry_http_requests_total", []):
        if value and labels["route"] != "/healthz":
            counts[(labels["route"], labels["method"], labels["status"])] += int(value)
    return counts


def single(samples: dict[str, list[tuple[dict[str, str], float]]], name: str) -> float:
    """The value of a series without labels."""
    (only,) = samples[name]
    return only[1]


def send(server: Gunicorn, times: int, path: str, token: bool = False) -> None:
    """The same GET, times times."""
    headers = {"Authorization": f"Bearer {make_token()}"} if token else {}
    for _ in range(times):
        fetch(server.base + path, headers)


def assert_live_workers_reported(server: Gunicorn, count: int) -> None:
    """The pool capacity gauge (one connection a worker) sums the live workers: never more.

    A worker just forked reports once its app is loaded, so the sum may lag behind for a
    moment; a dead worker counted twice, or a gauge not dropped, would exceed count.
    """
    deadline = time.monotonic() + 30
    while True:
        value = single(scrape(server), "registry_db_pool_max_connections")
        assert value <= count
        if value == count:
            return
        assert time.monotonic() < deadline, f"live workers reported {value}, expected {count}"
        time.sleep(0.2)


def wait_for_new_workers(server: Gunicorn, gone: set[int], count: int) -> set[int]:
    """Wait until count workers run and none of gone is among them."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pids = server.worker_pids()
        if len(pids) == count and not pids & gone:
            return pids
        time.sleep(0.1)
    raise AssertionError(f"gunicorn did not replace workers {gone}")


def counted_pids(folder: Path) -> set[str]:
    """The processes with counter or histogram files of their own in the metrics folder."""
    return {
        path.stem.split("_", 1)[1]
        for path in folder.glob("*.db")
        if path.stem.split("_", 1)[0] in ("counter", "histogram")
    }


def test_counts_are_the_whole_services_across_kills_and_reloads(
    gunicorn_factory, example_db, tmp_path
):
    """Every scrape, whichever worker answers, sums every worker; dead ones keep their counts."""
    folder = tmp_path / "metrics"
    folder.mkdir()
    (folder / "counter_99999999.db").write_bytes(b"left over by an earlier run")
    server = gunicorn_factory(
        {
            "DATABASE_URL": example_db,
            "REGISTRY_JWT_SECRET": TEST_SECRET,
            "PROMETHEUS_MULTIPROC_DIR": str(folder),
        },
        workers=3,
    )
    assert not (folder / "counter_99999999.db").exists()  # wiped at master start
    send(server, 10, "/summary")
    send(server, 6, "/registry/origins")
    send(server, 4, UNKNOWN_ORIGIN, token=True)
    send(server, 3, "/no/such/path")
    expected = Counter(
        {
            ("/summary", "GET", "200"): 10,
            ("/registry/origins", "GET", "401"): 6,
            ("/registry/origins/<origin_id>", "GET", "404"): 4,
            ("unmatched", "GET", "404"): 3,
        }
    )
    # Several scrapes land on different workers; each must see everyone's requests, and none
    # counts the scrapes themselves.
    for _ in range(6):
        samples = scrape(server)
        assert request_counts(samples) == expected
    rejections = {
        labels["reason"]: value for labels, value in samples["registry_token_rejections_total"]
    }
    assert rejections["missing"] == 6
    assert sum(rejections.values()) == 6
    assert_live_workers_reported(server, 3)
    durations = samples["registry_http_request_duration_seconds_count"]
    healthz = sum(
        v for labels, v in samples["registry_http_requests_total"] if labels["route"] == "/healthz"
    )
    assert sum(value for _, value in durations) == sum(expected.values()) + healthz

    # A worker killed outright: its counts stay, its live gauges go, its successor adds its own.
    victim = min(server.worker_pids())
    os.kill(victim, signal.SIGKILL)
    wait_for_new_workers(server, {victim}, 3)
    send(server, 5, "/summary")
    expected[("/summary", "GET", "200")] += 5
    for _ in range(6):
        samples = scrape(server)
        assert request_counts(samples) == expected
    assert_live_workers_reported(server, 3)

    # A reload (systemctl reload: HUP) replaces every worker; nothing is lost or doubled.
    before = server.worker_pids()
    os.kill(server.process.pid, signal.SIGHUP)
    wait_for_new_workers(server, before, 3)
    send(server, 2, "/registry/origins")
    expected[("/registry/origins", "GET", "401")] += 2
    for _ in range(6):
        samples = scrape(server)
        assert request_counts(samples) == expected
    assert_live_workers_reported(server, 3)
    # Dead workers' files were folded into one archive per kind: the folder does not grow.
    live = {str(pid) for pid in server.worker_pids()}
    assert counted_pids(folder) <= live | {"archive"}
    assert "archive" in counted_pids(folder)


def test_generation_and_build_info_are_scraped(gunicorn_factory, example_db):
    """The live graph's load time comes from the database; the build info is always there."""
    server = gunicorn_factory({"DATABASE_URL": example_db, "REGISTRY_JWT_SECRET": TEST_SECRET})
    samples = scrape(server)
    assert single(samples, "registry_database_reachable") == 1
    loaded = single(samples, "registry_generation_loaded_timestamp_seconds")
    assert time.time() - 3600 < loaded <= time.time()
    assert single(samples, "registry_generation") >= 1
    (build,) = samples["registry_build_info"]
    assert build[0]["version"] and build[1] == 1


def test_nginx_never_exposes_metrics(gunicorn_factory, example_db, tmp_path):
    """/v1/metrics through deploy/nginx.conf is a 404; gunicorn's own port answers it."""
    require_tool(nginx_binary(), "nginx", "nginx")
    server = gunicorn_factory({"DATABASE_URL": example_db, "REGISTRY_JWT_SECRET": TEST_SECRET})
    nginx = start_nginx(tmp_path / "nginx", server.port)
    try:
        for path in ("/metrics", "//metrics", "/./metrics", "/%6detrics"):
            answer = fetch(nginx.base + path)
            assert answer.status == 404, path
            assert b"registry_" not in answer.body
        assert fetch(nginx.base + "/summary").status == 200
    finally:
        nginx.stop()
    assert fetch(server.base + "/metrics").status == 200
