"""Loader fixtures: a database serving a known graph that rejected loads must leave alone."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from .graphs import graph_state, load


@dataclass
class ServedGraph:
    """A database holding a known good graph, and the state a reader saw right after its load."""

    conninfo: str
    payload: bytes = field(repr=False)
    state: dict[str, Any] = field(default_factory=dict, repr=False)

    def restore(self) -> None:
        """(Re)load the known graph and remember what it looks like."""
        load(self.conninfo, self.payload)
        self.state = graph_state(self.conninfo)


@pytest.fixture(scope="module")
def served_graph(database_factory: Callable[[], str], example_document: bytes) -> ServedGraph:
    """One database per module serving the worked example."""
    graph = ServedGraph(database_factory(), example_document)
    graph.restore()
    assert graph.state["total"] == 4  # the worked example's origins
    return graph


@pytest.fixture
def served(served_graph: ServedGraph) -> Iterator[ServedGraph]:
    """The served graph; a test that let a bad document in gets it restored for the next one."""
    yield served_graph
    if graph_state(served_graph.conninfo) != served_graph.state:
        served_graph.restore()


@pytest.fixture(scope="module")
def scratch_db(database_factory: Callable[[], str]) -> str:
    """A database for documents that should load; each load replaces the last one's graph."""
    return database_factory()
