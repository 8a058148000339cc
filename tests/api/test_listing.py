"""GET /registry/origins: order, every filter and combinations, search, pages, Link, echo.

A purpose-built graph of ten origins covers every filter value; each expected answer comes
from a plain-Python reading of the same table the graph is built from.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import pytest

from tests.api.api_support import CheckedClient, GraphBuilder, parse_links

N1 = "svc:network:one"
N2 = "svc:network:two"


@dataclass(frozen=True)
class Row:
    """One origin of the filters graph, and what the listing should know about it."""

    key: str
    name: str
    uuid: str
    network_id: str | None = None
    registry_id: str | None = None
    reviewed: bool = True
    edges: tuple[bool, ...] = ()
    address: tuple[int, int, int] | None = None
    status: str | None = None
    carriages: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        """The origin id as the API writes it."""
        return f"svc:origin:{self.uuid}"

    @property
    def transports(self) -> set[str]:
        """Transports of its resolved presentations."""
        return set(self.carriages) if self.reviewed else set()


def _uuid(first: str, n: int) -> str:
    """A uuid whose first hex digit sets its place among unallocated origins."""
    return f"{first}0000000-0000-4000-8000-{n:012d}"


ROWS = [
    Row("A", "Alpha News", _uuid("7", 1), N1, "100", edges=(True,), address=(2, 9, 10),
        status="published", carriages=("iptv", "ovp")),
    Row("B", "Beta 100% Sport", _uuid("6", 2), N1, "100", edges=(False,), address=(10, 0, 0),
        status="held", carriages=("fast",)),
    Row("C", "Under_score TV", _uuid("5", 3), N2, "R_2", reviewed=False, edges=(True, True),
        address=(2, 10, 0), carriages=("iptv",)),
    Row("D", "Back\\slash FM", _uuid("4", 4), address=(2, 9, 5), status="published"),
    Row("E", "Télé Nord", _uuid("f", 5), N2, "9", edges=(True,), carriages=("ota",)),
    Row("F", "Straße Eins", _uuid("0", 6), N1, "Ω-7", carriages=("iptv", "iptv")),
    Row("G", "Σίσυφος", _uuid("3", 7), edges=(False,), address=(0, 0, 0), status="published",
        carriages=("fast", "ota")),
    # Stored decomposed (e + combining acute): search folds both sides the same way.
    Row("H", "Cafe\u0301 Cre\u0300me", _uuid("2", 8), N2, "cafe", address=(2, 9, 0),
        status="held"),
    Row("I", "Москва 24", _uuid("a", 9), N1, "MSK", reviewed=False, edges=(True,)),
    Row("J", "pop_up 50%", _uuid("5", 10), registry_id="50%", carriages=("ovp",)),
]  # fmt: skip
BY_KEY = {row.key: row for row in ROWS}


def contract_order(rows: list[Row]) -> list[Row]:
    """Allocated by address as numbers, then unallocated; ties by id."""
    return sorted(rows, key=lambda row: (row.address is None, row.address or (0, 0, 0), row.id))


def model(filters: dict[str, str]) -> list[str]:
    """The keys of the origins a filter set selects, in listing order (search aside)."""

    def keep(row: Row) -> bool:
        """Whether row passes every filter."""
        checks = {
            "governance_state": lambda v: (
                (any(row.edges) and v == "governed") or (not any(row.edges) and v == "ungoverned")
            ),
            "allocation_state": lambda v: (row.address is not None) == (v == "allocated"),
            "publication_status": lambda v: row.status == v,
            "transport": lambda v: v in row.transports,
            "has_presentations": lambda v: bool(row.transports) == (v == "true"),
            "network_id": lambda v: row.network_id == v,
            "station_id": lambda v: row.address is not None and row.address[1] == int(v),
        }
        return all(checks[name](value) for name, value in filters.items())

    return [row.key for row in contract_order([row for row in ROWS if keep(row)])]


@pytest.fixture(scope="module")
def filters_api(api_graph_factory: Callable[[GraphBuilder], CheckedClient]) -> CheckedClient:
    """The filters graph, loaded, with an admin client over it."""
    graph = GraphBuilder(catalog=["iptv", "ovp", "ota", "fast"])
    graph.network(N1, "Network One")
    graph.network(N2, None)
    for row in ROWS:
        graph.origin(
            row.name,
            uuid_text=row.uuid,
            network_id=row.network_id,
            registry_id=row.registry_id,
            reviewed=row.reviewed,
            edges=row.edges,
            address=row.address,
            status=row.status,
            carriages=row.carriages,
        )
    graph.carriage("orphan", "ovp")
    return api_graph_factory(graph)


def listing(api: CheckedClient, query: dict[str, str] | str = "") -> dict[str, Any]:
    """GET /registry/origins with query, expecting 200."""
    text = query if isinstance(query, str) else urlencode(query)
    return api.json(f"/registry/origins?{text}" if text else "/registry/origins")


def keys(body: dict[str, Any]) -> list[str]:
    """The filters-graph keys of the origins in a listing, in order."""
    by_id = {row.id: row.key for row in ROWS}
    return [by_id[origin["origin"]["id"]] for origin in body["origins"]]


# -- order ---------------------------------------------------------------------------------------


def test_example_order(api_admin: CheckedClient, example_expected: dict[str, Any]):
    """The worked example's order, exactly."""
    body = listing(api_admin)
    expected = example_expected["GET /registry/origins (origin ids in order)"]
    assert [origin["origin"]["id"] for origin in body["origins"]] == expected
    assert body["page"] == {"page": 1, "limit": 50, "offset": 0, "returned": 4, "total": 4}
    assert body["filters_applied"] == {}


def test_order_is_numeric_then_unallocated_by_id(filters_api: CheckedClient):
    """0.0.0 < 2.9.0 < 2.9.5 < 2.9.10 < 2.10.0 < 10.0.0, then unallocated by id."""
    assert keys(listing(filters_api)) == ["G", "H", "D", "A", "C", "B", "F", "J", "I", "E"]
    assert keys(listing(filters_api)) == model({})


@pytest.mark.parametrize("limit", [1, 2, 3, 4, 7, 10, 200])
def test_sweep_returns_each_origin_once(filters_api: CheckedClient, limit: int):
    """A sweep over every page, by any page size, is the full order with nothing repeated."""
    seen: list[str] = []
    page = 1
    while True:
        body = listing(filters_api, {"page": str(page), "limit": str(limit)})
        assert body["page"]["total"] == len(ROWS)
        assert body["page"]["returned"] == len(body["origins"]) <= limit
        if not body["origins"]:
            break
        seen.extend(keys(body))
        page += 1
    assert seen == model({})
    assert page == -(-len(ROWS) // limit) + 1


# -- filters -------------------------------------------------------------------------------------

FILTER_CASES: list[dict[str, str]] = [
    {"governance_state": "governed"},
    {"governance_state": "ungoverned"},
    {"allocation_state": "allocated"},
    {"allocation_state": "unallocated"},
    {"publication_status": "published"},
    {"publication_status": "held"},
    {"transport": "iptv"},
    {"transport": "ovp"},
    {"transport": "ota"},
    {"transport": "fast"},
    {"has_presentations": "true"},
    {"has_presentations": "false"},
    {"network_id": N1},
    {"network_id": N2},
    {"network_id": "svc:network:none"},
    {"station_id": "0"},
    {"station_id": "9"},
    {"station_id": "10"},
    {"station_id": "2147483647"},
    {"governance_state": "governed", "allocation_state": "allocated"},
    {"governance_state": "ungoverned", "allocation_state": "unallocated"},
    {"governance_state": "governed", "has_presentations": "false"},
    {"allocation_state": "unallocated", "publication_status": "published"},
    {"allocation_state": "allocated", "publication_status": "held", "station_id": "9"},
    {"transport": "iptv", "has_presentations": "false"},
    {"transport": "ota", "governance_state": "governed", "network_id": N2},
    {"has_presentations": "true", "network_id": N1, "allocation_state": "unallocated"},
    {"transport": "fast", "publication_status": "published", "station_id": "0"},
    {
        "governance_state": "ungoverned",
        "allocation_state": "allocated",
        "publication_status": "published",
        "transport": "fast",
        "has_presentations": "true",
        "station_id": "0",
    },
]


@pytest.mark.parametrize(
    "filters", FILTER_CASES, ids=lambda f: "&".join(f"{k}={v}" for k, v in f.items())
)
def test_filters(filters_api: CheckedClient, filters: dict[str, str]):
    """Each filter and combination selects what the model says, in order, with its total."""
    body = listing(filters_api, filters)
    expected = model(filters)
    assert keys(body) == expected
    assert body["page"]["total"] == body["page"]["returned"] == len(expected)


def test_filter_cases_are_not_trivial():
    """The table exercises empty, partial and full answers alike."""
    sizes = {len(model(filters)) for filters in FILTER_CASES}
    assert 0 in sizes and len(ROWS) not in sizes and len(sizes) > 4


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (
            {"governance_state": "governed", "has_presentations": "false"},
            [BY_KEY["C"], BY_KEY["I"]],
        ),
        ({"allocation_state": "unallocated"}, [BY_KEY["F"], BY_KEY["J"], BY_KEY["I"], BY_KEY["E"]]),
    ],
)
def test_filters_by_hand(filters_api: CheckedClient, query: dict[str, str], expected: list[Row]):
    """Two answers worked out by hand, so that the model itself is checked."""
    assert keys(listing(filters_api, query)) == [row.key for row in expected]


@pytest.mark.parametrize(
    ("query", "key"),
    [
        ("search=t%C3%89L%C3%89", "GET /registry/origins?search=t%C3%89L%C3%89 (origin ids)"),
        ("search=50%25", "GET /registry/origins?search=50%25 (origin ids)"),
        (
            "governance_state=governed&has_presentations=false",
            "GET /registry/origins?governance_state=governed&has_presentations=false (origin ids)",
        ),
    ],
)
def test_example_filters(
    api_admin: CheckedClient, example_expected: dict[str, Any], query: str, key: str
):
    """The worked example's filtered answers."""
    body = listing(api_admin, query)
    assert [origin["origin"]["id"] for origin in body["origins"]] == example_expected[key]


# -- search --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("term", "expected"),
    [
        ("%", "BJ"),
        ("50%", "J"),
        ("0%", "BJ"),
        ("%%", ""),
        ("a%", ""),
        ("_", "CJ"),
        ("_nder", ""),
        ("r_", "C"),
        ("\\", "D"),
        ("back\\", "D"),
        ("k\\s", "D"),
        ("\\\\", ""),
        ("tÉlÉ", "E"),
        ("TÉLÉ", "E"),
        ("te\u0301le\u0301", "E"),
        ("CAFÉ", "H"),
        ("crème", "H"),
        ("cafe", "H"),
        ("STRASSE", "F"),
        ("straße", "F"),
        ("ΣΊΣΥΦΟΣ", "G"),
        ("ς", "G"),
        ("москва", "I"),
        ("\u041c\u041e\u0421\u041a", "I"),  # Cyrillic capitals, spelt out for the linter
        ("msk", "I"),
        ("ω-7", "F"),
        ("100", "AB"),
        ("alpha news", "A"),
        ("ALPHA  NEWS", ""),
        ("9", "E"),
        ("x", ""),
    ],
)
def test_search(filters_api: CheckedClient, term: str, expected: str):
    """Case-insensitive in every script, Unicode-normalized, literal: % _ \\ match themselves."""
    body = listing(filters_api, {"search": term})
    assert keys(body) == [row.key for row in contract_order([BY_KEY[k] for k in expected])]
    assert body["filters_applied"] == {"search": term}


def test_search_with_filters(filters_api: CheckedClient):
    """search combines with the other filters by AND."""
    body = listing(filters_api, {"search": "%", "publication_status": "held"})
    assert keys(body) == ["B"]


# -- pages ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("page", "limit", "expected_keys"),
    [
        (1, 1, "G"),
        (2, 1, "H"),
        (10, 1, "E"),
        (11, 1, ""),
        (2, 4, "CBFJ"),
        (3, 4, "IE"),
        (4, 4, ""),
        (1, 200, "GHDACBFJIE"),
        (2, 200, ""),
        (2147483647, 200, ""),
        (2147483647, 1, ""),
    ],
)
def test_pages(filters_api: CheckedClient, page: int, limit: int, expected_keys: str):
    """offset = (page - 1) * limit; past the end is 200, no origins, the true total."""
    body = listing(filters_api, {"page": str(page), "limit": str(limit)})
    assert "".join(keys(body)) == expected_keys
    assert body["page"] == {
        "page": page,
        "limit": limit,
        "offset": (page - 1) * limit,
        "returned": len(expected_keys),
        "total": len(ROWS),
    }


@pytest.mark.parametrize(
    "filters",
    [
        {},
        {"governance_state": "governed"},
        {"transport": "iptv"},
        {"search": "a"},
        {"station_id": "2"},
        {"network_id": "svc:network:n1"},
    ],
    ids=lambda filters: ",".join(filters) or "no filter",
)
@pytest.mark.parametrize("page", ["164", "200", "10737419", "2147483647"])
def test_deep_pages_on_every_access_path(
    filters_api: CheckedClient, filters: dict[str, str], page: str
):
    """Offsets past the smallint and integer ranges: 200, no origins, the true total."""
    body = listing(filters_api, {**filters, "page": page, "limit": "200"})
    assert body["origins"] == []
    assert body["page"]["offset"] == (int(page) - 1) * 200
    assert body["page"]["total"] == listing(filters_api, filters)["page"]["total"]


def test_page_past_the_end_with_filters(filters_api: CheckedClient):
    """Past the end of a filtered listing: the filtered total still."""
    body = listing(filters_api, {"transport": "iptv", "page": "5", "limit": "1"})
    assert body["origins"] == []
    assert body["page"]["total"] == len(model({"transport": "iptv"}))


@pytest.mark.parametrize(
    ("query", "page", "limit"),
    [
        ("", 1, 50),
        ("page=1", 1, 50),
        ("limit=1", 1, 1),
        ("limit=200", 1, 200),
        ("page=007&limit=002", 7, 2),
        ("limit=0000000000005", 1, 5),
    ],
)
def test_page_defaults_and_spellings(filters_api: CheckedClient, query: str, page: int, limit: int):
    """page defaults to 1 and limit to 50; leading zeros are still plain decimal."""
    body = listing(filters_api, query)
    assert (body["page"]["page"], body["page"]["limit"]) == (page, limit)


# -- filters_applied ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "echo"),
    [
        ("", {}),
        ("page=2&limit=3", {}),
        ("has_presentations=true", {"has_presentations": True}),
        ("has_presentations=false&page=1", {"has_presentations": False}),
        ("station_id=9", {"station_id": 9}),
        ("station_id=0009&limit=5", {"station_id": 9}),
        ("governance_state=governed", {"governance_state": "governed"}),
        ("allocation_state=unallocated", {"allocation_state": "unallocated"}),
        ("publication_status=held", {"publication_status": "held"}),
        ("transport=ota", {"transport": "ota"}),
        (f"network_id={N1}", {"network_id": N1}),
        ("search=%25_%5C", {"search": "%_\\"}),
        (
            "search=a+b&transport=iptv&station_id=10&has_presentations=true&network_id=x"
            "&governance_state=ungoverned&allocation_state=allocated&publication_status=published"
            "&page=3&limit=7",
            {
                "search": "a b",
                "transport": "iptv",
                "station_id": 10,
                "has_presentations": True,
                "network_id": "x",
                "governance_state": "ungoverned",
                "allocation_state": "allocated",
                "publication_status": "published",
            },
        ),
    ],
)
def test_filters_applied(filters_api: CheckedClient, query: str, echo: dict[str, Any]):
    """Exactly the filters given, parsed (booleans and integers as JSON); never page or limit."""
    assert listing(filters_api, query)["filters_applied"] == echo


# -- Link ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "rels"),
    [
        ("", {"first": 1, "last": 1}),
        ("limit=3", {"first": 1, "next": 2, "last": 4}),
        ("limit=3&page=2", {"first": 1, "prev": 1, "next": 3, "last": 4}),
        ("limit=3&page=4", {"first": 1, "prev": 3, "last": 4}),
        ("limit=3&page=9", {"first": 1, "prev": 4, "last": 4}),
        ("limit=5&page=2", {"first": 1, "prev": 1, "last": 2}),
        ("limit=10", {"first": 1, "last": 1}),
        ("transport=iptv&limit=1", {"first": 1, "next": 2, "last": 2}),
        ("network_id=svc:network:none&page=2", {"first": 1, "prev": 1, "last": 1}),
    ],
)
def test_link_relations(filters_api: CheckedClient, query: str, rels: dict[str, int]):
    """first and last always; prev and next where there is such a page; numbers right."""
    response = filters_api.get(f"/registry/origins?{query}")
    body = response.get_json()
    links = parse_links(response.headers["Link"])
    limit = body["page"]["limit"]
    assert rels["last"] == max(1, -(-body["page"]["total"] // limit))
    assert {rel: int(params["page"]) for rel, (_, params) in links.items()} == rels
    for path, params in links.values():
        assert path == "/registry/origins"
        assert params["limit"] == str(limit)


@pytest.mark.parametrize(
    "filters",
    [
        {"search": '%_\\ &<>,;"é'},
        {"has_presentations": "true", "station_id": "9"},
        {"governance_state": "ungoverned", "transport": "fast", "network_id": N1},
        {"allocation_state": "allocated", "publication_status": "published", "limit": "1"},
    ],
)
def test_links_keep_the_filters(filters_api: CheckedClient, filters: dict[str, str]):
    """Every link keeps every filter and the limit, pins the answer's generation, and following
    it gives that page."""
    response = filters_api.get(f"/registry/origins?{urlencode(filters)}&page=1")
    filters = {name: value for name, value in filters.items() if name != "limit"}
    for rel, (path, params) in parse_links(response.headers["Link"]).items():
        assert {name: params[name] for name in filters} == filters, rel
        assert set(params) == {*filters, "page", "limit", "generation"}
        assert params["generation"] == response.headers["Registry-Generation"]
        followed = filters_api.json(f"{path}?{urlencode(params)}")
        assert followed["page"]["page"] == int(params["page"])
        assert followed["filters_applied"] == listing(filters_api, filters)["filters_applied"]


def test_sweep_by_next_links(filters_api: CheckedClient):
    """Following rel=next from the first page visits every origin once, in order."""
    url: str | None = "/registry/origins?limit=3&has_presentations=true"
    seen: list[str] = []
    while url is not None:
        response = filters_api.get(url)
        assert response.status_code == 200
        seen.extend(keys(response.get_json()))
        links = parse_links(response.headers["Link"])
        url = f"{links['next'][0]}?{urlencode(links['next'][1])}" if "next" in links else None
    assert seen == model({"has_presentations": "true"})
