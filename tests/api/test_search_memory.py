"""Search and network listings at scale: exact totals, pages that agree with them, never stale.

Each search is asked twice (a per-graph memory of results must never change the answers);
the largest network sums its total from the load's counts. A demo graph is loaded, every
answer is compared with a plain-Python reading of the document, then another graph is
loaded into the same database under the same running app, and the answers follow at once.
"""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import orjson
import pytest
from flask import Flask

from registry.database import repository
from registry.database.repository import SEARCHES
from registry.loader.demo import write_demo_document
from tests.api.api_support import CheckedClient, OpenApiConformance
from tests.conftest import load_records
from tests.properties.model import caseless, search_matches

ORIGINS = 1500


def demo(seed: int) -> bytes:
    """A demo graph document."""
    out = io.BytesIO()
    write_demo_document(out, origins=ORIGINS, seed=seed)
    return out.getvalue()


def origins_of(document: bytes) -> list[dict[str, Any]]:
    """The origin records of a document."""
    records = (orjson.loads(line) for line in document.splitlines() if line)
    return [record for record in records if record["type"] == "origin"]


def matching_ids(document: bytes, term: str) -> set[str]:
    """Ids of the origins the properties model's search rule matches (docs/api.md, Listing origins,
    stated apart from the service's folding)."""
    return {
        record["id"]
        for record in origins_of(document)
        if search_matches(term, record["name"], record.get("registry_id"))
    }


def terms_of(document: bytes) -> list[str]:
    """The most frequent name word, a rare one, a registry id, and a term matching nothing."""
    words = Counter(
        word
        for record in origins_of(document)
        for word in caseless(record.get("name") or "").split()
    )
    ranked = [word for word, _ in words.most_common()]
    registry = next(r["registry_id"] for r in origins_of(document) if r.get("registry_id"))
    return [ranked[0], ranked[-1], registry, "zq00xj"]


def every_page(client: CheckedClient, query: str) -> tuple[int, list[str]]:
    """The total, and the ids of every page in order (limit 200)."""
    ids: list[str] = []
    page = 1
    while True:
        body = client.json(f"/registry/origins?{query}&limit=200&page={page}")
        ids.extend(origin["origin"]["id"] for origin in body["origins"])
        if page * 200 >= body["page"]["total"]:
            return body["page"]["total"], ids
        page += 1


@pytest.fixture
def scale_client(
    database_factory: Callable[[], str],
    api_app_factory: Callable[..., Flask],
    api_conformance: OpenApiConformance,
    admin_headers: dict[str, str],
) -> tuple[str, CheckedClient]:
    """An empty database and a checked admin client of an app over it."""
    conninfo = database_factory()
    app = api_app_factory(conninfo)
    return conninfo, CheckedClient(app.test_client(), api_conformance, admin_headers)


def check_searches(client: CheckedClient, document: bytes, terms: list[str]) -> None:
    """Each term's total and pages match the document, asked twice (the second remembered)."""
    for term in terms:
        expected = matching_ids(document, term)
        for _ in range(2):
            total, ids = every_page(client, f"search={quote(term)}")
            assert total == len(expected), term
            assert len(ids) == len(set(ids)) and set(ids) == expected, term


def test_search_totals_are_exact_and_follow_a_new_load(
    scale_client: tuple[str, CheckedClient],
) -> None:
    """Remembered searches answer exactly, and a load replaces their answers at once."""
    conninfo, client = scale_client
    first, second = demo(seed=3), demo(seed=4)
    load_records(conninfo, first)
    terms = terms_of(first)
    check_searches(client, first, terms)
    load_records(conninfo, second)
    check_searches(client, second, terms + terms_of(second))


def test_a_search_page_past_the_end_is_empty_with_the_total(
    scale_client: tuple[str, CheckedClient],
) -> None:
    """Past the last page: no origins, the same exact total, remembered or not."""
    conninfo, client = scale_client
    document = demo(seed=5)
    load_records(conninfo, document)
    term = terms_of(document)[0]
    for _ in range(2):
        body = client.json(f"/registry/origins?search={quote(term)}&page=999&limit=200")
        assert body["origins"] == []
        assert body["page"]["total"] == len(matching_ids(document, term))


def test_the_largest_network_pages_agree_with_its_total(
    scale_client: tuple[str, CheckedClient],
) -> None:
    """The total summed from the load's counts equals what the pages hold, with flags too."""
    conninfo, client = scale_client
    document = demo(seed=6)
    load_records(conninfo, document)
    sizes = Counter(r["network_id"] for r in origins_of(document) if r.get("network_id"))
    network, size = sizes.most_common(1)[0]
    expected = {r["id"] for r in origins_of(document) if r.get("network_id") == network}
    total, ids = every_page(client, f"network_id={quote(network)}")
    assert total == size == len(ids) and set(ids) == expected
    governed, governed_ids = every_page(
        client, f"network_id={quote(network)}&governance_state=governed"
    )
    assert governed == len(governed_ids) == len(set(governed_ids))
    assert 0 < governed < size and set(governed_ids) < expected


def test_remembered_searches_keep_each_generation_apart(
    scale_client: tuple[str, CheckedClient],
) -> None:
    """A search remembered in one generation never answers a request for another one."""
    conninfo, client = scale_client
    SEARCHES.clear()
    first, second = demo(seed=7), demo(seed=8)
    load_records(conninfo, first)
    load_records(conninfo, second)
    terms = [t for t in terms_of(first) if matching_ids(first, t) != matching_ids(second, t)]
    assert terms, "the two demo graphs should differ on some term"
    latest = int(client.get("/registry/summary").headers["Registry-Generation"])
    for term in terms:
        # Remembered in the newest generation first, then asked pinned to the older one, then
        # unpinned again: each answer is its own generation's, every page.
        for query, document in (
            (f"search={quote(term)}", second),
            (f"search={quote(term)}&generation={latest - 1}", first),
            (f"search={quote(term)}", second),
        ):
            for _ in range(2):
                total, ids = every_page(client, query)
                expected = matching_ids(document, term)
                assert total == len(expected) and set(ids) == expected, query
    assert SEARCHES.held > 0  # the later pages came from remembered positions


def test_pages_past_the_remembered_positions_stay_exact(
    scale_client: tuple[str, CheckedClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search with more matches than are remembered: the pages beyond run the whole search,
    the pages within read the positions, and every page agrees with the one total."""
    conninfo, client = scale_client
    monkeypatch.setattr(repository, "REMEMBERED", 30)
    SEARCHES.clear()
    document = demo(seed=9)
    load_records(conninfo, document)
    term = terms_of(document)[0]
    expected = matching_ids(document, term)
    assert len(expected) > 60  # the frequent word: several pages beyond the first 30
    for _ in range(2):
        ids: list[str] = []
        page = 1
        while True:
            body = client.json(f"/registry/origins?search={quote(term)}&limit=20&page={page}")
            assert body["page"]["total"] == len(expected)
            ids.extend(origin["origin"]["id"] for origin in body["origins"])
            if page * 20 >= len(expected):
                break
            page += 1
        assert len(ids) == len(set(ids)) and set(ids) == expected
    remembered = [entry for entry in SEARCHES.results() if entry.total == len(expected)]
    assert remembered and len(remembered[0].positions) == 30


def test_distinct_unmatched_searches_stay_within_the_bound(
    scale_client: tuple[str, CheckedClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Searches that match nothing keep no positions, yet each is remembered: many distinct
    ones through the API leave the memory within its bound on entries (lowered here so that a
    few hundred requests reach it), and every answer is still exact."""
    conninfo, client = scale_client
    load_records(conninfo, demo(seed=3))
    SEARCHES.clear()
    monkeypatch.setattr(SEARCHES, "max_entries", 50, raising=False)
    for number in range(300):
        body = client.json(f"/registry/origins?search=zq{number:05d}xj&limit=1")
        assert body["page"]["total"] == 0 and body["origins"] == []
        assert len(SEARCHES.results()) <= 50, number
    assert len(SEARCHES.results()) == 50 and SEARCHES.held == 0
    # a remembered search still answers exactly
    assert client.json("/registry/origins?search=zq00299xj")["page"]["total"] == 0
    SEARCHES.clear()
