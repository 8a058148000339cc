"""Exports of generated graphs: NDJSON lines are the listing's origins, CSV rows their fields.

For every filter combination the listing takes, the export streams exactly the origins the
model says match, in listing order, each line the same record as the JSON listing gives,
and the CSV has one row per origin with the columns of docs/export.md. The CSV rows, built in
SQL when the graph is loaded, read back with Python's csv module, are the model's records
as docs/export.md writes them, whatever text the graph holds.
"""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING, Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.properties.model import Record, RegistryModel, parse_filters
from tests.properties.strategies import PROPERTY_SETTINGS, examples, graph_documents, listing_cases

if TYPE_CHECKING:
    from tests.properties.conftest import LoadedGraph

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# CSV columns (docs/export.md), in its order, as documented (not the service's own
# list): the header every CSV export must have.
CONTRACT_COLUMNS = (
    "id", "name", "registry_id", "network_id", "network_name", "governance_state",
    "active_edges", "allocated", "address", "network", "station", "channel",
    "publication_status", "held_at", "held_reason", "transports", "presentations",
)  # fmt: skip


def csv_text(value: Any) -> str:
    """A field as docs/export.md writes it: null empty, booleans true/false, formulas quoted."""
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


@settings(PROPERTY_SETTINGS, max_examples=examples(30))
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
        assert tuple(rows[0]) == CONTRACT_COLUMNS, where
        assert rows[1:] == [expected_row(record) for record in expected], where


# What CSV and spreadsheets treat specially, drawn often, among any other character (no NUL,
# which a graph document cannot hold, and no lone surrogate, which JSON text cannot).
CSV_SPECIALS = ("=", "+", "-", "@", "\t", "\r", "\n", '"', ",", "'", " ", ";", "\u2028")
AWKWARD_TEXT = st.text(
    st.one_of(
        st.sampled_from(CSV_SPECIALS),
        st.characters(exclude_categories=("Cs",), exclude_characters="\x00"),
    ),
    max_size=6,
)


@st.composite
def awkward_documents(draw: st.DrawFn) -> list[Record]:
    """A generated graph whose names, registry ids, network ids and names and held reasons
    are replaced with awkward text (network ids consistently, wherever they are named)."""
    records = draw(graph_documents())
    networks = [record["id"] for record in records if record["type"] == "network"]
    renamed = draw(
        st.lists(
            AWKWARD_TEXT.filter(bool), unique=True, min_size=len(networks), max_size=len(networks)
        )
    )
    network_ids = dict(zip(networks, renamed, strict=True))
    for record in records:
        if record["type"] == "network":
            record["id"] = network_ids[record["id"]]
            record["name"] = draw(AWKWARD_TEXT) if record["name"] is not None else None
        elif record["type"] == "origin":
            record["name"] = draw(AWKWARD_TEXT)
            if record["registry_id"] is not None:
                record["registry_id"] = draw(AWKWARD_TEXT)
            if record["network_id"] is not None:
                record["network_id"] = network_ids[record["network_id"]]
        elif record["type"] == "allocation" and record.get("held_reason") is not None:
            record["held_reason"] = draw(AWKWARD_TEXT)
    return records


@settings(PROPERTY_SETTINGS, max_examples=examples(30))
@given(records=awkward_documents())
def test_csv_rows_are_the_records_rows_whatever_the_text(
    registry_graph: LoadedGraph, records: list[Record]
) -> None:
    """The CSV export, read back with Python's csv module, is the model's records written
    as docs/export.md says: quoting, doubled quotes, formula guards, CR, LF and non-ASCII, nulls,
    holds. The oracle is the properties model, not the service's CSV writer."""
    registry_graph.load(records)
    answer = registry_graph.client.get(
        "/registry/origins", headers={**registry_graph.headers, "Accept": "text/csv"}
    )
    assert answer.status_code == 200
    rows = list(csv.reader(io.StringIO(answer.get_data().decode("utf-8"), newline="")))
    assert tuple(rows[0]) == CONTRACT_COLUMNS
    expected = RegistryModel(records).matching(parse_filters({}))
    assert rows[1:] == [expected_row(record) for record in expected]
