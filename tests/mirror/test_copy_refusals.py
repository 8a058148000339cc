"""`registry mirror sync` is polite (docs/mirror.md): refused for capacity, it waits as long as
the answer's Retry-After says and tries again, and converges once there is room. The refusals
are real: gunicorn's export limit (REGISTRY_MAX_EXPORTS 1, its one slot held by an export
whose reader has stopped reading: 503), and the shipped nginx's export limit per client (two
such exports held through it: 429)."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.e2e.slow_client import SlowClient
from tests.mirror.mirror_copy import Store
from tests.mirror.mirror_run import assert_converged, start, sync, wait_for
from tests.mirror.registry_stack import NDJSON, Registry, demo, twin

pytestmark = [pytest.mark.e2e]

# About 2.6 MB of NDJSON: far more than the buffers between a worker (or nginx) and a
# reader that takes nothing, so a held export stays open.
ORIGINS, SEED = 3_000, 31
RETRY_AFTER_S = 3
# How much sooner than Retry-After a retry may be logged: the refusal's line is written just
# after its answer was sent, so the client may have it a moment before that line's time.
LOG_SLACK_S = 0.25


def when(entry: dict[str, Any]) -> float:
    """A request log line's time (the answer's end), in seconds."""
    return datetime.fromisoformat(entry["time"].replace("Z", "+00:00")).timestamp()


def began(entry: dict[str, Any]) -> float:
    """When the request of a log line reached the app, in seconds."""
    return when(entry) - float(entry["duration_ms"]) / 1000


def exports(registry: Registry, mark: int, since: float) -> list[dict[str, Any]]:
    """The export requests (origins or changes) gunicorn logged after mark that reached it
    at `since` (a time.time()) or later."""
    paths = ("/registry/origins", "/registry/changes")
    return [
        entry
        for entry in registry.requests(mark)
        if entry["path"] in paths and began(entry) >= since
    ]


@pytest.mark.parametrize("step", ["export", "changes"])
def test_the_export_limit_is_waited_out(
    registry_factory: Callable[..., Registry],
    store_factory: Callable[[str], Store],
    tmp_path: Path,
    step: str,
):
    """The one export slot held: the run's export (the first, or its changes) is refused
    with 503 and Retry-After 3; each retry comes at least 3 s after the refusal before it;
    once the slot is free the run converges."""
    registry = registry_factory(
        workers=3,
        settings={"REGISTRY_MAX_EXPORTS": "1", "REGISTRY_RETRY_AFTER_S": str(RETRY_AFTER_S)},
    )
    url, store = registry.url(), store_factory("sqlite")
    generation = registry.load(demo(ORIGINS, SEED))
    if step == "changes":
        assert_converged(store, registry, url, generation, sync(url, store))
        generation = registry.load(twin(ORIGINS, SEED, 0.3))
    held = SlowClient(registry.gunicorn.port, "/registry/origins", NDJSON)
    assert held.status == 200
    mark, since = registry.log_size(), time.time()
    running = start(tmp_path / "runs", "sync", "--url", url, "--into", store.target)
    try:

        def refused_twice() -> bool:
            """The run's export has been refused at least twice."""
            return sum(entry["status"] == 503 for entry in exports(registry, mark, since)) >= 2

        wait_for(refused_twice, "two refusals of the run's export", seconds=60)
    finally:
        held.reset()
    done = running.wait()
    asked = exports(registry, mark, since)
    assert_converged(store, registry, url, generation, done)
    statuses = [entry["status"] for entry in asked]
    assert statuses[-1] == 200 and set(statuses[:-1]) == {503}, statuses
    for refusal, retry in itertools.pairwise(asked):
        assert refusal["status"] == 503
        waited = began(retry) - when(refusal)
        assert waited >= RETRY_AFTER_S - LOG_SLACK_S, (waited, refusal, retry)


def nginx_log(registry: Registry) -> list[dict[str, Any]]:
    """nginx's access log lines (the shipped JSON format)."""
    assert registry.nginx is not None
    path = registry.nginx.prefix / "access.log"
    if not path.exists():
        return []
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def test_the_nginx_export_limit_per_client_is_waited_out(
    registry_factory: Callable[..., Registry],
    store_factory: Callable[[str], Store],
    tmp_path: Path,
    nginx_installed: None,
):
    """Two exports held through the shipped nginx (its limit per client address): the run's
    export gets nginx's 429 with Retry-After 1, is retried no sooner than that, and converges
    once the held exports go."""
    # As many exports at once as nginx lets one client have, and more: only nginx refuses.
    registry = registry_factory(
        nginx=True, nginx_access_log=True, workers=3, settings={"REGISTRY_MAX_EXPORTS": "3"}
    )
    url, store = registry.url("nginx"), store_factory("sqlite")
    generation = registry.load(demo(ORIGINS, SEED))
    assert registry.nginx is not None
    held = [SlowClient(registry.nginx.port, "/v1/registry/origins", NDJSON) for _ in range(2)]
    assert [client.status for client in held] == [200, 200]
    seen = len(nginx_log(registry))
    running = start(tmp_path / "runs", "sync", "--url", url, "--into", store.target)
    try:

        def refused_twice() -> bool:
            """nginx has refused the run's export at least twice."""
            return sum(entry["status"] == 429 for entry in nginx_log(registry)[seen:]) >= 2

        wait_for(refused_twice, "two 429s from nginx", seconds=60)
    finally:
        for client in held:
            client.reset()
    done = running.wait()
    assert_converged(store, registry, url, generation, done)
    refusals = [entry for entry in nginx_log(registry)[seen:] if entry["status"] == 429]
    # nginx logs whole seconds: a retry 1 s or more after a refusal is logged at least one
    # second later (never in the same second).
    stamps = [datetime.fromisoformat(entry["time"]).timestamp() for entry in refusals]
    assert all(later - earlier >= 1 for earlier, later in itertools.pairwise(stamps))
