"""`registry mirror sync --follow S` (docs/mirror.md): it keeps the copy in step, a step every
S seconds, until SIGTERM or SIGINT, which finish or roll back the step under way and exit 0.
The signal comes while it waits between steps, or in the middle of a step's body (the body
slowed by a relay, so that the signal lands in it); either way the copy is one generation
whole, and the next run converges."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.mirror.mirror_copy import Store
from tests.mirror.mirror_run import assert_converged, assert_whole, start, sync, wait_for
from tests.mirror.registry_stack import NDJSON, Registry, demo, twin
from tests.mirror.relay import Relay

pytestmark = [pytest.mark.e2e]

# The twin changes 2,500 origins: a body of about 3.3 MB, more than one batch of writes of
# any mirror that writes as it reads, so that a signal late in it finds writes to undo.
ORIGINS, SEED = 5_000, 41
# Slow enough that the change step's body lasts many seconds.
SLOW_RATE = 200_000
# The share of the body sent before the signal: late, so that writes are under way.
SIGNAL_AT = 0.85


@pytest.mark.parametrize("moment", ["between steps", "mid-step"])
@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_ends_follow_with_the_copy_whole(
    registry_factory: Callable[..., Registry],
    store_factory: Callable[[str], Store],
    tmp_path: Path,
    number: int,
    moment: str,
):
    """--follow 1 takes the first export and then the next load by itself; a signal then
        ends it with exit 0 and the copy whole at one generation (the step under way, its body
    mostly read, finished or rolled back); a run after it converges."""
    registry = registry_factory()
    relay = Relay(registry.gunicorn.port)
    url, store = f"http://127.0.0.1:{relay.port}", store_factory("sqlite")
    first = registry.load(demo(ORIGINS, SEED))
    running = start(
        tmp_path / "runs", "sync", "--url", url, "--into", store.target, "--follow", "1"
    )
    try:
        wait_for(lambda: generation_of(store) == first, "the first export")
        if moment == "mid-step":
            relay.rate = SLOW_RATE
        mark = relay.relayed
        second = registry.load(twin(ORIGINS, SEED, 0.5))
        if moment == "between steps":
            wait_for(lambda: generation_of(store) == second, "the next step")
        else:
            body = registry.get(f"/registry/changes?since={first}", NDJSON).body
            late = mark + SIGNAL_AT * len(body)
            wait_for(lambda: relay.relayed > late, "the step's body mostly sent")
        assert running.alive()
        running.signal(number)
        relay.rate = None
        done = running.wait(seconds=60)
        assert done.returncode == 0, done.stderr
        assert assert_whole(store, registry) in (first, second)
        assert_converged(store, registry, url, second, sync(url, store))
    finally:
        running.kill()
        relay.close()


def generation_of(store: Store) -> int | None:
    """The generation the copy holds now, if any."""
    row = store.row()
    return None if row is None else int(row["generation"])
