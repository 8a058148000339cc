"""The database stops and starts under a running gunicorn: every request meanwhile is a quick
503 JSON with Retry-After, /healthz stays up and /readyz says why not, and once the database
is back requests succeed again within seconds, with no restart and no worker lost.

The PostgreSQL here is a private embedded server under the test's temporary folder, so that
stopping it disturbs nobody else."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import orjson
import psycopg
import pytest

from devtools.production_stack import Gunicorn, PrivatePostgres, start_gunicorn
from registry.database.pool import PROBE_INTERVAL_S
from registry.loader.loading import load_document
from tests.conftest import TEST_SECRET, make_token
from tests.e2e.raw_http import Answer, request

pytestmark = pytest.mark.e2e

ROUTES = [
    "/summary",
    "/registry/summary",
    "/registry/origins?limit=2",
    "/registry/addresses/9.10.3",
    "/registry/origins/3b2f1e0d-9c8b-4a7f-8e6d-5c4b3a291807",
]
# Not performance claims (measured times belong in `make faulttest`): only how long a test
# waits for recovery before calling it a failure, with a wide margin for a busy machine.
GIVE_UP_AFTER_S = 60.0
# gunicorn workers of the fault stack.
WORKERS = 2
WORKER_TROUBLE = ("WORKER TIMEOUT", "was sent SIGKILL", "exited with code", "Traceback")


@dataclass
class Timed:
    """An answer and how long it took."""

    answer: Answer
    seconds: float


@dataclass
class FaultStack:
    """A private PostgreSQL and gunicorn over it."""

    postgres: PrivatePostgres
    gunicorn: Gunicorn

    def get(self, target: str) -> Timed:
        """One timed request with an admin token."""
        started = time.monotonic()
        # Minted now, not at import: a slow session can outlive a ten-minute token.
        answer = request(
            self.gunicorn.port, target, headers={"Authorization": f"Bearer {make_token()}"}
        )
        return Timed(answer, time.monotonic() - started)

    def burst(self, count: int, threads: int = 6) -> list[Timed]:
        """count requests over every route, several at a time (so both workers answer)."""
        targets = [ROUTES[number % len(ROUTES)] for number in range(count)]
        with ThreadPoolExecutor(threads) as pool:
            return list(pool.map(self.get, targets))


@pytest.fixture(scope="module")
def fault_stack(
    tmp_path_factory: pytest.TempPathFactory, example_document: bytes
) -> Iterator[FaultStack]:
    """The worked example in a private embedded PostgreSQL, served by two gunicorn workers."""
    folder = tmp_path_factory.mktemp("faults")
    postgres = PrivatePostgres(folder / "state")
    postgres.start()
    try:
        with psycopg.connect(postgres.url, autocommit=True) as conn:
            load_document(conn, io.BytesIO(example_document))
        server = start_gunicorn(
            {"DATABASE_URL": postgres.url, "REGISTRY_JWT_SECRET": TEST_SECRET},
            folder / "gunicorn.log",
            workers=WORKERS,
        )
        try:
            yield FaultStack(postgres, server)
        finally:
            server.stop()
    finally:
        postgres.stop(mode="immediate")


def assert_all_ok(answers: list[Timed]) -> None:
    """Every answer a 200."""
    assert [timed.answer.status for timed in answers] == [200] * len(answers)


def assert_unavailable(timed: Timed) -> None:
    """The documented 503: JSON body and Retry-After."""
    answer = timed.answer
    assert answer.status == 503, answer.body
    assert answer.header("Content-Type") == "application/json"
    assert orjson.loads(answer.body) == {"success": False, "error": "Service Unavailable"}
    assert answer.header("Retry-After") == "2"


def wait_for_recovery(stack: FaultStack, since: float) -> float:
    """Seconds from `since` until a burst of requests all succeed; fails past the limit."""
    while True:
        answers = stack.burst(12)
        if all(timed.answer.status == 200 for timed in answers):
            return time.monotonic() - since
        for timed in answers:
            if timed.answer.status != 200:
                assert_unavailable(timed)
        assert time.monotonic() - since < GIVE_UP_AFTER_S, "no recovery"
        time.sleep(0.05)


def test_a_stopped_database_is_a_quick_503_and_then_recovers(fault_stack: FaultStack):
    """Stop for a few seconds under requests, start again: 503s meanwhile, then 200s."""
    workers = fault_stack.gunicorn.worker_pids()
    assert_all_ok(fault_stack.burst(20))

    fault_stack.postgres.stop()
    outage: list[Timed] = []
    for _ in range(3):
        outage += fault_stack.burst(12)
    for timed in outage:
        assert_unavailable(timed)
    slowest = max(timed.seconds for timed in outage)

    health = request(fault_stack.gunicorn.port, "/healthz")
    assert health.status == 200
    ready = request(fault_stack.gunicorn.port, "/readyz")
    assert ready.status == 503
    assert "cannot be reached" in orjson.loads(ready.body)["reason"]

    fault_stack.postgres.start()
    recovered_after = wait_for_recovery(fault_stack, time.monotonic())
    assert_all_ok(fault_stack.burst(30))
    assert request(fault_stack.gunicorn.port, "/readyz").status == 200

    assert fault_stack.gunicorn.worker_pids() == workers
    output = fault_stack.gunicorn.output()
    for trouble in WORKER_TROUBLE:
        assert trouble not in output
    print(f"slowest 503: {slowest:.3f} s; recovered {recovered_after:.2f} s after the restart")


def test_a_restart_while_idle_costs_no_request(fault_stack: FaultStack):
    """Restarted while nobody asked: every pooled connection is dead, yet no request fails."""
    assert_all_ok(fault_stack.burst(20))
    fault_stack.postgres.stop()
    fault_stack.postgres.start()
    time.sleep(1.2)  # longer than db.IDLE_CHECK_S: idle connections are checked before use
    assert_all_ok(fault_stack.burst(20))


def test_the_first_request_after_an_outage_is_not_held_up(fault_stack: FaultStack):
    """The database back after a quiet outage, and longer ago than the pool's probe
    interval: the first request succeeds, or at most one per worker is still refused (a
    worker that learnt of the outage probes again before it trusts the database)."""
    fault_stack.postgres.stop()
    for _ in range(4):  # every worker learns that the database is gone
        assert_unavailable(fault_stack.get("/summary"))
    time.sleep(0.6)
    fault_stack.postgres.start()  # returns once the server accepts connections
    time.sleep(2 * PROBE_INTERVAL_S)
    refused = 0
    first = fault_stack.get("/summary")
    while first.answer.status != 200:
        assert_unavailable(first)
        refused += 1
        assert refused <= WORKERS, "more 503s than workers after the database was back"
        first = fault_stack.get("/summary")
    assert first.answer.status == 200
