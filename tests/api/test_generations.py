"""Generations over HTTP (docs/api.md, Generations and conditional requests): headers on every
answer, 304, pinned reads, 410, 404 and 400.

Each test loads graphs of its own into a database of its own, so generation numbers are
predictable within it.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import psycopg
import pytest
from flask import Flask
from werkzeug.http import http_date, parse_date

from registry.loader.loading import load_document
from tests.conftest import app_config, document, make_token

WEAK_ETAG = re.compile(r'W/"(\d+)-[0-9a-f]{12}"\Z')
GENERATION_HEADERS = ("Registry-Generation", "ETag", "Last-Modified", "Cache-Control")
ADMIN = {"Authorization": f"Bearer {make_token()}"}
GONE = "Generation no longer available"


def origin_uuid(letter: str, number: int) -> str:
    """A distinct origin uuid per graph letter."""
    return f"{letter.lower() * 8}-0000-4000-8000-{number:012x}"


def graph(letter: str, origins: int = 5) -> bytes:
    """A small graph whose origins are named after its letter and all hold an address."""
    records: list[dict[str, Any]] = [
        {"type": "catalog", "transports": ["iptv"]},
        {
            "type": "feed",
            "connected": True,
            "networks": origins,
            "iptv_networks": None,
            "ovp_networks": None,
            "channels": None,
            "programs": None,
            "reviews": None,
            "pending_reviews": None,
        },
    ]
    for number in range(origins):
        origin_id = f"svc:origin:{origin_uuid(letter, number)}"
        records.append(
            {
                "type": "origin",
                "id": origin_id,
                "name": f"{letter}-{number}",
                "network_id": None,
                "registry_id": None,
                "reviewed": True,
            }
        )
        records.append(
            {
                "type": "allocation",
                "origin_id": origin_id,
                "network": 1,
                "station": 0,
                "channel": number,
                "publication_status": "published",
                "held_at": None,
                "held_reason": None,
            }
        )
    return document(records)


class Registry:
    """A database of its own, the app over it, and loads through the real loader."""

    def __init__(self, conninfo: str, app: Flask):
        self.conninfo = conninfo
        self.app = app
        self.client = app.test_client()

    def load(self, payload: bytes, keep: int = 2) -> int:
        """Load a graph document; the generation it produced."""
        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            result = load_document(conn, io.BytesIO(payload), keep_generations=keep)
        assert result.generation is not None
        return result.generation

    def get(self, url: str, headers: dict[str, str] | None = None, admin: bool = True) -> Any:
        """GET url with the admin token (or without one) and extra headers."""
        return self.client.get(url, headers={**(ADMIN if admin else {}), **(headers or {})})


def fresh_registry(database_factory: Callable[[], str]) -> Iterator[Registry]:
    """A fresh database holding graph A as generation 1, and the app over it."""
    from app import create_app

    conninfo = database_factory()
    app = create_app(app_config(conninfo))
    made = Registry(conninfo, app)
    assert made.load(graph("A")) == 1
    yield made
    app.extensions["registry_db"].close()


@pytest.fixture
def registry(database_factory: Callable[[], str]) -> Iterator[Registry]:
    """A registry of this test's own, for tests that load."""
    yield from fresh_registry(database_factory)


@pytest.fixture(scope="module")
def settled(database_factory: Callable[[], str]) -> Iterator[Registry]:
    """A registry shared by the tests that only read (generation 1 stays current)."""
    yield from fresh_registry(database_factory)


LOOKUP_A = f"/registry/origins/svc:origin:{origin_uuid('a', 1)}"
URLS = [
    "/summary",
    "/registry/summary",
    "/registry/origins?limit=2",
    LOOKUP_A,
    "/registry/addresses/1.0.1",
]


def names(response: Any) -> list[str]:
    """The origin names of a listing."""
    return [item["origin"]["name"] for item in response.get_json()["origins"]]


@pytest.mark.parametrize("url", URLS)
def test_every_answer_carries_its_generation(registry: Registry, url: str) -> None:
    """Registry-Generation, a weak ETag of that generation, Last-Modified, Cache-Control."""
    first = registry.get(url)
    assert first.status_code == 200
    assert first.headers["Registry-Generation"] == "1"
    match = WEAK_ETAG.fullmatch(first.headers["ETag"])
    assert match is not None and match.group(1) == "1"
    assert parse_date(first.headers["Last-Modified"]) is not None
    public = url == "/summary"
    assert first.headers["Cache-Control"] == ("public, no-cache" if public else "private, no-cache")
    # the same URL within a generation: the same ETag; after a load, another
    assert registry.get(url).headers["ETag"] == first.headers["ETag"]
    assert registry.load(graph("A")) == 2  # the same document again: a new generation
    second = registry.get(url)
    assert second.headers["Registry-Generation"] == "2"
    assert second.headers["ETag"] != first.headers["ETag"]
    assert parse_date(second.headers["Last-Modified"]) > parse_date(first.headers["Last-Modified"])


def test_etags_differ_between_urls(settled: Registry) -> None:
    """Two URLs of one generation never share an ETag."""
    tags = {settled.get(url).headers["ETag"] for url in URLS}
    tags.add(settled.get("/registry/origins?limit=3").headers["ETag"])
    assert len(tags) == len(URLS) + 1


@pytest.mark.parametrize("url", URLS)
def test_if_none_match_gets_304_without_a_body(settled: Registry, url: str) -> None:
    """The current ETag (alone, in a list, or as its strong twin) gets 304, headers kept."""
    ok = settled.get(url)
    tag = ok.headers["ETag"]
    for given in (tag, f'"other", {tag}', tag.removeprefix("W/"), f'W/"0-000000000000", {tag}'):
        response = settled.get(url, {"If-None-Match": given})
        assert response.status_code == 304, given
        assert response.get_data() == b""
        for name in GENERATION_HEADERS:
            assert response.headers[name] == ok.headers[name], name
    assert settled.get(url, {"If-None-Match": 'W/"1-000000000000"'}).status_code == 200


@pytest.mark.parametrize("url", URLS)
def test_star_matches_what_exists(settled: Registry, url: str) -> None:
    """If-None-Match: * gets 304 wherever there is an answer."""
    assert settled.get(url, {"If-None-Match": "*"}).status_code == 304


@pytest.mark.parametrize(
    "url", ["/registry/origins/svc:origin:" + origin_uuid("b", 1), "/registry/addresses/9.9.9"]
)
def test_missing_origin_is_404_whatever_the_validators(settled: Registry, url: str) -> None:
    """A lookup that matches nothing is 404 with *, a matching date or any tag: no 304."""
    for headers in (
        {"If-None-Match": "*"},
        {"If-Modified-Since": http_date(datetime.now(UTC) + timedelta(days=1))},
    ):
        response = settled.get(url, headers)
        assert response.status_code == 404, headers
        assert response.headers["Registry-Generation"] == "1"
        assert response.headers["Cache-Control"] == "no-store"


@pytest.mark.parametrize("url", URLS)
def test_if_modified_since(settled: Registry, url: str) -> None:
    """At or after Last-Modified: 304; before it, or not a date: 200."""
    modified = parse_date(settled.get(url).headers["Last-Modified"])
    assert modified is not None
    for since, status in (
        (http_date(modified), 304),
        (http_date(modified + timedelta(hours=1)), 304),
        (http_date(modified - timedelta(seconds=1)), 200),
        ("yesterday", 200),
    ):
        assert settled.get(url, {"If-Modified-Since": since}).status_code == status, since


def test_if_none_match_wins_over_if_modified_since(settled: Registry) -> None:
    """RFC 9110 13.2.2: with If-None-Match present, If-Modified-Since is not looked at."""
    url = "/registry/summary"
    ok = settled.get(url)
    stale = {
        "If-None-Match": 'W/"0-000000000000"',
        "If-Modified-Since": ok.headers["Last-Modified"],
    }
    assert settled.get(url, stale).status_code == 200
    fresh = {
        "If-None-Match": ok.headers["ETag"],
        "If-Modified-Since": "Sat, 01 Jan 2000 00:00:00 GMT",
    }
    assert settled.get(url, fresh).status_code == 304


@pytest.mark.parametrize("url", URLS)
def test_after_a_load_old_validators_get_200(registry: Registry, url: str) -> None:
    """Once a load commits, neither the old ETag nor the old Last-Modified is a 304."""
    old = registry.get(url)
    registry.load(graph("A"))  # the same document: still a new generation
    for headers in (
        {"If-None-Match": old.headers["ETag"]},
        {"If-Modified-Since": old.headers["Last-Modified"]},
    ):
        response = registry.get(url, headers)
        assert response.status_code == 200, headers
        assert response.headers["Registry-Generation"] == "2"


def test_head_gets_304_too(settled: Registry) -> None:
    """HEAD is GET without the body, conditions included."""
    tag = settled.get("/registry/origins").headers["ETag"]
    response = settled.client.head("/registry/origins", headers={**ADMIN, "If-None-Match": tag})
    assert response.status_code == 304


@pytest.mark.parametrize("url", [url for url in URLS if url != "/summary"])
def test_304_never_bypasses_the_token_rules(settled: Registry, url: str) -> None:
    """A matching ETag without a token is 401, with a role-less token 403; never 304."""
    tag = settled.get(url).headers["ETag"]
    anonymous = settled.get(url, {"If-None-Match": tag}, admin=False)
    assert anonymous.status_code == 401
    assert anonymous.headers["Cache-Control"] == "no-store"
    assert "Registry-Generation" not in anonymous.headers
    viewer = {"Authorization": f"Bearer {make_token(roles=['viewer'])}", "If-None-Match": tag}
    forbidden = settled.get(url, viewer, admin=False)
    assert forbidden.status_code == 403
    assert forbidden.headers["Cache-Control"] == "no-store"


@pytest.mark.parametrize(
    ("url", "status"),
    [
        ("/registry/origins?limit=0", 400),
        ("/registry/origins?generation=x", 400),
        ("/registry/summary?page=1", 400),
        ("/registry/origins/not-an-id", 404),
        ("/registry/nowhere", 404),
        ("/summary?generation=1", 400),
    ],
)
def test_error_answers_are_not_stored(settled: Registry, url: str, status: int) -> None:
    """400 and 404 under /registry and on /summary: Cache-Control no-store, no ETag."""
    tag = settled.get("/registry/summary").headers["ETag"]
    response = settled.get(url, {"If-None-Match": tag})
    assert response.status_code == status
    assert response.headers["Cache-Control"] == "no-store"
    assert "ETag" not in response.headers


def test_pinned_reads_answer_from_their_generation(registry: Registry) -> None:
    """generation=n: n's answers while it is kept, whatever loads commit meanwhile."""
    assert registry.load(graph("B", 3)) == 2
    old = registry.get("/registry/origins?generation=1")
    assert old.status_code == 200
    assert old.headers["Registry-Generation"] == "1"
    assert names(old) == [f"A-{n}" for n in range(5)]
    assert old.get_json()["filters_applied"] == {}
    assert names(registry.get("/registry/origins")) == ["B-0", "B-1", "B-2"]
    assert names(registry.get("/registry/origins?generation=2")) == ["B-0", "B-1", "B-2"]
    lookup = registry.get(f"{LOOKUP_A}?generation=1")
    assert (lookup.status_code, lookup.headers["Registry-Generation"]) == (200, "1")
    assert lookup.get_json()["origin"]["origin"]["name"] == "A-1"
    assert registry.get(LOOKUP_A).status_code == 404
    summary = registry.get("/registry/summary?generation=1").get_json()
    assert summary["canonical_origins"] == 5
    address = registry.get("/registry/addresses/1.0.4?generation=1")
    assert address.get_json()["origin"]["origin"]["name"] == "A-4"
    assert registry.get("/registry/addresses/1.0.4").status_code == 404


def test_pinned_conditional_requests(registry: Registry) -> None:
    """A pinned URL revalidates against its own generation, even after later loads."""
    tag = registry.get("/registry/origins?generation=1").headers["ETag"]
    registry.load(graph("B"))
    response = registry.get("/registry/origins?generation=1", {"If-None-Match": tag})
    assert response.status_code == 304
    assert response.headers["Registry-Generation"] == "1"


def test_dropped_generation_is_410(registry: Registry) -> None:
    """Past REGISTRY_KEEP_GENERATIONS a generation is dropped: 410 with the current one."""
    registry.load(graph("B"))
    tag = registry.get("/registry/summary?generation=1").headers["ETag"]
    registry.load(graph("C"))  # keeps 3 and 2; drops 1
    for url in (
        "/registry/origins?generation=1",
        "/registry/summary?generation=1",
        f"{LOOKUP_A}?generation=1",
        "/registry/addresses/1.0.1?generation=1",
    ):
        response = registry.get(url)
        assert response.status_code == 410, url
        assert response.get_json() == {
            "success": False,
            "error": GONE,
            "details": {"generation": 1, "current": 3},
        }
        assert response.headers["Cache-Control"] == "no-store"
    # a client revalidating a dropped generation learns it is gone, not "not modified"
    assert registry.get("/registry/summary?generation=1", {"If-None-Match": tag}).status_code == 410
    assert registry.get("/registry/summary?generation=2").status_code == 200


def test_keep_one_generation(registry: Registry) -> None:
    """With one generation kept, the one before is dropped at once."""
    registry.load(graph("B"), keep=1)
    assert registry.get("/registry/summary?generation=1").status_code == 410
    assert registry.get("/registry/summary?generation=2").status_code == 200


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("0", "must be between 1 and 9223372036854775807"),
        ("9223372036854775808", "must be between 1 and 9223372036854775807"),
        ("-1", "must be a whole number written with the digits 0-9"),
        ("1.0", "must be a whole number written with the digits 0-9"),
        ("", "must not be empty"),
    ],
)
@pytest.mark.parametrize("path", ["/registry/origins", "/registry/summary", LOOKUP_A])
def test_malformed_generation_is_400(settled: Registry, path: str, value: str, why: str) -> None:
    """Not a generation at all: the usual 400 body."""
    response = settled.get(f"{path}?generation={value}")
    assert response.status_code == 400
    assert response.get_json() == {
        "success": False,
        "error": "Invalid request parameters",
        "details": {"generation": [why]},
    }


@pytest.mark.parametrize("value", ["2", "7", "9223372036854775806", "9223372036854775807"])
@pytest.mark.parametrize(
    "path",
    ["/registry/origins", "/registry/summary", LOOKUP_A, "/registry/addresses/1.0.1"],
)
def test_generation_never_produced_is_404(settled: Registry, path: str, value: str) -> None:
    """A well-formed generation this registry never produced: 404 naming the current one."""
    response = settled.get(f"{path}?generation={value}")
    assert response.status_code == 404
    assert response.get_json() == {
        "success": False,
        "error": "Generation not found",
        "details": {"generation": int(value), "current": 1},
    }
    assert response.headers["Cache-Control"] == "no-store"
    assert "Registry-Generation" not in response.headers
    # the 304 path asks the same question first, and answers the same
    assert settled.get(f"{path}?generation={value}", {"If-None-Match": "*"}).status_code == 404


def test_links_pin_the_answers_generation(registry: Registry) -> None:
    """Following next after a load still sweeps the generation the sweep started in."""
    first = registry.get("/registry/origins?limit=2")
    registry.load(graph("B", 7))
    seen = names(first)
    response = first
    while "next" in (links := parse_links(response.headers["Link"])):
        response = registry.get(links["next"])
        assert response.headers["Registry-Generation"] == "1"
        seen += names(response)
    assert seen == [f"A-{n}" for n in range(5)]
    for url in parse_links(first.headers["Link"]).values():
        assert dict(parse_qsl(urlsplit(url).query))["generation"] == "1"


def parse_links(header: str) -> dict[str, str]:
    """rel -> URL of an RFC 8288 Link header."""
    return {rel: url for url, rel in re.findall(r'<([^>]*)>; rel="(\w+)"', header)}
