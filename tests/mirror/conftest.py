"""Fixtures of the mirror tests: registries (a database, gunicorn, nginx when asked) started
for a test and stopped after it, and stores of either kind (docs/mirror.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.mirror.mirror_copy import Store, make_store
from tests.mirror.mirror_run import STARTED
from tests.mirror.registry_stack import Registry, start_registry

STORES = ("sqlite", "postgresql")


@pytest.fixture
def registry_factory(
    database_factory: Callable[..., str], tmp_path: Path
) -> Iterator[Callable[..., Registry]]:
    """Start registries over fresh databases (start_registry's options); all stopped at the
    end of the test."""
    started: list[Registry] = []

    def start(**options: Any) -> Registry:
        """A registry over a fresh database, never loaded."""
        folder = tmp_path / f"registry-{len(started)}"
        folder.mkdir()
        registry = start_registry(database_factory(), folder, **options)
        started.append(registry)
        return registry

    yield start
    for registry in started:
        registry.stop()


@pytest.fixture
def store_factory(database_factory: Callable[..., str], tmp_path: Path) -> Callable[[str], Store]:
    """Stores with no copy yet: a SQLite file in the test's folder, or a fresh database."""
    made: list[Store] = []

    def make(kind: str) -> Store:
        """A store of that kind."""
        store = make_store(kind, tmp_path, database_factory, f"copy-{len(made)}")
        made.append(store)
        return store

    return make


@pytest.fixture(scope="session")
def nginx_installed() -> None:
    """nginx must be there for the tests that put it in front (tests/tools.py's rule)."""
    from devtools.production_stack import nginx_binary
    from tests.tools import require_tool

    require_tool(nginx_binary(), "nginx", "nginx")


@pytest.fixture(autouse=True)
def ended_runs() -> Iterator[None]:
    """Runs a test started in the background end with it: killed if a failure left them
    running, their output files closed either way (not left to a later test's collector)."""
    yield
    while STARTED:
        STARTED.pop().kill()
