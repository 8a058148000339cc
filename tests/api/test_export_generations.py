"""Exports and generations (docs/api.md, Generations and conditional requests; docs/export.md):
headers, 304, pinned exports, 410 and 400."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import orjson
import pytest

from tests.api.test_generations import GONE, WEAK_ETAG, Registry, fresh_registry, graph

NDJSON = {"Accept": "application/x-ndjson"}
CSV = {"Accept": "text/csv"}


@pytest.fixture
def registry(database_factory: Callable[[], str]) -> Iterator[Registry]:
    """A registry of this test's own (graph A is generation 1), for tests that load."""
    yield from fresh_registry(database_factory)


@pytest.fixture(scope="module")
def settled(database_factory: Callable[[], str]) -> Iterator[Registry]:
    """A registry shared by the tests that only read (generation 1 stays current)."""
    yield from fresh_registry(database_factory)


def export_names(response: object) -> list[str]:
    """The origin names of an NDJSON export."""
    data = response.get_data()  # type: ignore[attr-defined]
    return [orjson.loads(line)["origin"]["name"] for line in data.split(b"\n")[:-1]]


def test_exports_carry_their_generation_and_an_etag_of_their_own(settled: Registry) -> None:
    """Registry-Generation, Last-Modified, Cache-Control as the listing; one ETag per form."""
    page = settled.get("/registry/origins")
    tags = {page.headers["ETag"]}
    for accept in (NDJSON, CSV):
        answer = settled.get("/registry/origins", accept)
        assert answer.status_code == 200
        for name in ("Registry-Generation", "Last-Modified", "Cache-Control"):
            assert answer.headers[name] == page.headers[name], name
        assert answer.headers["Vary"] == "Accept"
        assert WEAK_ETAG.match(answer.headers["ETag"])
        tags.add(answer.headers["ETag"])
    assert len(tags) == 3


def test_an_export_revalidates_to_304(settled: Registry) -> None:
    """Its own ETag gets 304 (no body, Vary kept); the JSON page's ETag does not match it."""
    for accept in (NDJSON, CSV):
        tag = settled.get("/registry/origins", accept).headers["ETag"]
        again = settled.get("/registry/origins", {**accept, "If-None-Match": tag})
        assert again.status_code == 304
        assert again.get_data() == b""
        assert again.headers["ETag"] == tag
        assert again.headers["Vary"] == "Accept"
        json_tag = settled.get("/registry/origins").headers["ETag"]
        other = settled.get("/registry/origins", {**accept, "If-None-Match": json_tag})
        assert other.status_code == 200
        other.close()
    page = settled.get("/registry/origins")
    assert (
        settled.get("/registry/origins", {"If-None-Match": page.headers["ETag"]}).headers["Vary"]
        == "Accept"
    )


def test_pinned_exports_read_their_generation(registry: Registry) -> None:
    """generation=n streams n's origins while n is kept; without it, the newest."""
    assert registry.load(graph("B", 3)) == 2
    old = registry.get("/registry/origins?generation=1", NDJSON)
    assert old.headers["Registry-Generation"] == "1"
    assert export_names(old) == [f"A-{n}" for n in range(5)]
    new = registry.get("/registry/origins", NDJSON)
    assert new.headers["Registry-Generation"] == "2"
    assert export_names(new) == ["B-0", "B-1", "B-2"]
    filtered = registry.get("/registry/origins?generation=1&search=a-3", CSV)
    assert filtered.headers["Registry-Generation"] == "1"
    assert filtered.get_data().decode().splitlines()[1].split(",")[1] == "A-3"


def test_exports_of_dropped_or_unknown_generations_are_refused(registry: Registry) -> None:
    """410 for a generation no longer kept, 404 for one never produced, as JSON."""
    registry.load(graph("B"))
    registry.load(graph("C"))  # keeps 3 and 2; drops 1
    for accept in (NDJSON, CSV):
        gone = registry.get("/registry/origins?generation=1", accept)
        assert gone.status_code == 410
        assert gone.get_json() == {
            "success": False,
            "error": GONE,
            "details": {"generation": 1, "current": 3},
        }
        unknown = registry.get("/registry/origins?generation=99", accept)
        assert unknown.status_code == 404
        assert unknown.get_json() == {
            "success": False,
            "error": "Generation not found",
            "details": {"generation": 99, "current": 3},
        }
        assert registry.get("/registry/origins?generation=2", accept).status_code == 200
