"""Whatever the chain of loads and whenever the mirror runs, each run leaves the copy equal to
the registry's newest export, with the digests agreeing (docs/mirror.md).

Hypothesis draws a chain of loads (tests/properties/catchup_support.py: each document the one
before edited, or an earlier one again, so that origins change and change back, go and come
back), and after each load whether the mirror runs. The registry keeps one graph and one
change set, so a copy that misses two loads or more is past retention (410) and is exported
again. A copy
is new for an example, or the one the example before left (its generation then long gone, or
still in reach). One registry serves every example, against real gunicorn."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from tests.conftest import document
from tests.mirror.mirror_copy import Store, sqlite_store
from tests.mirror.mirror_run import assert_converged, assert_whole, sync
from tests.mirror.registry_stack import Registry, start_registry
from tests.properties.catchup_support import load_chains
from tests.properties.strategies import PROPERTY_SETTINGS, examples

pytestmark = [pytest.mark.e2e]

KEEP_GENERATIONS, KEEP_CHANGES = 1, 1


class Mirrored:
    """The registry all examples load into, and the copy the last example left."""

    def __init__(self, registry: Registry, folder: Path):
        self.registry = registry
        self.folder = folder
        self.store = sqlite_store(folder, "copy-0.sqlite")
        self.copies = 1

    def new_store(self) -> Store:
        """A store with no copy yet."""
        self.store = sqlite_store(self.folder, f"copy-{self.copies}.sqlite")
        self.copies += 1
        return self.store


@pytest.fixture
def mirrored(database_factory: Callable[..., str], tmp_path: Path) -> Iterator[Mirrored]:
    """A registry that keeps one change set, gunicorn over it, and a place for copies."""
    registry = start_registry(
        database_factory(), tmp_path, keep_generations=KEEP_GENERATIONS, keep_changes=KEEP_CHANGES
    )
    try:
        yield Mirrored(registry, tmp_path)
    finally:
        registry.stop()


@st.composite
def schedules(draw: st.DrawFn) -> tuple[list[Any], list[bool], bool]:
    """A chain of loads, whether the mirror runs after each, and whether the copy is new."""
    chain = draw(load_chains(shortest=1, longest=4))
    runs = draw(st.lists(st.booleans(), min_size=len(chain), max_size=len(chain)))
    return chain, runs, draw(st.booleans())


@settings(PROPERTY_SETTINGS, max_examples=examples(6))
@given(plan=schedules())
def test_every_run_leaves_the_newest_export(mirrored: Mirrored, plan: Any) -> None:
    """After each run the copy is the newest generation's export, digests agreeing; a last
    run after the chain converges, and status and verify agree with it."""
    chain, runs, fresh = plan
    registry = mirrored.registry
    url = registry.url()
    store = mirrored.new_store() if fresh else mirrored.store
    held = store.row()
    for records, run in zip(chain, runs, strict=True):
        generation = registry.load(document(records))
        if not run:
            continue
        describe(registry, held, generation)
        done = sync(url, store)
        assert done.returncode == 0, done.stderr
        assert_whole(store, registry, generation)
        held = store.row()
    describe(registry, held, registry.current())
    assert_converged(store, registry, url, registry.current(), sync(url, store))


def describe(registry: Registry, held: dict[str, Any] | None, generation: int) -> None:
    """Tell hypothesis what kind of step the run is about to take."""
    if held is None:
        event("a first export")
        return
    oldest = registry.get("/registry/generations").json()["oldest_since"]
    if held["generation"] < oldest:
        event("a copy past retention (410)")
    elif held["generation"] == generation:
        event("nothing new")
    else:
        event(f"a step over {min(generation - held['generation'], 3)} loads")
