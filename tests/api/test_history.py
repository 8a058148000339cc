"""GET /registry/origins/{originId}/history (docs/api.md, An origin's history; its id, errors,
token rules and generations as every /registry path's).

Five loads, each a generation: origin 1 is renamed at 2 and again at 4 (changed twice),
origin 2 is removed at 3 and comes back at 5 (removed, re-added), origin 3 never changes
(untouched). The record each generation answered is taken from the lookup while that graph
is kept, and the expected versions below are written out by hand from the story above.
"""

from __future__ import annotations

import io
import itertools
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from registry.loader.loading import load_document
from tests.api.change_graphs import CATALOG
from tests.api.test_generations import ADMIN, Registry
from tests.conftest import app_config, document

Record = dict[str, Any]
CHANGED, REMOVED, UNTOUCHED, NEVER = 1, 2, 3, 4
# The graphs of generations 1 to 5: names of origins 1, 2 and 3 (None: absent).
STORY = [
    ("Alpha", "Bravo", "Charlie"),
    ("Alpha Two", "Bravo", "Charlie"),
    ("Alpha Two", None, "Charlie"),
    ("Alpha Three", None, "Charlie"),
    ("Alpha Three", "Bravo", "Charlie"),
]
ENVELOPE = {"success", "generated_at", "generation", "oldest_since", "id", "versions"}


def oid(key: int) -> str:
    """The id of test origin key: hex letters, so that case matters in the path."""
    letter = "abcdef"[key - 1]
    return f"svc:origin:{letter * 8}-0000-4000-8000-{letter * 12}"


def graph(names: tuple[str | None, ...]) -> list[Record]:
    """A graph of the origins named (keys 1, 2, 3 in order), each present when named."""
    return [CATALOG] + [
        {"type": "origin", "id": oid(key), "name": name, "network_id": None,
         "registry_id": None, "reviewed": True}
        for key, name in enumerate(names, 1)
        if name
    ]  # fmt: skip


class Story:
    """A registry that went through STORY, and each origin's record at each generation
    (as the lookup answered it while that graph was kept)."""

    def __init__(self, registry: Registry, records: dict[tuple[int, int], Record | None]):
        self.registry = registry
        self.records = records

    def record(self, key: int, generation: int) -> Record | None:
        """Origin key's record at generation, as the lookup answered it then."""
        return self.records[(key, generation)]

    def history(self, key: int | str, query: str = "", status: int = 200) -> Any:
        """The body of GET .../history for origin key (or an id as given)."""
        ident = oid(key) if isinstance(key, int) else key
        url = f"/registry/origins/{ident}/history{query}"
        response = self.registry.get(url)
        assert response.status_code == status, (url, response.status_code, response.get_data())
        assert response.headers["Content-Type"] == "application/json"
        return response.get_json()


def tell(database_factory: Callable[[], str], keep_changes: int) -> Iterator[Story]:
    """A database of its own through STORY, keeping keep_changes change sets."""
    from app import create_app

    conninfo = database_factory()
    app = create_app(app_config(conninfo))
    made = Registry(conninfo, app)
    records: dict[tuple[int, int], Record | None] = {}
    for generation, names in enumerate(STORY, start=1):
        with psycopg.connect(conninfo, autocommit=True) as conn:
            result = load_document(
                conn, io.BytesIO(document(graph(names))), keep_changes=keep_changes
            )
        assert result.generation == generation
        for key in (CHANGED, REMOVED, UNTOUCHED):
            response = made.get(f"/registry/origins/{oid(key)}")
            assert response.status_code == (200 if names[key - 1] else 404)
            records[(key, generation)] = response.get_json()["origin"] if names[key - 1] else None
    yield Story(made, records)
    app.extensions["registry_db"].close()


@pytest.fixture(scope="module")
def story(database_factory: Callable[[], str]) -> Iterator[Story]:
    """Every change set kept (the default, 30)."""
    yield from tell(database_factory, 30)


@pytest.fixture(scope="module")
def short(database_factory: Callable[[], str]) -> Iterator[Story]:
    """Only the newest two change sets kept: those of generations 4 and 5."""
    yield from tell(database_factory, 2)


def span(start: int | None, until: int | None, record: Record | None) -> Record:
    """One version as documented."""
    return {"from": start, "until": until, "origin": record}


def test_the_records_of_the_story_are_what_the_graphs_say(story: Story) -> None:
    """The fixture's own check: each record is its graph's name, and differs where renamed."""
    assert story.record(CHANGED, 1)["origin"]["name"] == "Alpha"
    assert story.record(CHANGED, 2)["origin"]["name"] == "Alpha Two"
    assert story.record(CHANGED, 4)["origin"]["name"] == "Alpha Three"
    assert story.record(REMOVED, 3) is None
    assert story.record(REMOVED, 5) == story.record(REMOVED, 1)


def test_an_origin_changed_twice(story: Story) -> None:
    """Three spans, from the first generation's change set (every origin added) on."""
    body = story.history(CHANGED)
    assert set(body) == ENVELOPE
    assert body["success"] is True
    assert (body["generation"], body["oldest_since"], body["id"]) == (5, 1, oid(CHANGED))
    assert body["versions"] == [
        span(4, None, story.record(CHANGED, 4)),
        span(2, 4, story.record(CHANGED, 2)),
        span(1, 2, story.record(CHANGED, 1)),
    ]


def test_an_origin_removed_then_added_again(story: Story) -> None:
    """The removal begins a null span, which the re-adding ends."""
    assert story.history(REMOVED)["versions"] == [
        span(5, None, story.record(REMOVED, 5)),
        span(3, 5, None),
        span(1, 3, story.record(REMOVED, 1)),
    ]


def test_an_untouched_origin_is_one_span(story: Story) -> None:
    """Added in the first generation, the same ever since."""
    assert story.history(UNTOUCHED)["versions"] == [span(1, None, story.record(UNTOUCHED, 5))]


@pytest.mark.parametrize("key", [CHANGED, REMOVED, UNTOUCHED])
def test_consecutive_versions_meet_and_differ(story: Story, key: int) -> None:
    """until of the older is from of the newer; the oldest is never null."""
    versions = story.history(key)["versions"]
    for newer, older in itertools.pairwise(versions):
        assert older["until"] == newer["from"]
        assert older["origin"] != newer["origin"]
    assert versions[-1]["origin"] is not None


def test_a_pinned_generation_counts_only_the_change_sets_up_to_it(story: Story) -> None:
    """At 4, origin 2 is absent (its last change set a removal) and origin 1 already renamed
    twice; generation 5's re-adding is not there."""
    body = story.history(REMOVED, "?generation=4")
    assert (body["generation"], body["oldest_since"]) == (4, 1)
    assert body["versions"] == [span(3, None, None), span(1, 3, story.record(REMOVED, 1))]
    assert story.history(CHANGED, "?generation=4")["versions"] == [
        span(4, None, story.record(CHANGED, 4)),
        span(2, 4, story.record(CHANGED, 2)),
        span(1, 2, story.record(CHANGED, 1)),
    ]
    response = story.registry.get(f"/registry/origins/{oid(REMOVED)}/history?generation=4")
    assert response.headers["Registry-Generation"] == "4"


@pytest.mark.parametrize(
    ("query", "status", "error"),
    [
        ("?generation=3", 410, "Generation no longer available"),
        ("?generation=99", 404, "Generation not found"),
        ("?generation=0", 400, "Invalid request parameters"),
        ("?generation=x", 400, "Invalid request parameters"),
        ("?page=1", 400, "Invalid request parameters"),
    ],
)
def test_generation_as_every_registry_read(
    story: Story, query: str, status: int, error: str
) -> None:
    """A graph no longer kept is 410, one never produced 404, anything malformed 400."""
    body = story.history(CHANGED, query, status)
    assert body["success"] is False and body["error"] == error
    if status != 400:
        assert body["details"] == {"generation": int(query.split("=")[1]), "current": 5}


@pytest.mark.parametrize(
    "ident",
    [
        oid(NEVER),  # well-formed, never loaded
        "svc:origin:not-a-uuid",
        "svc:network:" + oid(CHANGED).removeprefix("svc:origin:"),
        "1" * 37,
    ],
)
def test_unknown_and_malformed_ids_are_404(story: Story, ident: str) -> None:
    """An id no change set names and no graph holds, or that is no origin id at all."""
    body = story.history(ident, status=404)
    assert body["success"] is False and "error" in body
    assert set(body) == {"success", "error"}


def test_bare_and_prefixed_ids_answer_alike(story: Story) -> None:
    """The uuid alone, or in capitals, names the same origin; id is always prefixed."""
    prefixed = story.history(CHANGED)
    bare = oid(CHANGED).removeprefix("svc:origin:")
    for ident in (bare, bare.upper(), "svc:origin:" + bare.upper()):
        body = story.history(ident)
        assert body["id"] == oid(CHANGED)
        assert body["versions"] == prefixed["versions"]


def test_history_is_a_guarded_registry_read(story: Story) -> None:
    """No token: 401 before anything is looked up, whether the origin exists or not."""
    for ident in (oid(CHANGED), "nothing"):
        response = story.registry.get(f"/registry/origins/{ident}/history", admin=False)
        assert response.status_code == 401
        assert response.get_json() == {"error": "Unauthorized"}


def test_etag_and_conditional_answers(story: Story) -> None:
    """The generation headers of every /registry answer, and 304 for a matching ETag."""
    url = f"/registry/origins/{oid(CHANGED)}/history"
    first = story.registry.get(url)
    assert first.headers["Registry-Generation"] == "5"
    assert first.headers["Cache-Control"] == "private, no-cache"
    assert first.headers["ETag"].startswith('W/"5-')
    assert "Last-Modified" in first.headers
    again = story.registry.get(url, {"If-None-Match": first.headers["ETag"]})
    assert again.status_code == 304 and again.get_data() == b""
    assert again.headers["ETag"] == first.headers["ETag"]
    pinned = story.registry.get(url + "?generation=4")
    assert pinned.headers["ETag"] != first.headers["ETag"]
    assert story.registry.get(url, {"If-None-Match": pinned.headers["ETag"]}).status_code == 200
    since = story.registry.get(url, {"If-Modified-Since": first.headers["Last-Modified"]})
    assert since.status_code == 304


def test_a_404_carries_its_generation_and_is_never_304(story: Story) -> None:
    """An origin with no history is a 404 from the generation answered, even when asked with
    an ETag of another URL."""
    url = f"/registry/origins/{oid(NEVER)}/history"
    etag = story.registry.get(f"/registry/origins/{oid(CHANGED)}/history").headers["ETag"]
    response = story.registry.get(url, {"If-None-Match": etag})
    assert response.status_code == 404
    assert response.headers["Registry-Generation"] == "5"
    assert response.headers["Cache-Control"] == "no-store"


@pytest.mark.parametrize("generation", [4, 5])
def test_oldest_since_is_the_databases_own(story: Story, short: Story, generation: int) -> None:
    """The statement writes registry_meta.oldest_since out; both answer alike."""
    for told in (story, short):
        with psycopg.connect(told.registry.conninfo) as conn:
            row = conn.execute("SELECT registry_meta.oldest_since(%s)", (generation,)).fetchone()
        body = told.history(CHANGED, f"?generation={generation}")
        assert body["oldest_since"] == row[0]


def test_expired_change_sets_leave_from_null(short: Story) -> None:
    """With two change sets kept (4 and 5) the oldest since is 3: what came before a kept
    change set has from null, and an origin no kept change set names is one span of nulls."""
    body = short.history(CHANGED)
    assert (body["generation"], body["oldest_since"]) == (5, 3)
    assert body["versions"] == [
        span(4, None, short.record(CHANGED, 4)),
        span(None, 4, short.record(CHANGED, 2)),
    ]
    assert short.history(UNTOUCHED)["versions"] == [span(None, None, short.record(UNTOUCHED, 5))]
    # Re-added at 5; its removal at 3 is no longer kept, so nothing shows it was absent.
    assert short.history(REMOVED)["versions"] == [span(5, None, short.record(REMOVED, 5))]


def test_absent_and_in_no_kept_change_set_is_404(short: Story) -> None:
    """At 4, origin 2 is absent and the kept change set up to 4 (4's own) does not name it."""
    body = short.history(REMOVED, "?generation=4", status=404)
    assert body["success"] is False
    body = short.history(REMOVED, "?generation=5")
    assert body["versions"] == [span(5, None, short.record(REMOVED, 5))]


def test_only_get_and_head(story: Story) -> None:
    """HEAD is GET without a body; any other method the JSON 405 with Allow."""
    url = f"/registry/origins/{oid(CHANGED)}/history"
    head = story.registry.client.head(url, headers=ADMIN)
    assert head.status_code == 200 and head.get_data() == b""
    post = story.registry.client.post(url, headers=ADMIN)
    assert post.status_code == 405
    assert post.get_json() == {"success": False, "error": "Method Not Allowed"}
    assert set(post.headers["Allow"].replace(" ", "").split(",")) == {"GET", "HEAD"}


def test_a_dropped_change_set_changes_the_validators(database_factory: Callable[[], str]) -> None:
    """History at 3 before and after the load of 4 drops change set 1 (three kept): the same
    generation, another answer, so neither the ETag nor the Last-Modified of before may get a
    304 (docs/api.md, Generations and conditional requests: the same ETag means the same answer)."""
    from app import create_app

    conninfo = database_factory()
    app = create_app(app_config(conninfo))
    made = Registry(conninfo, app)
    url = f"/registry/origins/{oid(CHANGED)}/history?generation=3"
    try:
        for generation, names in enumerate(STORY[:4], start=1):
            with psycopg.connect(conninfo, autocommit=True) as conn:
                load_document(conn, io.BytesIO(document(graph(names))), keep_changes=3)
            if generation == 3:
                before = made.get(url)
                assert [v["from"] for v in before.get_json()["versions"]] == [2, 1]
        after = made.get(url)
        assert [v["from"] for v in after.get_json()["versions"]] == [2, None]
        assert after.headers["ETag"] != before.headers["ETag"]
        revalidated = made.get(url, {"If-None-Match": before.headers["ETag"]})
        assert revalidated.status_code == 200, "304 for an answer that changed"
        modified = made.get(url, {"If-Modified-Since": before.headers["Last-Modified"]})
        assert modified.status_code == 200, "304 for an answer that changed"
        again = made.get(url, {"If-None-Match": after.headers["ETag"]})
        assert again.status_code == 304
    finally:
        app.extensions["registry_db"].close()
