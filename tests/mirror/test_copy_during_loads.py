"""Loads that commit while a step streams (docs/mirror.md, docs/export.md "One snapshot"): the
step's answer comes from one generation, fixed when its head was sent, so the run ends at that
generation with the copy its export and the digest its own, however many loads committed
meanwhile; the next run takes the rest in one step. A relay slows the body and then pauses it
while the loads commit, so that they land in it however long they take."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.mirror.conftest import STORES
from tests.mirror.mirror_copy import Store
from tests.mirror.mirror_run import assert_converged, start, step_line, sync, wait_for
from tests.mirror.registry_stack import Registry, demo, twin
from tests.mirror.relay import Relay

pytestmark = [pytest.mark.e2e]

ORIGINS, SEED = 2_000, 71
SLOW_RATE = 150_000


def net_changes(registry: Registry, since: int, generation: int) -> int:
    """How many origins differ between two generations (the service's own count)."""
    answer = registry.get(f"/registry/changes?since={since}&generation={generation}&limit=1")
    assert answer.status == 200, answer.body
    return int(answer.json()["page"]["total"])


@pytest.mark.parametrize("kind", STORES)
@pytest.mark.parametrize("step", ["export", "changes"])
def test_loads_during_a_step_leave_it_at_its_own_generation(
    registry_factory: Callable[..., Registry],
    store_factory: Callable[[str], Store],
    tmp_path: Path,
    step: str,
    kind: str,
):
    """Two loads commit while the step's body streams: the run ends at the generation its
    answer came from, the copy that generation's export; the next run reaches the newest."""
    # Five graphs kept: the step's generation is still readable after the two loads, so
    # that the test can compare the copy with its export.
    registry = registry_factory(keep_generations=5)
    relay = Relay(registry.gunicorn.port)
    url, store = f"http://127.0.0.1:{relay.port}", store_factory(kind)
    try:
        answered = registry.load(demo(ORIGINS, SEED))
        held = None
        if step == "changes":
            held = answered
            assert_converged(store, registry, url, held, sync(url, store))
            answered = registry.load(twin(ORIGINS, SEED, 0.5))
        relay.rate = SLOW_RATE
        mark = relay.relayed
        running = start(tmp_path / "runs", "sync", "--url", url, "--into", store.target)
        try:
            wait_for(lambda: relay.relayed > mark + 200_000, "the step's body under way")
            relay.pause()
            registry.load(twin(ORIGINS, SEED, 0.3))
            newest = registry.load(twin(ORIGINS, SEED + 1, 0.2))
            assert running.alive(), f"the step ended before the loads:\n{running.stderr()}"
            relay.rate = None
            relay.resume()
            done = running.wait()
        finally:
            relay.resume()
            running.kill()
        if held is None:
            total = registry.export(answered).total
            step_line(done, f"exported generation {answered}: {total} origins, digest ok")
        else:
            count = net_changes(registry, held, answered)
            step_line(done, f"generation {held} -> {answered}: {count} changes, digest ok")
        assert_converged(store, registry, url, answered, done)
        count = net_changes(registry, answered, newest)
        done = sync(url, store)
        step_line(done, f"generation {answered} -> {newest}: {count} changes, digest ok")
        assert_converged(store, registry, url, newest, done)
    finally:
        relay.close()
