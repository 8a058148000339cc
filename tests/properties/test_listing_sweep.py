"""GET /registry/origins swept page by page for generated graphs, filters and limits.

Every matching origin must come exactly once, in listing order, each page's block and
filters_applied right, every record field-for-field the model's.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

from hypothesis import event, given, settings

from tests.properties.model import FACET_SIZE_DEFAULT, RegistryModel, page_block, parse_filters
from tests.properties.strategies import PROPERTY_SETTINGS, examples, faceted_listing_cases

if TYPE_CHECKING:
    from tests.properties.conftest import LoadedGraph

LIST_KEYS = {"success", "generated_at", "page", "filters_applied", "origins"}
UTC_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|\+00:00)\Z")


def origin_ids(records: list[dict[str, Any]]) -> list[str]:
    """The origin ids of a list of Origin records, in order."""
    return [record["origin"]["id"] for record in records]


def sweep(graph: LoadedGraph, model: RegistryModel, query: dict[str, str], limit: int) -> None:
    """Read every page of one listing and the page past its end, each checked against the model.

    With facet: every page has the same facets, the model's over every match (docs/api.md, Facets
    and ids).
    """
    filters = parse_filters(query)
    expected = model.matching(filters)
    names = query["facet"].split(",") if "facet" in query else None
    facets = None
    if names is not None:
        size = int(query.get("facet_size", FACET_SIZE_DEFAULT))
        facets = model.facets(filters, names, size)
        event(
            "facets: " + ("truncated" if any(f["truncated"] for f in facets.values()) else "whole")
        )
    total = len(expected)
    last_page = max(1, math.ceil(total / limit))
    # Shown by --hypothesis-show-statistics: evidence that the cases are not all trivial.
    event("matches: " + ("none" if not total else "all" if total == len(model.ordered) else "some"))
    event("pages: " + ("1" if last_page == 1 else "2-5" if last_page <= 5 else "6+"))
    if "search" in query:
        event("search: " + ("matches" if total else "no match"))
    swept: list[str] = []
    for page in range(1, last_page + 2):
        body = graph.get_json(
            "/registry/origins", {**query, "page": str(page), "limit": str(limit)}
        )
        where = f"query {query}, page {page}, limit {limit}"
        assert set(body) == (LIST_KEYS if facets is None else LIST_KEYS | {"facets"}), where
        assert body["success"] is True
        assert UTC_DATE_TIME.match(body["generated_at"]), body["generated_at"]
        assert body["filters_applied"] == filters, where
        assert body["page"] == page_block(total, page, limit), where
        wanted = expected[(page - 1) * limit : page * limit]
        # Ids first: a wrong order or membership reads far better than a record diff.
        assert origin_ids(body["origins"]) == origin_ids(wanted), where
        assert body["origins"] == wanted, where
        if facets is not None:
            # The names in the order asked, then each facet's values in order.
            assert list(body["facets"]) == names, where
            assert body["facets"] == facets, where
        swept += origin_ids(body["origins"])
    assert swept == origin_ids(expected)
    assert len(set(swept)) == len(swept)


@settings(PROPERTY_SETTINGS, max_examples=examples(100))
@given(case=faceted_listing_cases())
def test_sweeping_every_page_returns_the_models_listing(
    registry_graph: LoadedGraph, case: tuple[list[dict[str, Any]], list[tuple[dict[str, str], int]]]
) -> None:
    """Every filter combination and limit: all matches once, in order, every field equal, and
    the facets asked for counted over all of them."""
    records, queries = case
    registry_graph.load(records)
    model = RegistryModel(records)
    for query, limit in queries:
        sweep(registry_graph, model, query, limit)
