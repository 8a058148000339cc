"""GET /registry/changes?since=m (docs/api.md, Changes since any generation): the net changes from m
to the generation answered, checked against the records each kept generation answers by lookup; the
400, 404 and 410 with their details; retention by REGISTRY_KEEP_CHANGES; an answer that turns into a
410 under the same validators is never a 304.

Generations: 1 graph A, 2 graph B (A with eight origins changed, added or removed), 3 graph C
(B with Golf renamed), 4 graph A again, 5 graph B again: so since 1 at 4 nets to nothing,
since 2 at 4 undoes B, since 3 at 4 is generation 4's own change set (docs/api.md, Changes between
generations).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import psycopg
import pytest
from flask import Flask

from registry.loader.loading import load_document
from tests.api.api_support import parse_links
from tests.api.change_graphs import DIGITS, GRAPH_A, GRAPH_B, GRAPH_C, oid
from tests.api.test_generations import ADMIN, Registry
from tests.conftest import app_config, document

Record = dict[str, Any]
NDJSON = {"Accept": "application/x-ndjson"}
CSV = {"Accept": "text/csv"}
ALL_IDS = sorted(oid(key) for key in DIGITS)
BLOCKS = ("origin", "governance", "bans", "presentations")


class Chain(Registry):
    """A registry whose loads keep `keep` graphs and `changes` change sets."""

    def __init__(self, conninfo: str, app: Flask, keep: int, changes: int):
        super().__init__(conninfo, app)
        self.keep, self.changes = keep, changes

    def load(self, payload: bytes, keep: int = 0) -> int:
        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            result = load_document(
                conn,
                io.BytesIO(payload),
                keep_generations=keep or self.keep,
                keep_changes=self.changes,
            )
        assert result.generation is not None
        return result.generation


def new_chain(
    database_factory: Callable[[], str], keep: int, changes: int, *graphs: list[Record]
) -> Iterator[Chain]:
    """A database of its own with the graphs loaded in turn (generations 1, 2, ...)."""
    from app import create_app

    conninfo = database_factory()
    app = create_app(app_config(conninfo))
    made = Chain(conninfo, app, keep, changes)
    for number, records in enumerate(graphs, start=1):
        assert made.load(document(records)) == number
    yield made
    app.extensions["registry_db"].close()


@pytest.fixture(scope="module")
def chain(database_factory: Callable[[], str]) -> Iterator[Chain]:
    """A, B, C, A: every graph kept, so that each generation's records can be looked up."""
    yield from new_chain(database_factory, 10, 30, GRAPH_A, GRAPH_B, GRAPH_C, GRAPH_A)


def body(registry: Registry, url: str, headers: dict[str, str] | None = None) -> Any:
    """The JSON body of a 200."""
    response = registry.get(url, headers)
    assert response.status_code == 200, (url, response.status_code, response.get_data())
    return response.get_json()


def record(registry: Registry, origin_id: str, generation: int) -> Record | None:
    """The Origin record generation answers for an id, or None when it has no such origin."""
    response = registry.get(f"/registry/origins/{origin_id}?generation={generation}")
    assert response.status_code in (200, 404)
    return None if response.status_code == 404 else response.get_json()["origin"]


def model(registry: Registry, since: int, generation: int) -> list[Record]:
    """The net changes from since to generation, worked out from the records each answers by
    lookup (docs/api.md, Changes since any generation read literally), by origin id."""
    found = []
    for origin_id in ALL_IDS:
        before, after = record(registry, origin_id, since), record(registry, origin_id, generation)
        if before == after:
            continue
        if before is None:
            kind, blocks = "added", []
        elif after is None:
            kind, blocks = "removed", []
        else:
            kind, blocks = "changed", [b for b in BLOCKS if before[b] != after[b]]
        found.append(
            {"id": origin_id, "kind": kind, "blocks": blocks, "before": before, "after": after}
        )
    return found


def counts_of(changes: list[Record]) -> dict[str, int]:
    """added, removed and changed among changes."""
    return {
        kind: sum(c["kind"] == kind for c in changes) for kind in ("added", "removed", "changed")
    }


@pytest.mark.parametrize(
    ("since", "generation"), [(1, 4), (2, 4), (3, 4), (4, 4), (1, 3), (2, 3), (1, 2)]
)
def test_the_net_changes_are_the_records_of_since_against_those_of_the_generation(
    chain: Chain, since: int, generation: int
) -> None:
    expected = model(chain, since, generation)
    answer = body(chain, f"/registry/changes?since={since}&generation={generation}&limit=200")
    assert (answer["generation"], answer["since"], answer["previous"]) == (
        generation,
        since,
        generation - 1,
    )
    assert answer["changes"] == expected
    assert answer["counts"] == counts_of(expected)
    assert answer["filters_applied"] == {}
    assert answer["page"]["total"] == len(expected)


def test_the_chain_is_what_its_graphs_say(chain: Chain) -> None:
    """The fixture's facts: since 1 at 4 nets to nothing, since 2 at 4 to B undone."""
    assert body(chain, "/registry/changes?since=1")["changes"] == []
    undone = body(chain, "/registry/changes?since=2&limit=200")
    assert undone["counts"] == {"added": 1, "removed": 1, "changed": 6}
    assert body(chain, "/registry/changes?since=4")["page"]["total"] == 0


@pytest.mark.parametrize("generation", [2, 3, 4])
def test_since_previous_is_the_answer_without_since(chain: Chain, generation: int) -> None:
    for filters in ("", "&kind=changed", "&block=origin", "&kind=added"):
        plain = body(chain, f"/registry/changes?generation={generation}{filters}&limit=200")
        assert plain["since"] == plain["previous"] == generation - 1
        since = body(
            chain,
            f"/registry/changes?since={generation - 1}&generation={generation}{filters}&limit=200",
        )
        del plain["generated_at"], since["generated_at"]
        assert since == plain


def test_the_first_generation_answers_since_null_without_since(chain: Chain) -> None:
    answer = body(chain, "/registry/changes?generation=1")
    assert (answer["previous"], answer["since"]) == (None, None)
    assert body(chain, "/registry/changes?generation=1&since=1")["changes"] == []


@pytest.mark.parametrize(
    ("query", "kind", "block"),
    [("kind=added", "added", None), ("kind=removed", "removed", None),
     ("kind=changed", "changed", None), ("block=bans", None, "bans"),
     ("kind=changed&block=bans", "changed", "bans"), ("block=origin", None, "origin"),
     ("block=presentations", None, "presentations")],
)  # fmt: skip
def test_filters_over_the_net_changes(
    chain: Chain, query: str, kind: str | None, block: str | None
) -> None:
    expected = [
        change
        for change in model(chain, 2, 4)
        if (kind is None or change["kind"] == kind) and (block is None or block in change["blocks"])
    ]
    answer = body(chain, f"/registry/changes?since=2&{query}&limit=200")
    assert answer["changes"] == expected
    assert answer["page"]["total"] == len(expected)
    assert answer["counts"] == counts_of(model(chain, 2, 4))
    assert "since" not in answer["filters_applied"]


def test_pages_follow_their_links_through_one_since_and_generation(chain: Chain) -> None:
    expected = [change["id"] for change in model(chain, 2, 4)]
    seen: list[str] = []
    url = "/registry/changes?since=2&limit=3"
    while True:
        response = chain.get(url)
        assert response.status_code == 200
        seen += [change["id"] for change in response.get_json()["changes"]]
        links = parse_links(response.headers["Link"])
        for _, query in links.values():
            assert (query["since"], query["generation"], query["limit"]) == ("2", "4", "3")
        if "next" not in links:
            break
        path, query = links["next"]
        url = path + "?" + "&".join(f"{name}={value}" for name, value in query.items())
    assert seen == expected
    assert links["last"][1]["page"] == str(-(-len(expected) // 3))


def test_the_exports_stream_the_net_changes(chain: Chain) -> None:
    expected = model(chain, 2, 4)
    response = chain.get("/registry/changes?since=2", NDJSON)
    assert response.status_code == 200
    lines = response.get_data().split(b"\n")
    assert lines[-1] == b""
    assert [orjson.loads(line) for line in lines[:-1]] == expected
    assert response.headers["Registry-Total"] == str(len(expected))
    assert response.headers["Registry-Generation"] == "4"
    filtered = chain.get("/registry/changes?since=2&kind=changed&block=bans", NDJSON)
    wanted = [c for c in expected if "bans" in c["blocks"]]
    assert [orjson.loads(line) for line in filtered.get_data().splitlines()] == wanted
    assert filtered.headers["Registry-Total"] == str(len(wanted))
    as_csv = chain.get("/registry/changes?since=2", CSV)
    assert as_csv.status_code == 200
    rows = list(csv.reader(io.StringIO(as_csv.get_data(as_text=True), newline="")))
    assert rows[0] == ["id", "kind", "blocks", "name", "address"]
    assert as_csv.headers["Registry-Total"] == str(len(rows) - 1) == str(len(expected))
    for row, change in zip(rows[1:], expected, strict=True):
        shown = change["before"] if change["kind"] == "removed" else change["after"]
        address = shown["bans"]["address"] or ""
        assert row == [
            change["id"], change["kind"], ";".join(change["blocks"]),
            shown["origin"]["name"], address,
        ]  # fmt: skip


@pytest.mark.parametrize(
    "since",
    ["0", "-1", "+1", "x", "1.0", "1e3", "", "9223372036854775808", "18446744073709551616"],
)
def test_a_malformed_since_is_a_400(chain: Chain, since: str) -> None:
    for headers in ({}, NDJSON):
        response = chain.get(f"/registry/changes?since={since}", headers)
        assert response.status_code == 400
        answer = response.get_json()
        assert answer["error"] == "Invalid request parameters"
        assert set(answer["details"]) == {"since"}


def test_a_since_newer_than_the_generation_answered_is_a_400(chain: Chain) -> None:
    for headers in ({}, NDJSON, CSV):
        response = chain.get("/registry/changes?since=4&generation=3", headers)
        assert response.status_code == 400, response.get_data()
        answer = response.get_json()
        assert (answer["success"], answer["error"]) == (False, "Invalid request parameters")
        assert list(answer["details"]) == ["since"]
        assert response.headers["Cache-Control"] == "no-store"


@pytest.mark.parametrize("since", [5, 99, 9223372036854775807])
def test_a_since_never_produced_is_a_404(chain: Chain, since: int) -> None:
    for query in (f"since={since}", f"since={since}&generation=2"):
        for headers in ({}, NDJSON):
            response = chain.get(f"/registry/changes?{query}", headers)
            assert response.status_code == 404
            assert response.get_json() == {
                "success": False,
                "error": "Generation not found",
                "details": {"since": since, "current": 4},
            }


def test_an_answer_since_m_has_its_own_validators(chain: Chain) -> None:
    plain = chain.get("/registry/changes")
    since = chain.get("/registry/changes?since=2")
    assert plain.headers["ETag"] != since.headers["ETag"]
    again = chain.get("/registry/changes?since=2", {"If-None-Match": since.headers["ETag"]})
    assert again.status_code == 304
    assert again.headers["ETag"] == since.headers["ETag"]


@pytest.fixture
def short(database_factory: Callable[[], str]) -> Iterator[Chain]:
    """Three graphs and three change sets kept (REGISTRY_KEEP_CHANGES=3), A, B, C loaded."""
    yield from new_chain(database_factory, 3, 3, GRAPH_A, GRAPH_B, GRAPH_C)


def test_keep_changes_3_answers_410_from_the_right_generation(short: Chain) -> None:
    """Change sets 1..3 kept: every since answers. Generation 4 drops change set 1 (oldest
    since still 1: since 1 needs only 2..4); generation 5 drops 2: since 1 is a 410."""
    assert body(short, "/registry/changes?since=1")["generation"] == 3
    pinned = short.get("/registry/changes?since=1&generation=3")
    assert pinned.status_code == 200
    assert short.load(document(GRAPH_A)) == 4
    assert body(short, "/registry/changes?since=1")["changes"] == []
    assert short.load(document(GRAPH_B)) == 5
    for query in ("since=1", "since=1&kind=added", "since=1&generation=3"):
        for headers in ({}, NDJSON, CSV):
            response = short.get(f"/registry/changes?{query}", headers)
            assert response.status_code == 410, (query, headers)
            assert response.get_json() == {
                "success": False,
                "error": "Changes no longer available",
                "details": {"since": 1, "oldest_since": 2, "current": 5},
            }
    # the pinned answer it gave before turned into a 410: never a 304 under its ETag
    again = short.get(
        "/registry/changes?since=1&generation=3", {"If-None-Match": pinned.headers["ETag"]}
    )
    assert again.status_code == 410
    assert body(short, "/registry/changes?since=2")["counts"] == {
        "added": 0,
        "removed": 0,
        "changed": 0,
    }
    assert body(short, "/registry/changes?since=3&limit=200")["changes"] == model(short, 3, 5)


def test_a_since_that_answers_nothing_is_not_refused_by_the_export_limit(chain: Chain) -> None:
    """With the one export slot taken, an export since a generation never produced is still
    its 404, one newer than the generation answered its 400, and one since the generation
    answered its empty export: the since is checked before a slot is taken. An export since a
    kept generation then gets the limit's 503."""
    from app import create_app

    app = create_app(app_config(chain.conninfo, REGISTRY_MAX_EXPORTS=1))
    try:
        one = Registry(chain.conninfo, app)
        held = one.client.get(
            "/registry/changes?since=2", headers={**ADMIN, **NDJSON}, buffered=False
        )
        assert held.status_code == 200
        chunks = iter(held.response)
        assert next(chunks).startswith(b'{"id":')
        for headers in (NDJSON, CSV):
            never = one.get("/registry/changes?since=99", headers)
            assert never.status_code == 404, never.get_data()
            assert never.get_json()["details"] == {"since": 99, "current": 4}
            newer = one.get("/registry/changes?since=4&generation=3", headers)
            assert newer.status_code == 400, newer.get_data()
            assert "since" in newer.get_json()["details"]
            limited = one.get("/registry/changes?since=3", headers)
            assert limited.status_code == 503, limited.get_data()
            assert "REGISTRY_MAX_EXPORTS" in limited.get_json()["message"]
        held.close()
        del chunks
    finally:
        app.extensions["registry_db"].close()
