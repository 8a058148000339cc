"""A mirror killed with SIGKILL at any instant of a step holds the generation before it or the
one after it, whole, and the next run converges (docs/mirror.md, "Atomic").

The registry holds a demo graph and then its changed twin (`registry demo --changes`), large
enough that a step lasts seconds. From a copy of the demo's generation, runs are killed at
random instants of two steps: the export that replaces the copy (`--reset`) and the step of
net changes to the twin's generation. Half of the instants are drawn over the length of a
whole step, measured first; the other half fall just after the run starts writing its store
(its SQLite file or journal changing; a transaction open in its PostgreSQL database), so that
many kills land inside the store's transaction. After every kill the copy is checked whole
against the export of the generation its row names; every few kills, and whenever a kill came
too late to stop the step, a run is let finish and must converge, and the copy starts again
from the demo's generation. Killed runs otherwise follow one another, each taking over what
the one before left (a hot journal, a session the server still has to end).
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.mirror.conftest import STORES
from tests.mirror.mirror_copy import Store, clone_store, make_store
from tests.mirror.mirror_run import assert_converged, assert_whole, start, sync
from tests.mirror.registry_stack import Registry, demo, start_registry, twin

pytestmark = [pytest.mark.e2e]

ORIGINS, SEED, FRACTION = 30_000, 91, 0.3
KILLS = 20
CONVERGE_EVERY = 5


@dataclass
class Killing:
    """The registry (the demo's generation, then the twin's) and a copy of the first one in
    each kind of store, to start from again and again."""

    registry: Registry
    first: int
    second: int
    bases: dict[str, Store]
    folder: Path
    make_database: Callable[..., str]
    clones: int = 0

    def fresh(self, kind: str) -> Store:
        """A new store holding the copy of the first generation."""
        self.clones += 1
        return clone_store(self.bases[kind], self.folder, self.make_database, f"c{self.clones}")


@pytest.fixture(scope="module")
def killing(
    database_factory: Callable[..., str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Killing]:
    """Load the demo, copy it into each kind of store, then load its twin."""
    folder = tmp_path_factory.mktemp("kills")
    registry = start_registry(database_factory(), folder, keep_generations=3)
    try:
        url = registry.url()
        first = registry.load(demo(ORIGINS, SEED))
        bases = {}
        for kind in STORES:
            bases[kind] = make_store(kind, folder, database_factory, f"base-{kind}")
            assert_converged(bases[kind], registry, url, first, sync(url, bases[kind]))
        second = registry.load(twin(ORIGINS, SEED, FRACTION))
        registry.export(second)
        yield Killing(registry, first, second, bases, folder, database_factory)
    finally:
        registry.stop()


def writing_began(store: Store, marks: dict[str, tuple[int, int]]) -> bool:
    """Whether the run has begun to write its store: a transaction open in its database, or
    its SQLite file, journal or log changed since `marks`."""
    if store.kind == "postgresql":
        return store.open_transactions() > 0
    return store.files_changed(marks)


def kill_steps(killing: Killing, kind: str, more: tuple[str, ...]) -> Counter[str]:
    """Kill KILLS runs of `sync ... more` from the first generation, each at a random
    instant, checking the copy whole after each and letting a run finish now and then;
    what the kills found."""
    registry, url = killing.registry, killing.registry.url()
    allowed = {killing.first, killing.second}
    seed = int.from_bytes(os.urandom(4), "big")
    draw = random.Random(seed)
    # One whole step first: it converges, and its length bounds the instants drawn.
    store = killing.fresh(kind)
    began = time.monotonic()
    assert_converged(store, registry, url, killing.second, sync(url, store, *more))
    length = time.monotonic() - began
    seen: Counter[str] = Counter()
    store = killing.fresh(kind)
    for number in range(KILLS):
        marks = store.file_marks() if kind == "sqlite" else {}
        running = start(
            killing.folder / "runs", "sync", "--url", url, "--into", store.target, *more
        )
        deadline = time.monotonic() + length * 3
        if number % 2 == 0:
            time.sleep(draw.uniform(0, length))
        else:
            while running.alive() and not writing_began(store, marks):
                assert time.monotonic() < deadline, "the run never wrote its store"
                time.sleep(0.01)
            time.sleep(draw.uniform(0, length / 4))
        seen["writing"] += writing_began(store, marks)
        seen["alive"] += running.alive()
        done = running.kill()
        generation = assert_whole(store, registry)
        assert generation in allowed, (seed, number, generation)
        seen[f"at {'first' if generation == killing.first else 'second'}"] += 1
        if done.returncode == 0:
            assert generation == killing.second, (seed, number, done.stderr)
        if generation == killing.second or number % CONVERGE_EVERY == CONVERGE_EVERY - 1:
            # The next run goes on from what the kill left, and converges.
            assert_converged(store, registry, url, killing.second, sync(url, store))
            seen["converged"] += 1
            store = killing.fresh(kind)
    print(f"kills of sync {' '.join(more)} into {kind} (seed {seed}): {dict(seen)}")
    # The kills landed in the step, many of them in its writes: the test tested something.
    assert seen["alive"] >= KILLS // 2, (seed, seen)
    assert seen["writing"] >= KILLS // 4, (seed, seen)
    return seen


@pytest.mark.parametrize("kind", STORES)
def test_killed_exports_leave_either_generation_whole(killing: Killing, kind: str):
    """An export replacing the copy (--reset), killed at random instants: the copy is the
    first generation or the second, whole, each time; the next run converges."""
    kill_steps(killing, kind, ("--reset",))


@pytest.mark.parametrize("kind", STORES)
def test_killed_change_steps_leave_either_generation_whole(killing: Killing, kind: str):
    """The step of net changes from the first generation to the second, killed at random
    instants: the copy is one of them, whole, each time; the next run converges."""
    kill_steps(killing, kind, ())


def test_a_killed_first_export_leaves_no_copy_or_a_whole_one(killing: Killing):
    """The very first export into an empty store, killed: no copy at all (status exits 1)
    or the second generation whole; the next run converges."""
    registry, url = killing.registry, killing.registry.url()
    draw = random.Random()
    for number in range(4):
        store = make_store("sqlite", killing.folder, killing.make_database, f"empty-{number}")
        running = start(killing.folder / "runs", "sync", "--url", url, "--into", store.target)
        time.sleep(draw.uniform(0.5, 4))
        running.kill()
        row, held = store.state()
        if row is None:
            assert held == {}, "records without a mirror row"
        else:
            assert_whole(store, registry, killing.second)
        assert_converged(store, registry, url, killing.second, sync(url, store))
