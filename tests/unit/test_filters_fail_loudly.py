"""A filter added in one place and not the others fails loudly (ARCHITECTURE.md, "Adding a
filter or a facet"): a facet statement refuses a filter it does not read, rather than count
the whole graph; a search's remembered matches are keyed by every filter, so a search
narrowed by one never answers from another's positions. (The third point, a kept
generation without a filter's column, is a 503: tests/api/test_metrics_endpoint.py.)"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from registry.database import repository
from registry.database.facets import UnknownFilter, facet_statement
from schemas.params import FACET_NAMES, FILTER_NAMES

# A value of each filter as the parser gives it; a filter the parser gains must be added.
SAMPLES: dict[str, Any] = {
    "governance_state": "governed",
    "allocation_state": "allocated",
    "publication_status": "held",
    "transport": "iptv",
    "has_presentations": True,
    "network_id": "svc:network:5d0c6a1e-2b3f-4c5d-8e9f-a0b1c2d3e4f5",
    "station_id": 3,
    "search": "news",
    "id": ["svc:origin:1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f"],
}
CONNECTION = SimpleNamespace(info=SimpleNamespace(host="db", port=5432, dbname="registry"))


def test_every_filter_the_parser_gives_is_read() -> None:
    """The filters of the listing's parameters are the ones filter_params reads."""
    assert set(SAMPLES) == set(FILTER_NAMES)
    assert set(FILTER_NAMES) == set(repository.FILTERS_READ)


@pytest.mark.parametrize("name", FILTER_NAMES)
def test_each_filter_changes_the_facet_statement(name: str) -> None:
    """Counted with one filter, the facets are never those of the whole graph."""
    whole = facet_statement({}, list(FACET_NAMES), 10)
    assert facet_statement({name: SAMPLES[name]}, list(FACET_NAMES), 10) != whole


def test_a_filter_no_facet_statement_reads_is_refused() -> None:
    """An unknown filter raises, naming it, instead of falling through to the whole graph."""
    with pytest.raises(UnknownFilter, match="owner_id"):
        facet_statement({"owner_id": "x", "transport": "iptv"}, list(FACET_NAMES), 10)


def search_key(filters: dict[str, Any], offset: int = 0) -> tuple[Any, ...]:
    """The key a search with these filters is remembered under."""
    params = {**repository.filter_params(filters), "limit": 50, "offset": offset}
    return repository._search_key(CONNECTION, params)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", [name for name in FILTER_NAMES if name != "search"])
def test_each_filter_is_part_of_a_searchs_key(name: str) -> None:
    """A search narrowed by any filter is remembered apart from the same search without it;
    the page (offset, limit) is not part of the key."""
    plain = search_key({"search": "news"})
    assert search_key({"search": "news", name: SAMPLES[name]}) != plain
    assert search_key({"search": "news"}, offset=50) == plain
    assert search_key({"search": "other"}) != plain
