"""A sweep stays inside one generation whatever loads commit during it (docs/api.md, Generations and
conditional requests).

Graph A is loaded, then swept page by page by following `Link: next` from an unpinned first
page; loads of other graphs (B1, B2, ...) commit at drawn points of the sweep. The sweep must
return exactly A's matching origins, once each, in listing order, every page saying it came
from A's generation; once A is no longer kept, the next page is 410 and what came before it
is still exactly a prefix of A's listing. Afterwards an unpinned request answers from the
last graph loaded.

The sweep is one of SWEEPS: a way of reading a whole listing while loads land. Another way
(an export streamed in one response) plugs in beside `sweep_by_links` with the same shape.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import psycopg
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from registry.loader.loading import LoadOptions, load_document
from tests.conftest import document
from tests.properties.model import RegistryModel, parse_filters
from tests.properties.strategies import (
    LIMITS,
    PROPERTY_SETTINGS,
    Record,
    examples,
    graph_documents,
    listing_filters,
)

if TYPE_CHECKING:
    from tests.properties.conftest import LoadedGraph

NEXT = re.compile(r'<([^>]*)>; rel="next"')
GONE = {"success": False, "error": "Generation no longer available"}


@dataclass
class SweepCase:
    """Graph A, what to list and how, and the graphs loaded during the sweep and when."""

    graph_a: list[Record]
    query: dict[str, str]
    limit: int
    # (step, graph): the load of graph commits just before the sweep's step-th request
    # after the first page (steps past the end of the sweep commit after it)
    loads: list[tuple[int, list[Record]]]
    keep: int


@dataclass
class Swept:
    """What a sweep returned: origin ids in order, and the 410 body if it was cut short."""

    ids: list[str]
    generations: set[str]
    gone: dict[str, Any] | None = None


@st.composite
def sweep_cases(draw: st.DrawFn) -> SweepCase:
    """A graph A, a listing of it, and one to three loads at drawn points of the sweep."""
    graph_a = draw(graph_documents())
    query = draw(st.one_of(st.just({}), listing_filters(graph_a)))
    limit = draw(st.one_of(st.integers(1, 3), LIMITS))
    others = draw(st.lists(graph_documents(), min_size=1, max_size=3))
    steps = sorted(draw(st.lists(st.integers(0, 12), min_size=len(others), max_size=len(others))))
    # Mostly enough generations kept for A to outlive the sweep; sometimes not.
    keep = draw(st.one_of(st.just(len(others) + 1), st.integers(1, len(others) + 1)))
    return SweepCase(graph_a, query, limit, list(zip(steps, others, strict=True)), keep)


def load_keeping(graph: LoadedGraph, records: list[Record], keep: int) -> None:
    """Load records through the real loader, keeping that many generations."""
    with psycopg.connect(graph.conninfo, autocommit=True) as conn:
        load_document(
            conn,
            io.BytesIO(document(records)),
            keep_generations=keep,
            options=LoadOptions(allow_empty=True),  # a drawn graph may hold no origin
        )


def sweep_by_links(
    graph: LoadedGraph, query: dict[str, str], limit: int, before_step: Callable[[int], None]
) -> Swept:
    """Read the first page unpinned, then follow rel=next to the end (or to a 410)."""
    response = graph.get("/registry/origins", {**query, "limit": str(limit)})
    swept = Swept([], set())
    step = 0
    while True:
        assert response.status_code == 200, response.get_data()
        swept.generations.add(response.headers["Registry-Generation"])
        swept.ids += [record["origin"]["id"] for record in response.get_json()["origins"]]
        following = NEXT.search(response.headers["Link"])
        if following is None:
            break
        before_step(step)
        step += 1
        response = graph.client.get(following.group(1), headers=graph.headers)
        if response.status_code == 410:
            swept.gone = response.get_json()
            break
    before_step(step)  # every load drawn past the end still commits
    return swept


SWEEPS: dict[str, Callable[..., Swept]] = {"pages": sweep_by_links}


@pytest.mark.parametrize("name", sorted(SWEEPS))
@settings(PROPERTY_SETTINGS, max_examples=examples(60))
@given(case=sweep_cases())
def test_a_sweep_reads_one_generation_exactly_once(
    registry_graph: LoadedGraph, name: str, case: SweepCase
) -> None:
    """A's matches once each, in order, all from A's generation, whatever loads land."""
    sweep = SWEEPS[name]
    load_keeping(registry_graph, case.graph_a, keep=case.keep)
    expected = [
        record["origin"]["id"]
        for record in RegistryModel(case.graph_a).matching(parse_filters(case.query))
    ]
    pending = list(case.loads)
    loaded = 0

    def before_step(step: int) -> None:
        """Commit every load drawn for this step (or any earlier one not yet committed)."""
        nonlocal loaded
        while pending and pending[0][0] <= step:
            load_keeping(registry_graph, pending.pop(0)[1], keep=case.keep)
            loaded += 1

    swept = sweep(registry_graph, case.query, case.limit, before_step)
    before_step(1 << 30)
    assert len(swept.generations) == 1
    if swept.gone is None:
        event("sweep: complete")
        assert swept.ids == expected
    else:
        # A was dropped mid-sweep: only when more loads landed than are kept
        event("sweep: generation dropped")
        assert loaded >= case.keep
        assert {k: swept.gone[k] for k in GONE} == GONE
        assert str(swept.gone["details"]["generation"]) in swept.generations
        assert swept.ids == expected[: len(swept.ids)]
    assert len(set(swept.ids)) == len(swept.ids)
    event(f"loads during the sweep: {len(case.loads)}")
    # after the last commit, an unpinned request answers from the last graph loaded
    last = RegistryModel(case.loads[-1][1])
    newest = registry_graph.get_json("/registry/origins", {"limit": "200"})
    assert [record["origin"]["id"] for record in newest["origins"]] == [
        record["origin"]["id"] for record in last.matching({})
    ]
