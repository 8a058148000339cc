"""REGISTRY_MAX_EXPORTS (docs/export.md, Capacity) as gunicorn.conf.py sets it: by default half of
the instance's request slots (workers times threads), at least 1, counted across all the workers;
an explicit value wins. Each case holds exports open with clients that read nothing until one
more is refused, so the limit is what the instance really enforces, not what it says."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from devtools.production_stack import Gunicorn
from tests.conftest import TEST_SECRET, load_records
from tests.e2e.capacity_stack import NDJSON, demo_document, wait_for
from tests.e2e.raw_http import request
from tests.e2e.slow_client import SlowClient

pytestmark = pytest.mark.e2e

# About 1.7 MB of NDJSON: far more than the worker's capped send buffer and a stalled
# client's receive window, so each export stays in flight while its client reads nothing.
ORIGINS = 2_000


@dataclass(frozen=True)
class Case:
    """An instance's shape, REGISTRY_MAX_EXPORTS if set, and the limit it must enforce."""

    workers: int
    threads: int
    setting: str | None
    limit: int


CASES = {
    "3 workers: 1": Case(3, 1, None, 1),
    "5 workers: 2": Case(5, 1, None, 2),
    # Half of the workers, not of their threads (docs/export.md, Capacity), and at least 1. One
    # process, so that no request is queued behind its exports in a busy worker.
    "1 worker of 4 threads: 1": Case(1, 4, None, 1),
    "4 workers, set to 3": Case(4, 1, "3", 3),
}


@pytest.fixture(scope="module")
def loaded(database_factory: Callable[[], str]) -> str:
    """A database with the demo graph."""
    conninfo = database_factory()
    load_records(conninfo, demo_document(ORIGINS, 5))
    return conninfo


def in_flight(server: Gunicorn) -> float:
    """registry_exports_in_flight, summed over the instance's workers."""
    text = request(server.port, "/metrics").body.decode()
    for line in text.splitlines():
        if line.startswith("registry_exports_in_flight "):
            return float(line.split()[-1])
    return 0.0


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_the_instance_streams_exactly_its_export_limit(
    loaded: str, gunicorn_factory: Callable[..., Gunicorn], case: Case
):
    """limit exports stream at once (each held by a client that reads nothing, spread over
    the workers), one more is a 503 naming that limit, and once one ends another streams."""
    settings = {
        "DATABASE_URL": loaded,
        "REGISTRY_JWT_SECRET": TEST_SECRET,
        "REGISTRY_THREADS": str(case.threads),
    }
    if case.setting is not None:
        settings["REGISTRY_MAX_EXPORTS"] = case.setting
    server = gunicorn_factory(settings, workers=case.workers)
    held: list[SlowClient] = []
    try:
        for _ in range(case.limit):
            held.append(SlowClient(server.port, "/registry/origins", NDJSON))
            assert held[-1].status == 200
        wait_for(lambda: in_flight(server) == case.limit, f"{case.limit} exports in flight")
        refused = request(server.port, "/registry/origins", headers=NDJSON)
        assert refused.status == 503
        assert f"at most {case.limit} exports stream at once" in refused.json()["message"]
        held.pop().reset()
        wait_for(lambda: in_flight(server) == case.limit - 1, "the export left ended")
        again = request(server.port, "/registry/origins", headers=NDJSON)
        assert again.status == 200 and again.body.count(b"\n") == ORIGINS
    finally:
        for client in held:
            client.reset()
