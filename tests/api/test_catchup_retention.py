"""Retention of change sets and the answers of `since` at its edges (docs/api.md, Errors and Changes
since any generation).

Loads go through `registry load` with REGISTRY_KEEP_CHANGES=3 and REGISTRY_KEEP_GENERATIONS=2;
after each one, every since the registry produced answers as the catching-up model says (200,
or 410 with since, oldest_since and current), the oldest since is checked from the first
generation on, and /registry/generations lists exactly the kept change sets with `readable`.
Never-produced and malformed values, and a since newer than the generation answered, get
their 404 and 400.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.properties.catchup_support import CatchupGraph, changes_url, ndjson
from tests.properties.model import Record

NDJSON = "application/x-ndjson"
INVALID = "Invalid request parameters"


def origin(number: int, name: str) -> Record:
    """An origin record numbered `number`."""
    return {
        "type": "origin",
        "id": f"svc:origin:00000000-0000-4000-8000-{number:012d}",
        "name": name,
        "network_id": None,
        "registry_id": None,
        "reviewed": True,
    }


def documents(count: int) -> list[list[Record]]:
    """`count` documents: origin 1 renamed each time, origin k+1 added in the k-th."""
    return [
        [origin(1, f"one v{k}"), *(origin(2 + j, "later") for j in range(k))] for k in range(count)
    ]


@pytest.fixture
def make_graph(database_factory: Callable[[], str]) -> Iterator[Callable[..., CatchupGraph]]:
    """CatchupGraphs on fresh databases, closed at the end."""
    made: list[CatchupGraph] = []

    def make(keep_generations: int = 2, keep_changes: int = 3) -> CatchupGraph:
        graph = CatchupGraph(database_factory(), keep_generations, keep_changes)
        made.append(graph)
        return graph

    yield make
    for graph in made:
        graph.close()


def check_every_since(graph: CatchupGraph) -> None:
    """Every generation produced, as since: the model's status and body, JSON and NDJSON."""
    model = graph.chain
    for generation in model.generations:
        m = generation.number
        status, expected = model.since(m)
        response = graph.get(changes_url(m), status=None)
        assert response.status_code == status, (m, response.get_json())
        exported = graph.get(changes_url(m), NDJSON, status=None)
        assert exported.status_code == status
        if status == 200:
            assert response.get_json()["changes"] == expected
            assert response.get_json()["since"] == m
            assert ndjson(exported) == expected
        else:
            assert response.get_json() == expected
            assert exported.get_json() == expected


def check_generations(graph: CatchupGraph) -> None:
    """/registry/generations: the kept change sets newest first, readable, oldest_since."""
    model = graph.chain
    body = graph.get("/registry/generations").get_json()
    assert body["current"] == model.current
    assert body["oldest_since"] == model.oldest_since()
    listed = [
        {name: entry[name] for name in ("generation", "previous", "readable")}
        for entry in body["generations"]
    ]
    assert listed == model.generations_listed()


def check_revalidation(graph: CatchupGraph, validators: dict[str, str]) -> None:
    """The ETags of answers since m taken before the last load, sent again: a 304 only while
    the same generation answers and the changes since m are still kept; never a 304 for an
    answer that is now a 410."""
    model = graph.chain
    for url, etag in validators.items():
        response = graph.client.get(url, headers={**graph.headers, "If-None-Match": etag})
        query = parse_qs(urlsplit(url).query)
        since = int(query["since"][0])
        pinned = int(query["generation"][0]) if "generation" in query else None
        if not model.readable(pinned or model.current) or model.since(since)[0] == 410:
            assert response.status_code == 410, (url, response.status_code)
        elif pinned is None:
            assert response.status_code == 200, url  # another generation answers
        else:
            assert response.status_code == 304, (url, response.status_code)


def test_the_410_and_oldest_since_follow_the_kept_change_sets(make_graph) -> None:
    """Keeping 3 change sets: the first generation stays the oldest since while its change
    set is kept and one load more (2's previous is 1); then since=1 is 410 with its
    details, since=2 answers, and so on, one generation per load."""
    graph = make_graph()
    oldest = []
    validators: dict[str, str] = {}
    for records in documents(7):
        graph.load(records)
        check_revalidation(graph, validators)
        check_every_since(graph)
        check_generations(graph)
        oldest.append(graph.get("/registry/generations").get_json()["oldest_since"])
        validators = {
            url: graph.get(url).headers["ETag"]
            for g in graph.chain.generations
            if graph.chain.since(g.number)[0] == 200
            for url in (changes_url(g.number), changes_url(g.number, graph.chain.current))
        }
    assert oldest == [1, 1, 1, 1, 2, 3, 4]
    gone = graph.get(changes_url(3), status=410).get_json()
    assert gone == {
        "success": False,
        "error": "Changes no longer available",
        "details": {"since": 3, "oldest_since": 4, "current": 7},
    }
    assert graph.get(changes_url(4)).get_json()["counts"] == {
        "added": 3,
        "removed": 0,
        "changed": 1,
    }
    # a kept change set whose graph is dropped: listed, not readable, generation=5 is 410
    assert graph.get(changes_url(None, 5), status=410).get_json()["error"] == (
        "Generation no longer available"
    )


def test_keep_changes_below_keep_generations_is_raised(make_graph) -> None:
    """REGISTRY_KEEP_CHANGES 1 with 3 graphs kept: 3 change sets are kept."""
    graph = make_graph(keep_generations=3, keep_changes=1)
    for records in documents(5):
        graph.load(records)
    check_every_since(graph)
    check_generations(graph)
    body = graph.get("/registry/generations").get_json()
    assert [entry["generation"] for entry in body["generations"]] == [5, 4, 3]
    assert body["oldest_since"] == 2


@pytest.fixture(scope="module")
def settled(database_factory: Callable[[], str]) -> Iterator[CatchupGraph]:
    """Three loads, every change set kept; read only, so shared by the module's tests."""
    graph = CatchupGraph(database_factory(), keep_generations=2, keep_changes=3)
    for records in documents(3):
        graph.load(records)
    yield graph
    graph.close()


@pytest.mark.parametrize("value", ["4", "7", "9223372036854775806", "9223372036854775807"])
def test_since_never_produced_is_404(settled: CatchupGraph, value: str) -> None:
    """A well-formed since this registry never produced, whatever its size."""
    for accept in (None, NDJSON, "text/csv"):
        response = settled.get(changes_url(int(value)), accept, status=404)
        assert response.mimetype == "application/json"
        assert response.get_json() == {
            "success": False,
            "error": "Generation not found",
            "details": {"since": int(value), "current": 3},
        }


@pytest.mark.parametrize(
    "query",
    [
        "since=0",
        "since=-1",
        "since=1.0",
        "since=abc",
        "since=",
        "since=%201",
        "since=9223372036854775808",
        "since=1&since=2",
        "since=3&generation=2",  # produced, but newer than the generation answered
    ],
)
def test_malformed_since_or_newer_than_answered_is_400(settled: CatchupGraph, query: str) -> None:
    """400 with the details under `since`, for pages and exports alike."""
    for accept in (None, NDJSON):
        response: Any = settled.get(f"/registry/changes?{query}", accept, status=400)
        body = response.get_json()
        assert (body["success"], body["error"]) == (False, INVALID)
        assert list(body["details"]) == ["since"], body


def test_since_the_generation_answered_has_no_changes(settled: CatchupGraph) -> None:
    """since=n itself answers no changes, pinned or not; since is not a filter."""
    for url in (changes_url(3), changes_url(2, 2)):
        body = settled.get(url).get_json()
        assert body["changes"] == [] and body["page"]["total"] == 0
        assert body["counts"] == {"added": 0, "removed": 0, "changed": 0}
        assert body["filters_applied"] == {}
