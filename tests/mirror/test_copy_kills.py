"""A mirror killed with SIGKILL at any instant of a step holds the generation before it or the
one after it, whole, and the next run converges (docs/mirror.md, "Atomicity").

The registry holds a demo graph of 15,000 origins and then its changed twin (`registry demo
--changes 0.4`: 6,000 origins added, removed or changed), read through a relay that sends each
step's body at the rate that makes it last 3 s, so that a step lasts seconds on any machine
and a kill at a random instant lands in it. From a copy of the demo's generation, runs are killed at
random instants of two steps: the export that replaces the copy (`--reset`) and the step of
net changes to the twin's generation. Half of the instants are drawn over the length of a
whole step, measured first (and halved, down to the relay's body time, whenever a run ended
before its instant: the machine got less busy); the other half fall just after the run
starts writing its store (its SQLite file or journal changing; a transaction open in its
PostgreSQL database), so that many kills land inside the store's transaction. After every
kill the copy is checked whole against the export of the generation its row names; every
few kills, and whenever a kill came too late to stop the step, a run is let finish and must
converge, and the copy starts again from the demo's generation. Killed runs otherwise follow
one another, each taking over what the one before left (a hot journal, a session the server
still has to end). The SQLite store takes 20 kills per step, the PostgreSQL store 10.
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest

from tests.mirror.conftest import STORES
from tests.mirror.mirror_copy import Store, clone_store, make_store, restore_copy, save_copy
from tests.mirror.mirror_run import (
    assert_converged,
    assert_whole,
    start,
    sync,
    wait_for,
)
from tests.mirror.registry_stack import NDJSON, Registry, demo, start_registry, twin
from tests.mirror.relay import Relay

pytestmark = [pytest.mark.e2e]

ORIGINS, SEED, FRACTION = 15_000, 91, 0.4
# Kills per step and store: the default store takes the most; a PostgreSQL store's
# transaction is the server's, and each of its kills costs more (its tables put back).
KILLS = {"sqlite": 20, "postgresql": 10}
CONVERGE_EVERY = 5
# The relay in front of gunicorn sends a step's body at the rate that makes it last this
# long, so that a step lasts seconds whatever the machine and random instants land in it.
BODY_SECONDS = 3.0


@dataclass
class Killing:
    """The registry (the demo's generation, then the twin's), the relay the runs read it
    through, and a copy of the first generation in each kind of store, to start from again
    and again."""

    registry: Registry
    relay: Relay
    first: int
    second: int
    bases: dict[str, Store]
    folder: Path
    make_database: Callable[..., str]
    clones: int = 0

    @property
    def url(self) -> str:
        """The registry through the relay."""
        return f"http://127.0.0.1:{self.relay.port}"

    def fresh(self, kind: str) -> Store:
        """A store holding the copy of the first generation: a new SQLite file, or the
        PostgreSQL store with its tables put back as they were."""
        if kind == "sqlite":
            self.clones += 1
            return clone_store(self.bases[kind], self.folder, f"c{self.clones}")
        store = self.bases[kind]
        wait_for(partial(no_transaction, store), "the killed run's session gone")
        restore_copy(store)
        return store

    def body_bytes(self, export: bool) -> int:
        """The size of the step's body: the export of the second generation, or the changes
        from the first to it."""
        if export:
            return sum(len(line) + 1 for line in self.registry.export(self.second).lines.values())
        since = f"/registry/changes?since={self.first}&generation={self.second}"
        answer = self.registry.get(since, NDJSON)
        assert answer.status == 200
        return len(answer.body)

    def converge(self, store: Store) -> None:
        """A run let finish (at full speed) reaches the second generation, whole (status and
        verify are the other files' business: here they would only add seconds)."""
        rate, self.relay.rate = self.relay.rate, None
        try:
            done = sync(self.url, store)
            assert done.returncode == 0, done.stderr
            assert_whole(store, self.registry, self.second)
        finally:
            self.relay.rate = rate


@pytest.fixture(scope="module")
def killing(
    database_factory: Callable[..., str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Killing]:
    """Load the demo, copy it into each kind of store, then load its twin."""
    folder = tmp_path_factory.mktemp("kills")
    registry = start_registry(database_factory(), folder, keep_generations=3)
    relay = Relay(registry.gunicorn.port)
    try:
        url = f"http://127.0.0.1:{relay.port}"
        first = registry.load(demo(ORIGINS, SEED))
        bases = {}
        for kind in STORES:
            bases[kind] = make_store(kind, folder, database_factory, f"base-{kind}")
            assert_converged(bases[kind], registry, url, first, sync(url, bases[kind]))
        save_copy(bases["postgresql"])
        second = registry.load(twin(ORIGINS, SEED, FRACTION))
        registry.export(second)
        yield Killing(registry, relay, first, second, bases, folder, database_factory)
    finally:
        relay.close()
        registry.stop()


def no_transaction(store: Store) -> bool:
    """Whether no session of the store's database is inside a transaction."""
    return store.open_transactions() == 0


def writing_began(store: Store, marks: dict[str, tuple[int, int]]) -> bool:
    """Whether the run has begun to write its store: a transaction open in its database, or
    its SQLite file, journal or log changed since `marks`."""
    if store.kind == "postgresql":
        return store.open_transactions() > 0
    return store.files_changed(marks)


def kill_steps(killing: Killing, kind: str, more: tuple[str, ...]) -> Counter[str]:
    """Kill KILLS[kind] runs of `sync ... more` from the first generation, each at a random
    instant, checking the copy whole after each and letting a run finish now and then;
    what the kills found."""
    seed = int.from_bytes(os.urandom(4), "big")
    draw = random.Random(seed)
    killing.relay.rate = killing.body_bytes(export=bool(more)) / BODY_SECONDS
    try:
        return kill_runs(killing, kind, more, draw, seed)
    finally:
        killing.relay.rate = None


def kill_runs(
    killing: Killing, kind: str, more: tuple[str, ...], draw: random.Random, seed: int
) -> Counter[str]:
    """kill_steps' loop, the relay slowed."""
    registry, url = killing.registry, killing.url
    allowed = {killing.first, killing.second}
    # One whole step first: it converges, and its length bounds the instants drawn.
    store = killing.fresh(kind)
    began = time.monotonic()
    assert_converged(store, registry, url, killing.second, sync(url, store, *more))
    measured = length = time.monotonic() - began
    seen: Counter[str] = Counter()
    store = killing.fresh(kind)
    kills = KILLS[kind]
    for number in range(kills):
        if kind == "postgresql":
            # The server ends the session of a killed run once it notices: not this run's.
            wait_for(partial(no_transaction, store), "the killed run's session gone")
        marks = store.file_marks() if kind == "sqlite" else {}
        running = start(
            killing.folder / "runs", "sync", "--url", url, "--into", store.target, *more
        )
        deadline = time.monotonic() + measured * 3
        if number % 2 == 0:
            time.sleep(draw.uniform(0, length))
        else:
            while running.alive() and not writing_began(store, marks):
                assert time.monotonic() < deadline, "the run never wrote its store"
                time.sleep(0.01)
            time.sleep(draw.uniform(0, length / 2))
        seen["writing"] += writing_began(store, marks)
        alive = running.alive()
        seen["alive"] += alive
        if not alive:
            # The step ended before the instant drawn: steps are shorter now than the one
            # measured (a machine less busy), so later instants are drawn over less. A body
            # lasts BODY_SECONDS through the relay, so a step never lasts less.
            length = max(length / 2, BODY_SECONDS)
        done = running.kill()
        generation = assert_whole(store, registry)
        assert generation in allowed, (seed, number, generation)
        seen[f"at {'first' if generation == killing.first else 'second'}"] += 1
        if done.returncode == 0:
            assert generation == killing.second, (seed, number, done.stderr)
        if generation == killing.second or number % CONVERGE_EVERY == CONVERGE_EVERY - 1:
            # The next run goes on from what the kill left, and converges.
            killing.converge(store)
            seen["converged"] += 1
            store = killing.fresh(kind)
    print(f"kills of sync {' '.join(more)} into {kind} (seed {seed}): {dict(seen)}")
    # The kills landed in the step, many of them in its writes: the test tested something.
    assert seen["alive"] >= kills // 2, (seed, seen)
    assert seen["writing"] >= kills // 4, (seed, seen)
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
    registry, url = killing.registry, killing.url
    killing.relay.rate = killing.body_bytes(export=True) / BODY_SECONDS
    draw = random.Random()
    try:
        for number in range(4):
            store = make_store("sqlite", killing.folder, killing.make_database, f"empty-{number}")
            running = start(killing.folder / "runs", "sync", "--url", url, "--into", store.target)
            time.sleep(draw.uniform(0.5, BODY_SECONDS))
            running.kill()
            row, held = store.state()
            if row is None:
                assert held == {}, "records without a mirror row"
            else:
                assert_whole(store, registry, killing.second)
            killing.converge(store)
    finally:
        killing.relay.rate = None
