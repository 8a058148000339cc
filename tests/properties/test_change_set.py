"""The change set of every load is exactly the model's (docs/api.md, Changes between generations).

Hypothesis draws a graph document and a second one made from it by edits of every kind the
change set must see or must not see: origins renamed, added, removed, their ids written in
another letter case; networks renamed or re-pointed; governance edges flipped, added or
dropped; allocations moved, dropped, added, restated, or their hold time written in another
offset; carriages added, changed, renamed or dropped; origins' review flipped; the whole
document replaced; and every record in another order. Both are loaded in turn into one real
database (after whatever the previous example loaded), and after each load
GET /registry/changes, as NDJSON, as CSV and page by page with a filter, is exactly the
change set that change_model computes from the two documents.
"""

from __future__ import annotations

import copy
import csv
import io
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlencode

import orjson
import pytest
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

from tests.api.api_support import parse_links
from tests.conftest import app_config, load_records, make_token
from tests.properties.change_model import (
    BLOCKS,
    CSV_COLUMNS,
    KINDS,
    change_set,
    counts,
    csv_row,
    matching,
)
from tests.properties.model import ORIGIN_PREFIX, Record, format_utc, utc_instant
from tests.properties.strategies import (
    ADDRESS_CHANNELS,
    ADDRESS_NETWORKS,
    ADDRESS_STATIONS,
    GOVERNORS,
    ID_LETTERS,
    NAME_LETTERS,
    PROPERTY_SETTINGS,
    allocation_records,
    carriage_records,
    examples,
    graph_documents,
    optional,
    words,
)

SEED = [
    {
        "type": "origin",
        "id": "svc:origin:00000000-0000-4000-8000-000000000001",
        "name": "seed",
        "network_id": None,
        "registry_id": None,
        "reviewed": False,
    }
]
ADDRESSES = st.tuples(
    st.sampled_from(ADDRESS_NETWORKS),
    st.sampled_from(ADDRESS_STATIONS),
    st.sampled_from(ADDRESS_CHANNELS),
)

Edit = Callable[[st.DrawFn, list[Record]], None]
EDITS: dict[str, Edit] = {}


def edit(function: Edit) -> Edit:
    """Register an edit of a document (in place), by its name."""
    EDITS[function.__name__] = function
    return function


def pick(draw: st.DrawFn, records: list[Record], kind: str) -> Record | None:
    """One record of a type, or None when the document has none."""
    found = [record for record in records if record["type"] == kind]
    return draw(st.sampled_from(found)) if found else None


def free_address(draw: st.DrawFn, records: list[Record]) -> tuple[int, int, int] | None:
    """An address no allocation holds, or None when the one drawn is taken."""
    address = draw(ADDRESSES)
    taken = {
        (r["network"], r["station"], r["channel"]) for r in records if r["type"] == "allocation"
    }
    return None if address in taken else address


@edit
def rename_origin(draw: st.DrawFn, records: list[Record]) -> None:
    """An origin renamed."""
    if (origin := pick(draw, records, "origin")) is not None:
        origin["name"] = draw(words(NAME_LETTERS, 0, 6))


@edit
def rename_network(draw: st.DrawFn, records: list[Record]) -> None:
    """A network renamed (or its name made null)."""
    if (network := pick(draw, records, "network")) is not None:
        network["name"] = draw(optional(words(NAME_LETTERS, 0, 5)))


@edit
def repoint_network(draw: st.DrawFn, records: list[Record]) -> None:
    """An origin put under another network, or none."""
    networks = [None, *(record["id"] for record in records if record["type"] == "network")]
    if (origin := pick(draw, records, "origin")) is not None:
        origin["network_id"] = draw(st.sampled_from(networks))


@edit
def flip_review(draw: st.DrawFn, records: list[Record]) -> None:
    """An origin reviewed, or no longer reviewed."""
    if (origin := pick(draw, records, "origin")) is not None:
        origin["reviewed"] = not origin["reviewed"]


@edit
def flip_edge(draw: st.DrawFn, records: list[Record]) -> None:
    """A governance edge made active, or inactive."""
    if (found := pick(draw, records, "governance_edge")) is not None:
        found["active"] = not found["active"]


@edit
def add_edge(draw: st.DrawFn, records: list[Record]) -> None:
    """A governance edge added, active or not."""
    if (origin := pick(draw, records, "origin")) is not None:
        governor = draw(st.sampled_from(GOVERNORS))
        active = draw(st.booleans())
        records.append(
            {"type": "governance_edge", "origin_id": origin["id"], "governor_id": governor}
            | {"active": active}
        )


@edit
def move_allocation(draw: st.DrawFn, records: list[Record]) -> None:
    """An allocation moved to a free address."""
    found = pick(draw, records, "allocation")
    if found is not None and (address := free_address(draw, records)) is not None:
        found["network"], found["station"], found["channel"] = address


@edit
def add_allocation(draw: st.DrawFn, records: list[Record]) -> None:
    """An allocation for an origin that had none."""
    held = {record["origin_id"] for record in records if record["type"] == "allocation"}
    origin = pick(draw, [r for r in records if r.get("id") not in held], "origin")
    if origin is not None and (address := free_address(draw, records)) is not None:
        records.append(draw(allocation_records(origin["id"], address)))


@edit
def restate_allocation(draw: st.DrawFn, records: list[Record]) -> None:
    """An allocation at the same address, its status and hold drawn again."""
    if (found := pick(draw, records, "allocation")) is not None:
        address = (found["network"], found["station"], found["channel"])
        records[records.index(found)] = draw(allocation_records(found["origin_id"], address))


@edit
def same_hold_other_words(draw: st.DrawFn, records: list[Record]) -> None:
    """The same instant written in UTC, and a missing held_reason written as null."""
    held = [r for r in records if r["type"] == "allocation" and r["held_at"] is not None]
    if held:
        found = draw(st.sampled_from(held))
        found["held_at"] = format_utc(utc_instant(found["held_at"]))
        found.setdefault("held_reason", None)


@edit
def add_carriage(draw: st.DrawFn, records: list[Record]) -> None:
    """A carriage added, naming an origin or none."""
    catalog = pick(draw, records, "catalog")
    carriage_id = draw(words(ID_LETTERS, 1, 4))
    if catalog is not None and carriage_id not in {r.get("id") for r in records}:
        origins = [record["id"] for record in records if record["type"] == "origin"]
        records.append(draw(carriage_records(carriage_id, origins, catalog["transports"])))


@edit
def change_carriage(draw: st.DrawFn, records: list[Record]) -> None:
    """A carriage's provider and availability drawn again."""
    if (found := pick(draw, records, "carriage")) is not None:
        found["provider"] = draw(optional(words(NAME_LETTERS, 0, 4)))
        found["availability"] = draw(optional(st.sampled_from(("reachable", "unreachable"))))


@edit
def rename_carriage(draw: st.DrawFn, records: list[Record]) -> None:
    """A carriage given another id (its presentation moves in the order)."""
    carriage_id = draw(words(ID_LETTERS, 1, 4))
    found = pick(draw, records, "carriage")
    if found is not None and carriage_id not in {r.get("id") for r in records}:
        found["id"] = carriage_id


@edit
def drop_record(draw: st.DrawFn, records: list[Record]) -> None:
    """An edge, an allocation or a carriage left out."""
    kind = draw(st.sampled_from(("governance_edge", "allocation", "carriage")))
    if (found := pick(draw, records, kind)) is not None:
        records.remove(found)


@edit
def add_origin(draw: st.DrawFn, records: list[Record]) -> None:
    """A new origin."""
    origin_id = ORIGIN_PREFIX + str(draw(st.uuids()))
    if origin_id.lower() not in {str(r.get("id")).lower() for r in records}:
        name = draw(words(NAME_LETTERS, 0, 6))
        records.append(
            {"type": "origin", "id": origin_id, "name": name, "network_id": None}
            | {"registry_id": draw(optional(words(NAME_LETTERS, 0, 3))), "reviewed": True}
        )


@edit
def remove_origin(draw: st.DrawFn, records: list[Record]) -> None:
    """The origin, its edges and allocation left out; its carriages name no origin."""
    if (origin := pick(draw, records, "origin")) is not None:
        records.remove(origin)
        for record in list(records):
            if record.get("origin_id") == origin["id"]:
                if record["type"] == "carriage":
                    record["origin_id"] = None
                else:
                    records.remove(record)


@edit
def recase_origin_id(draw: st.DrawFn, records: list[Record]) -> None:
    """The same uuid in the other letter case, wherever the document names the origin."""
    if (origin := pick(draw, records, "origin")) is not None:
        old = origin["id"]
        uuid = old[len(ORIGIN_PREFIX) :]
        new = ORIGIN_PREFIX + (uuid.lower() if uuid != uuid.lower() else uuid.upper())
        origin["id"] = new
        for record in records:
            if record.get("origin_id") == old:
                record["origin_id"] = new


@edit
def replace_document(draw: st.DrawFn, records: list[Record]) -> None:
    """Another document altogether."""
    records[:] = draw(graph_documents(max_origins=12))


def has_origins(records: list[Record]) -> bool:
    """Whether a document holds an origin (one with none is refused, docs/loading.md, Dry run and
    guards)."""
    return any(record["type"] == "origin" for record in records)


@st.composite
def document_pairs(draw: st.DrawFn) -> tuple[list[Record], list[Record], list[str]]:
    """A document, the same one edited and in another order, and the names of the edits."""
    first = draw(graph_documents(max_origins=12))
    assume(has_origins(first))
    second = copy.deepcopy(first)
    names = draw(st.lists(st.sampled_from(sorted(EDITS)), min_size=1, max_size=6))
    for name in names:
        EDITS[name](draw, second)
    assume(has_origins(second))
    return first, draw(st.permutations(second)), names


class ChangesGraph:
    """A database that each example loads twice more, the app over it, and what it last held."""

    def __init__(self, conninfo: str, app: Any):
        self.conninfo = conninfo
        self.client = app.test_client()
        self.headers = {"Authorization": f"Bearer {make_token()}"}
        self.previous: list[Record] = SEED
        self.generation = 0

    def get(self, url: str, accept: str | None = None) -> Any:
        """GET url as an admin, expecting 200."""
        headers = {**self.headers, **({"Accept": accept} if accept else {})}
        response = self.client.get(url, headers=headers)
        assert response.status_code == 200, (url, response.status_code, response.get_data())
        return response

    def load(self, records: list[Record]) -> list[Record] | None:
        """Load records; the document loaded before them (None: none before)."""
        load_records(self.conninfo, records)
        previous, self.previous = self.previous, records
        return previous


@pytest.fixture
def changes_graph(graph_database: str) -> Iterator[ChangesGraph]:
    """A fresh database holding SEED as its first generation, and the app over it."""
    from app import create_app

    load_records(graph_database, SEED)
    # One connection opened before the first example (see tests/properties/conftest.py).
    app = create_app(app_config(graph_database, REGISTRY_POOL_MIN_SIZE=1, REGISTRY_POOL_MAX_SIZE=1))
    app.extensions["registry_db"].pool.wait(timeout=10)
    graph = ChangesGraph(graph_database, app)
    check_generation(graph, None)
    yield graph
    app.extensions["registry_db"].close()


def check_generation(graph: ChangesGraph, previous: list[Record] | None) -> list[Record]:
    """The newest generation's changes, every way they are read, against the model."""
    expected = change_set(previous, graph.previous)
    body = graph.get("/registry/changes?limit=200").get_json()
    assert body["previous"] == (graph.generation or None)
    assert body["generation"] > graph.generation
    graph.generation = body["generation"]
    assert body["counts"] == counts(expected)
    assert body["page"]["total"] == len(expected)
    assert body["changes"] == expected
    lines = graph.get("/registry/changes", "application/x-ndjson").get_data().split(b"\n")
    assert [orjson.loads(line) for line in lines[:-1]] == expected
    text = graph.get("/registry/changes", "text/csv").get_data().decode("utf-8")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert rows == [list(CSV_COLUMNS), *(csv_row(change) for change in expected)]
    return expected


def sweep(graph: ChangesGraph, query: dict[str, str]) -> tuple[list[Record], Any]:
    """Every change the query selects, by following rel=next; and the first page's body."""
    first = graph.get(f"/registry/changes?{urlencode(query)}")
    response, seen = first, []
    while True:
        seen += response.get_json()["changes"]
        links = parse_links(response.headers["Link"])
        if "next" not in links:
            return seen, first.get_json()
        path, parameters = links["next"]
        assert parameters["generation"] == str(graph.generation)
        response = graph.get(f"{path}?{urlencode(parameters)}")


@st.composite
def change_queries(draw: st.DrawFn) -> dict[str, str]:
    """kind and block as documented them together, and a small limit."""
    query = {"limit": str(draw(st.integers(1, 4)))}
    kind = draw(st.sampled_from((None, *KINDS)))
    if kind is not None:
        query["kind"] = kind
    if kind in (None, "changed") and draw(st.booleans()):
        query["block"] = draw(st.sampled_from(BLOCKS))
    return query


@settings(PROPERTY_SETTINGS, max_examples=examples(40))
@given(pair=document_pairs(), query=change_queries())
def test_every_load_changes_what_the_model_says(
    changes_graph: ChangesGraph,
    pair: tuple[list[Record], list[Record], list[str]],
    query: dict[str, str],
) -> None:
    """After each load: JSON, NDJSON and CSV are the model's change set; a filtered sweep by
    links is the model's selection, with whole counts and the filtered total."""
    first, second, names = pair
    for name in names:
        event(f"edit: {name}")
    check_generation(changes_graph, changes_graph.load(first))
    expected = check_generation(changes_graph, changes_graph.load(second))
    for kind in KINDS:
        event(f"{kind}: {'some' if any(c['kind'] == kind for c in expected) else 'none'}")
    selected = matching(expected, query.get("kind"), query.get("block"))
    seen, page = sweep(changes_graph, query)
    assert seen == selected
    assert page["page"]["total"] == len(selected)
    assert page["counts"] == counts(expected)
    assert page["filters_applied"] == {k: v for k, v in query.items() if k != "limit"}
