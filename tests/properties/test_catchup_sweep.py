"""A sweep of changes since m, pinned by its Links, stays exact while loads land (docs/api.md,
Generations and conditional requests, Changes between generations, Changes since any generation).

A chain of loads is committed, then the net changes since a kept generation m are read page
by page, the first page unpinned and every following one from its `Link: next`; more loads
of the chain commit at drawn points of the sweep. The database keeps 3 change sets and 2
graphs, so a load during the sweep can drop the generation answered (n) or the change sets
from m: the sweep then ends on a 410 that says which, and everything before it is a prefix
of the answer. Otherwise the sweep is exactly the model's net changes from m to n, once
each, every page answered from n, whatever was loaded since.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from tests.api.api_support import parse_links
from tests.properties.catchup_support import CatchupGraph, changes_url, load_chains
from tests.properties.model import Record
from tests.properties.strategies import PROPERTY_SETTINGS, examples

KEEP_GENERATIONS, KEEP_CHANGES = 2, 3


@pytest.fixture
def sweep_graph(graph_database: str) -> Iterator[CatchupGraph]:
    """A database never loaded, the app over it, keeping 3 change sets and 2 graphs."""
    graph = CatchupGraph(graph_database, KEEP_GENERATIONS, KEEP_CHANGES)
    graph.wait()
    yield graph
    graph.close()


@dataclass
class SinceSweep:
    """The loads before the sweep, which kept m to sweep from, its page size, and the loads
    that land during it: (step, document), committed before the step-th page after the
    first (steps past the end commit after it)."""

    before: list[list[Record]]
    pick: int
    limit: int
    during: list[tuple[int, list[Record]]]

    def __repr__(self) -> str:
        """Short: the documents themselves are too long to be worth printing."""
        steps = [step for step, _ in self.during]
        return (
            f"SinceSweep({len(self.before)} loads before, pick={self.pick}, "
            f"limit={self.limit}, loads during at steps {steps})"
        )


@st.composite
def since_sweeps(draw: st.DrawFn) -> SinceSweep:
    """A chain of three to six loads, cut in two: the first part before the sweep."""
    chain = draw(load_chains(shortest=3, longest=6))
    cut = draw(st.integers(1, len(chain) - 1))
    later = chain[cut:]
    steps = sorted(draw(st.lists(st.integers(0, 5), min_size=len(later), max_size=len(later))))
    return SinceSweep(
        chain[:cut],
        draw(st.integers(0, 1)),
        draw(st.integers(1, 2)),
        list(zip(steps, later, strict=True)),
    )


def allowed_gone(graph: CatchupGraph, m: int, n: int) -> list[dict[str, Any]]:
    """The 410 bodies a page of since=m&generation=n may answer with now: n no longer kept
    (docs/api.md, Generations and conditional requests), or the change sets from m no longer kept
    (docs/api.md, Changes since any generation)."""
    model = graph.chain
    allowed = []
    if not model.readable(n):
        allowed.append(
            {
                "success": False,
                "error": "Generation no longer available",
                "details": {"generation": n, "current": model.current},
            }
        )
    status, body = model.since(m, n)
    if status == 410:
        allowed.append(body)
    return allowed


@settings(PROPERTY_SETTINGS, max_examples=examples(15))
@given(case=since_sweeps())
def test_a_sweep_of_since_reads_one_answer_exactly_once(
    sweep_graph: CatchupGraph, case: SinceSweep
) -> None:
    """The net changes from m to n once each, in order, every page from n; or a prefix of
    them and a 410 saying what was dropped, only once it was."""
    graph = sweep_graph
    for records in case.before:
        graph.load(records)
    model = graph.chain
    n = model.current
    # A since with many changes, so that the sweep has pages for loads to land between.
    kept = [g.number for g in model.generations if g.number >= model.oldest_since()]
    kept.sort(key=lambda since: -len(model.since(since)[1]))
    m = kept[case.pick % min(2, len(kept))]
    expected = model.since(m)[1]
    pages = -(-len(expected) // case.limit)
    event(f"pages: {pages if pages < 4 else '4 or more'}")
    pending = list(case.during)

    def land(step: int) -> None:
        """Commit every load drawn for this step or an earlier one."""
        while pending and pending[0][0] <= step:
            graph.load(pending.pop(0)[1])

    response = graph.get(changes_url(m, limit=str(case.limit)))
    seen: list[Record] = []
    gone = allowed = None
    step = 0
    while True:
        body = response.get_json()
        assert (body["since"], body["generation"]) == (m, n)
        assert response.headers["Registry-Generation"] == str(n)
        seen += body["changes"]
        links = parse_links(response.headers.get("Link", ""))
        if "next" not in links:
            break
        path, parameters = links["next"]
        assert (parameters["since"], parameters["generation"]) == (str(m), str(n))
        land(step)
        step += 1
        response = graph.get(f"{path}?{urlencode(parameters)}", status=None)
        if response.status_code == 410:
            gone, allowed = response.get_json(), allowed_gone(graph, m, n)
            break
        assert response.status_code == 200, response.get_data()
        assert not allowed_gone(graph, m, n), "answered although what it needs was dropped"
    land(1 << 30)
    event(f"loads during the sweep: {len(case.during)}")
    if gone is None:
        event("sweep: complete")
        assert seen == expected
    else:
        event(f"sweep: 410 {gone['error']}")
        assert gone in allowed, (gone, allowed)
        assert seen == expected[: len(seen)]
    assert len({change["id"] for change in seen}) == len(seen)
