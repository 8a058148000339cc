"""An origin's history (docs/api.md, An origin's history) against the catching-up model.

Origin X is added, changed twice, removed, re-added as it first was, and changed once more;
origin Y is never touched; origin Z comes late. Each load goes through `registry load`
keeping 4 change sets and 2 graphs, so retention cuts the oldest change sets as the chain
grows: after every load, the history of each origin (pinned to the generation before the
newest too) is the model's versions, newest first, with `from`/`until` meeting, a null
version only after a kept removal, `from` null where no kept change set shows when a span
began; an origin absent and in no kept change set is a 404.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.properties.catchup_support import CatchupGraph
from tests.properties.model import Record

UUID_X = "00000000-0000-4000-8000-0000000000aa"
UUID_Y = "00000000-0000-4000-8000-0000000000bb"
UUID_Z = "00000000-0000-4000-8000-0000000000cc"
X, Y, Z = (f"svc:origin:{uuid}" for uuid in (UUID_X, UUID_Y, UUID_Z))
NEVER = "svc:origin:00000000-0000-4000-8000-0000000000dd"


def origin(origin_id: str, name: str) -> Record:
    """An origin record."""
    return {
        "type": "origin",
        "id": origin_id,
        "name": name,
        "network_id": None,
        "registry_id": None,
        "reviewed": True,
    }


def allocation(origin_id: str, station: int) -> Record:
    """A published allocation at 1.<station>.0."""
    return {
        "type": "allocation",
        "origin_id": origin_id,
        "network": 1,
        "station": station,
        "channel": 0,
        "publication_status": "published",
        "held_at": None,
    }


Y_RECORD = origin(Y, "untouched")
CHAIN = [
    [origin(X, "x"), Y_RECORD],  # 1: X and Y added
    [origin(X, "x renamed"), Y_RECORD],  # 2: X changed (origin block)
    [origin(X, "x renamed"), allocation(X, 7), Y_RECORD],  # 3: X changed (bans block)
    [Y_RECORD],  # 4: X removed
    [origin(X, "x"), Y_RECORD],  # 5: X back, as it was in 1
    [origin(X, "x"), Y_RECORD, origin(Z, "z")],  # 6: Z added, X untouched
    [origin(X, "x again"), Y_RECORD, origin(Z, "z")],  # 7: X changed
]


@pytest.fixture
def history_graph(database_factory) -> Iterator[CatchupGraph]:
    """A fresh database keeping 4 change sets and 2 graphs."""
    graph = CatchupGraph(database_factory(), keep_generations=2, keep_changes=4)
    yield graph
    graph.close()


def check_history(graph: CatchupGraph, origin_id: str, generation: int | None) -> None:
    """The history of one origin from one generation (the newest: None) is the model's."""
    model = graph.chain
    n = model.current if generation is None else generation
    expected = model.history(origin_id, n)
    query = "" if generation is None else f"?generation={generation}"
    response = graph.get(f"/registry/origins/{origin_id}/history{query}", status=None)
    assert response.mimetype == "application/json"
    if expected is None:
        assert response.status_code == 404, response.get_json()
        body = response.get_json()
        assert body["success"] is False and isinstance(body["error"], str)
        return
    assert response.status_code == 200, (origin_id, n, response.get_json())
    assert response.headers["Registry-Generation"] == str(n)
    body = response.get_json()
    assert body["success"] is True
    assert (body["generation"], body["id"]) == (n, origin_id)
    assert body["oldest_since"] == model.oldest_since()
    assert body["versions"] == expected, f"history of {origin_id} at {n}"


def test_history_through_loads_and_retention(history_graph: CatchupGraph) -> None:
    """After each load, each origin's history, newest and pinned, is the model's."""
    graph = history_graph
    seen_lengths = []
    for records in CHAIN:
        graph.load(records)
        pinned = [None]
        if len(graph.chain.generations) > 1:
            pinned.append(graph.chain.generations[-2].number)
        for origin_id in (X, Y, Z, NEVER):
            for generation in pinned:
                check_history(graph, origin_id, generation)
        seen_lengths.append(len(graph.chain.history(X) or []))
    # The chain exercised what it is for: X's history grew, then retention cut it.
    assert seen_lengths == [1, 2, 3, 4, 5, 4, 4]
    final = graph.get(f"/registry/origins/{X}/history").get_json()["versions"]
    assert [(v["from"], v["until"]) for v in final] == [(7, None), (5, 7), (4, 5), (None, 4)]
    assert final[2]["origin"] is None and final[-1]["origin"]["bans"]["station"] == 7
    # the id as the lookups take it: bare uuid, any letter case
    for spelling in (UUID_X, UUID_X.upper(), "svc:origin:" + UUID_X.upper()):
        again = graph.get(f"/registry/origins/{spelling}/history").get_json()
        assert again["versions"] == final and again["id"] == X
    for malformed in ("svc:origin:nope", "nope", "svc:network:" + UUID_X):
        response = graph.get(f"/registry/origins/{malformed}/history", status=404)
        assert response.get_json()["success"] is False


def test_history_generation_errors(history_graph: CatchupGraph) -> None:
    """generation=n as docs/api.md, Generations and conditional requests: never produced 404,
    dropped 410, malformed 400."""
    graph = history_graph
    for records in CHAIN[:4]:
        graph.load(records)
    url = f"/registry/origins/{Y}/history"
    assert graph.get(f"{url}?generation=9", status=404).get_json()["details"] == {
        "generation": 9,
        "current": 4,
    }
    assert graph.get(f"{url}?generation=1", status=410).get_json()["details"] == {
        "generation": 1,
        "current": 4,
    }
    assert list(graph.get(f"{url}?generation=0", status=400).get_json()["details"]) == [
        "generation"
    ]
