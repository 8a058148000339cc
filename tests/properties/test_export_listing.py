"""Exports of generated graphs: NDJSON lines are the listing's origins, CSV rows their fields.

For every filter combination the listing takes, the export streams exactly the origins the
model says match, in contract order, each line the same record as the JSON listing gives,
and the CSV has one row per origin with the columns of contract 8.
"""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING, Any

import orjson
from hypothesis import given, settings

from registry.api.origin_csv import COLUMNS
from tests.properties.model import RegistryModel, parse_filters
from tests.properties.strategies import PROPERTY_SETTINGS, listing_cases

if TYPE_CHECKING:
    from tests.properties.conftest import LoadedGraph

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_text(value: Any) -> str:
    """A field as contract 8 writes it: null empty, booleans true/false, formulas quoted."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def expected_row(record: dict[str, Any]) -> list[str]:
    """The CSV row of one Origin record."""
    origin, bans = record["origin"], record["bans"]
    held = bans["held"] or {}
    transports = {p["transport"] for p in record["presentations"]}
    return [
        csv_text(value)
        for value in (
            origin["id"],
            origin["name"],
            origin["registry_id"],
            origin["network"]["id"],
            origin["network"]["name"],
            record["governance"]["state"],
            record["governance"]["active_edges"],
            bans["allocated"],
            bans["address"],
            bans["network"],
            bans["station"],
            bans["channel"],
            bans["publication_status"],
            held.get("at"),
            held.get("reason"),
            ";".join(t for t in ("iptv", "ovp", "ota", "fast") if t in transports),
            len(record["presentations"]),
        )
    ]


@settings(PROPERTY_SETTINGS, max_examples=30)
@given(case=listing_cases())
def test_exports_stream_the_models_listing(
    registry_graph: LoadedGraph, case: tuple[list[dict[str, Any]], list[tuple[dict[str, str], int]]]
) -> None:
    """NDJSON equals the model's (and so the listing's) origins; CSV parses to their fields."""
    records, queries = case
    registry_graph.load(records)
    model = RegistryModel(records)
    for query, _limit in queries:
        expected = model.matching(parse_filters(query))
        where = f"query {query}"
        answer = registry_graph.client.get(
            "/registry/origins",
            query_string=query,
            headers={**registry_graph.headers, "Accept": "application/x-ndjson"},
        )
        assert answer.status_code == 200, where
        lines = answer.get_data().split(b"\n")
        assert lines[-1] == b"", where
        assert [orjson.loads(line) for line in lines[:-1]] == expected, where
        table = registry_graph.client.get(
            "/registry/origins",
            query_string=query,
            headers={**registry_graph.headers, "Accept": "text/csv"},
        )
        assert table.status_code == 200, where
        rows = list(csv.reader(io.StringIO(table.get_data().decode("utf-8"), newline="")))
        assert tuple(rows[0]) == COLUMNS, where
        assert rows[1:] == [expected_row(record) for record in expected], where
