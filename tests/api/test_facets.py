"""GET /registry/origins with facet, facet_size and id (docs/api.md, Facets and ids), on a
purpose-built graph.

Ten origins whose networks and stations tie on purpose: ranked facets must order by count,
then value (network ids in code-point order, stations as numbers), null last, and cut at
facet_size with `truncated` exactly at the boundary. Every expected answer is written out by
hand from the table below. Every answer is checked against the OpenAPI document.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import psycopg
import pytest
from psycopg import sql

from tests.api.api_support import CheckedClient, GraphBuilder, parse_links
from tests.conftest import load_records

# In code-point order "B" < "a" (a linguistic collation says otherwise) and "0" < "B".
NZ, NB, NA, N0 = "svc:network:Z", "svc:network:B", "svc:network:a", "svc:network:0"


def uuid_of(number: int) -> str:
    """The uuid of origin number (1 to 10), in listing order among the unallocated."""
    return f"00000000-0000-4000-8000-{number:012d}"


def oid(number: int) -> str:
    """The prefixed id of origin number."""
    return f"svc:origin:{uuid_of(number)}"


# number: network, address, governed, publication status, transports (all reviewed).
ORIGINS: dict[int, tuple[str | None, tuple[int, int, int] | None, bool, str | None, tuple]] = {
    1: (NZ, (1, 10, 1), True, "published", ("iptv",)),
    2: (NZ, (1, 9, 1), True, "held", ("iptv", "ota")),
    3: (NZ, None, False, None, ()),
    4: (NB, (1, 10, 2), True, "published", ()),
    5: (NB, (1, 9, 2), False, None, ()),
    6: (NA, (1, 100, 1), False, "published", ("fast",)),
    7: (NA, None, True, None, ()),
    8: (N0, (1, 100, 2), False, None, ()),
    9: (None, (1, 10, 3), False, None, ("iptv", "iptv")),
    10: (None, None, False, None, ()),
}  # fmt: skip
# Networks: Z 3; B, a and none 2 each; 0 1. Stations: 10 and none 3 each; 9 and 100 2 each.
NETWORKS = [(NZ, "Zulu", 3), (NB, "Bravo", 2), (NA, None, 2), (None, None, 2), (N0, "Zero", 1)]
STATIONS = [(10, 3), (None, 3), (9, 2), (100, 2)]
EVERY_FACET = (
    "governance_state,allocation_state,publication_status,transport,has_presentations,"
    "network_id,station_id"
)


def facets_graph() -> GraphBuilder:
    """The facets graph: four networks (one unnamed) and ORIGINS."""
    graph = GraphBuilder(catalog=["iptv", "ovp", "ota", "fast"])
    graph.network(NZ, "Zulu")
    graph.network(NB, "Bravo")
    graph.network(NA, None)
    graph.network(N0, "Zero")
    for number, (network, address, governed, status, transports) in ORIGINS.items():
        graph.origin(
            f"Origin {number}",
            uuid_text=uuid_of(number),
            network_id=network,
            edges=(True,) if governed else (),
            address=address,
            status=status,
            carriages=transports,
        )
    return graph


@pytest.fixture(scope="module")
def api(api_graph_factory: Callable[[GraphBuilder], CheckedClient]) -> CheckedClient:
    """The facets graph, loaded, with a checked admin client over it."""
    graph = facets_graph()
    return api_graph_factory(graph)


def listing(api: CheckedClient, query: dict[str, str]) -> dict[str, Any]:
    """GET /registry/origins with query, expecting 200."""
    return api.json("/registry/origins?" + urlencode(query))


def networks(rows: list[tuple[str | None, str | None, int]]) -> list[dict[str, Any]]:
    """network_id facet values."""
    return [{"value": value, "name": name, "count": count} for value, name, count in rows]


def stations(rows: list[tuple[int | None, int]]) -> list[dict[str, Any]]:
    """station_id facet values."""
    return [{"value": value, "count": count} for value, count in rows]


def values(*pairs: tuple[Any, int]) -> list[dict[str, Any]]:
    """An enumerated facet's values."""
    return [{"value": value, "count": count} for value, count in pairs]


def test_every_facet_over_the_whole_graph(api: CheckedClient):
    """Each facet in the order asked; enumerated ones list every value, zeros included."""
    body = listing(api, {"facet": EVERY_FACET, "limit": "2"})
    assert list(body["facets"]) == EVERY_FACET.split(",")
    assert body["facets"] == {
        "governance_state": {"values": values(("governed", 4), ("ungoverned", 6)),
                             "truncated": False},
        "allocation_state": {"values": values(("allocated", 7), ("unallocated", 3)),
                             "truncated": False},
        "publication_status": {"values": values(("published", 3), ("held", 1), (None, 6)),
                               "truncated": False},
        "transport": {"values": values(("iptv", 3), ("ovp", 0), ("ota", 1), ("fast", 1)),
                      "truncated": False},
        "has_presentations": {"values": values((True, 4), (False, 6)), "truncated": False},
        "network_id": {"values": networks(NETWORKS), "truncated": False},
        "station_id": {"values": stations(STATIONS), "truncated": False},
    }  # fmt: skip
    assert "facet" not in body["filters_applied"] and body["filters_applied"] == {}


def test_facets_follow_the_filters_their_own_included(api: CheckedClient):
    """Counted over the matches of every filter, the facet's own filter too."""
    body = listing(api, {"facet": "network_id,transport,station_id", "network_id": NZ})
    assert body["facets"] == {
        "network_id": {"values": networks([(NZ, "Zulu", 3)]), "truncated": False},
        "transport": {"values": values(("iptv", 2), ("ovp", 0), ("ota", 1), ("fast", 0)),
                      "truncated": False},
        "station_id": {"values": stations([(9, 1), (10, 1), (None, 1)]), "truncated": False},
    }  # fmt: skip
    body = listing(api, {"facet": "governance_state,publication_status", "transport": "ota"})
    assert body["facets"] == {
        "governance_state": {"values": values(("governed", 1), ("ungoverned", 0)),
                             "truncated": False},
        "publication_status": {"values": values(("published", 0), ("held", 1), (None, 0)),
                               "truncated": False},
    }  # fmt: skip


@pytest.mark.parametrize(
    ("query", "facets"),
    [
        pytest.param(
            {"governance_state": "governed"},
            {"network_id": [(NZ, "Zulu", 2), (NB, "Bravo", 1), (NA, None, 1)],
             "station_id": [(10, 2), (9, 1), (None, 1)]},
            id="flags",
        ),
        pytest.param(
            {"station_id": "10"},
            {"network_id": [(NB, "Bravo", 1), (NZ, "Zulu", 1), (None, None, 1)],
             "station_id": [(10, 3)]},
            id="station",
        ),
        pytest.param(
            {"network_id": NZ},
            {"network_id": [(NZ, "Zulu", 3)], "station_id": [(9, 1), (10, 1), (None, 1)]},
            id="network",
        ),
        pytest.param(
            {"network_id": NZ, "transport": "iptv"},
            {"network_id": [(NZ, "Zulu", 2)], "station_id": [(9, 1), (10, 1)]},
            id="network+flags",
        ),
        pytest.param(
            {"network_id": NB, "station_id": "9"},
            {"network_id": [(NB, "Bravo", 1)], "station_id": [(9, 1)]},
            id="network+station",
        ),
        pytest.param(
            {"search": "origin 1"},
            {"network_id": [(NZ, "Zulu", 1), (None, None, 1)],
             "station_id": [(10, 1), (None, 1)]},
            id="search",
        ),
        pytest.param(
            {"search": "origin"},
            {"network_id": NETWORKS, "station_id": STATIONS},
            id="search-every-origin",
        ),
        pytest.param(
            {"search": "origin", "network_id": NB},
            {"network_id": [(NB, "Bravo", 2)], "station_id": [(9, 1), (10, 1)]},
            id="search+network",
        ),
        pytest.param(
            {"id": f"{oid(9)},{oid(10)},{uuid_of(8)}", "allocation_state": "allocated"},
            {"network_id": [(N0, "Zero", 1), (None, None, 1)],
             "station_id": [(10, 1), (100, 1)]},
            id="ids+flags",
        ),
        pytest.param(
            {"network_id": "svc:network:none"},
            {"network_id": [], "station_id": []},
            id="nothing-matches",
        ),
    ],
)  # fmt: skip
def test_ranked_facets_on_every_access_path(
    api: CheckedClient, query: dict[str, str], facets: dict[str, list[Any]]
):
    """Network and station facets under each kind of filter: ranked, ties by value."""
    body = listing(api, {**query, "facet": "network_id,station_id"})
    assert body["facets"] == {
        "network_id": {"values": networks(facets["network_id"]), "truncated": False},
        "station_id": {"values": stations(facets["station_id"]), "truncated": False},
    }


@pytest.mark.parametrize(
    ("size", "shown", "truncated"),
    [
        pytest.param("1", 1, True, id="one"),
        pytest.param("3", 3, True, id="a-tie-cut"),
        pytest.param("4", 4, True, id="one-more-than-facet_size"),
        pytest.param("5", 5, False, id="exactly-facet_size"),
        pytest.param("100", 5, False, id="largest"),
    ],
)
def test_network_facet_cut_at_facet_size(api: CheckedClient, size: str, shown: int, truncated):
    """The first facet_size values in rank order; truncated when more have a count."""
    body = listing(api, {"facet": "network_id", "facet_size": size})
    assert body["facets"]["network_id"] == {
        "values": networks(NETWORKS[:shown]),
        "truncated": truncated,
    }


@pytest.mark.parametrize(
    ("size", "shown", "truncated"),
    [
        pytest.param("2", 2, True, id="a-tie-cut"),
        pytest.param("4", 4, True, id="one-more-than-facet_size"),
        pytest.param("5", 5, False, id="exactly-facet_size"),
    ],
)
def test_a_searchs_network_facet_ranks_and_cuts_as_the_whole_graphs(
    api: CheckedClient, size: str, shown: int, truncated
):
    """A search matching every origin ranks networks as the graph does: ties in code-point
    order ("B" before "a"), the origins without a network last in theirs."""
    body = listing(api, {"search": "origin", "facet": "network_id", "facet_size": size})
    assert body["facets"]["network_id"] == {
        "values": networks(NETWORKS[:shown]),
        "truncated": truncated,
    }


@pytest.mark.parametrize(
    ("size", "shown", "truncated"),
    [
        pytest.param("2", 2, True, id="null-last-in-its-tie"),
        pytest.param("3", 3, True, id="one-more-than-facet_size"),
        pytest.param("4", 4, False, id="exactly-facet_size"),
    ],
)
def test_station_facet_cut_at_facet_size(api: CheckedClient, size: str, shown: int, truncated):
    """Stations tie and order as numbers (9 before 100), the unallocated last in their tie."""
    body = listing(api, {"facet": "station_id", "facet_size": size})
    assert body["facets"]["station_id"] == {
        "values": stations(STATIONS[:shown]),
        "truncated": truncated,
    }


def test_every_page_has_the_same_facets_and_links_keep_them(api: CheckedClient):
    """A sweep: each page the same facets; each Link keeps facet and facet_size."""
    query = {"facet": "station_id,transport", "facet_size": "2", "limit": "3"}
    first = listing(api, query)
    seen = first["facets"]
    response = api.get("/registry/origins?" + urlencode(query))
    links = parse_links(response.headers["Link"])
    assert set(links) == {"first", "next", "last"}
    for _, params in links.values():
        assert (params["facet"], params["facet_size"]) == ("station_id,transport", "2")
    _, follow = links["next"]
    while True:
        response = api.get("/registry/origins?" + urlencode(follow))
        body = response.get_json()
        assert body["facets"] == seen
        assert body["filters_applied"] == {}
        pages = parse_links(response.headers["Link"])
        if "next" not in pages:
            break
        follow = pages["next"][1]
    assert body["page"]["page"] == 4


def test_no_facets_member_without_facet(api: CheckedClient):
    """Without facet the answer is as before."""
    assert "facets" not in listing(api, {})


def assert_invalid(api: CheckedClient, query: str, name: str, headers=None) -> None:
    """400 with details naming exactly this parameter."""
    response = api.get("/registry/origins?" + query, headers=headers)
    assert response.status_code == 400, (query, response.get_data())
    body = response.get_json()
    assert body["error"] == "Invalid request parameters"
    assert list(body["details"]) == [name], (query, body)


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("facet=colour", "facet"),
        ("facet=transport,transport", "facet"),
        ("facet=transport,", "facet"),
        ("facet=,transport", "facet"),
        ("facet=", "facet"),
        ("facet=transport&facet=network_id", "facet"),
        ("facet=Transport", "facet"),
        ("facet_size=3", "facet_size"),
        ("facet=transport&facet_size=0", "facet_size"),
        ("facet=transport&facet_size=101", "facet_size"),
        ("facet=transport&facet_size=ten", "facet_size"),
        ("facet=transport&facet_size=", "facet_size"),
        ("id=", "id"),
        ("id=svc:origin:nope", "id"),
        (f"id={uuid_of(1)},", "id"),
        (f"id={uuid_of(1)},,{uuid_of(2)}", "id"),
        (f"id=svc:network:{uuid_of(1)}", "id"),
        (f"id=SVC:ORIGIN:{uuid_of(1)}", "id"),
        (f"id={uuid_of(1)}&id={uuid_of(2)}", "id"),
    ],
)
def test_bad_facet_and_id_name_their_parameter(api: CheckedClient, query: str, name: str):
    """Every 400 of docs/api.md, Facets and ids, on the JSON listing, names the parameter at
    fault."""
    assert_invalid(api, query, name)


@pytest.mark.parametrize("accept", ["application/x-ndjson", "text/csv"])
@pytest.mark.parametrize(
    ("query", "names"),
    [("facet=transport", {"facet"}), ("facet=transport&facet_size=2", {"facet", "facet_size"})],
)
def test_an_export_refuses_facets(
    api: CheckedClient, admin_headers: dict[str, str], accept: str, query: str, names: set[str]
):
    """facet and facet_size are a 400 with an export, each named."""
    response = api.get("/registry/origins?" + query, headers={**admin_headers, "Accept": accept})
    assert response.status_code == 400
    assert set(response.get_json()["details"]) == names


def ids_listed(body: dict[str, Any]) -> list[str]:
    """The origin ids of a listing, in order."""
    return [record["origin"]["id"] for record in body["origins"]]


def test_ids_found_and_missing_bare_and_prefixed(api: CheckedClient):
    """Found ones in listing order, missing ones absent, total of those found; the echo is
    the prefixed lower-case ids in the order given, each once."""
    missing = "11111111-2222-4333-8444-555555555555"
    given = [oid(10), uuid_of(1).upper(), missing, f"svc:origin:{uuid_of(10)}", uuid_of(2)]
    body = listing(api, {"id": ",".join(given)})
    # Listing order: allocated by address (1.9.1 before 1.10.1), unallocated after.
    assert ids_listed(body) == [oid(2), oid(1), oid(10)]
    assert body["page"]["total"] == 3
    assert body["filters_applied"] == {"id": [oid(10), oid(1), f"svc:origin:{missing}", oid(2)]}


def test_ids_combine_with_other_filters(api: CheckedClient):
    """id ANDs with every other filter, search included."""
    every = ",".join(oid(number) for number in ORIGINS)
    assert ids_listed(listing(api, {"id": every, "governance_state": "governed"})) == [
        oid(2), oid(1), oid(4), oid(7)
    ]  # fmt: skip
    assert ids_listed(listing(api, {"id": f"{oid(1)},{oid(4)}", "network_id": NB})) == [oid(4)]
    assert ids_listed(listing(api, {"id": every, "station_id": "100"})) == [oid(6), oid(8)]
    assert ids_listed(listing(api, {"id": f"{oid(1)},{oid(10)}", "search": "ORIGIN 10"})) == [
        oid(10)
    ]


def test_a_hundred_ids_and_not_one_more(api: CheckedClient):
    """100 distinct ids (duplicates beside them count once) are taken; 101 are a 400."""
    others = [f"{number:08x}-0000-4000-8000-000000000000" for number in range(1, 98)]
    hundred = [oid(3), oid(5), oid(6), *others]
    query = ",".join([*hundred, oid(3), uuid_of(5).upper()])
    body = listing(api, {"id": query, "limit": "2"})
    assert body["page"]["total"] == 3
    assert ids_listed(body) == [oid(5), oid(6)]
    assert len(body["filters_applied"]["id"]) == 100
    links = parse_links(api.get("/registry/origins?" + urlencode({"id": query})).headers["Link"])
    assert links["first"][1]["id"].split(",") == body["filters_applied"]["id"]
    assert_invalid(api, "id=" + ",".join([*hundred, uuid_of(9)]), "id")


@pytest.mark.parametrize("accept", ["application/x-ndjson", "text/csv"])
def test_an_export_takes_ids(api: CheckedClient, admin_headers: dict[str, str], accept: str):
    """The export of an id list: the found ones, in listing order, Registry-Total counting them."""
    query = urlencode({"id": f"{uuid_of(7)},{oid(6)},{oid(2)},{oid(10)}"})
    # The raw client: the checked one reads JSON only.
    response = api.client.get(
        f"/registry/origins?{query}", headers={**admin_headers, "Accept": accept}
    )
    assert response.status_code == 200
    lines = response.get_data(as_text=True).splitlines()
    rows = lines if accept == "application/x-ndjson" else lines[1:]
    assert response.headers["Registry-Total"] == str(len(rows)) == "4"
    order = [oid(2), oid(6), oid(7), oid(10)]
    assert [next(i for i in order if i in row) for row in rows] == order


def test_a_searchs_remembered_facets_keep_each_generation_apart(
    database_factory: Callable[[], str],
    api_app_factory: Callable[..., Any],
    admin_headers: dict[str, str],
):
    """A search's facets are remembered per generation: after a load, the same URL counts the
    new graph, and a page pinned to the old generation still gets the old counts."""
    conninfo = database_factory()
    first, second = GraphBuilder(), GraphBuilder()
    for number in range(3):
        first.origin(f"News {number}", uuid_text=uuid_of(number + 1))
    second.origin("News again", uuid_text=uuid_of(9), edges=(True,))
    load_records(conninfo, first.records)
    client = api_app_factory(conninfo).test_client()
    url = "/registry/origins?search=news&facet=governance_state&limit=1"

    def governed(target: str) -> list[int]:
        response = client.get(target, headers=admin_headers)
        assert response.status_code == 200, response.get_data()
        return [
            value["count"] for value in response.get_json()["facets"]["governance_state"]["values"]
        ]

    assert governed(url) == [0, 3]
    assert governed(url + "&page=2") == [0, 3]
    load_records(conninfo, second.records)
    assert governed(url) == [1, 0]
    assert governed(url + "&page=2&generation=1") == [0, 3]


# The tables load/build_filter_counts.sql makes for facets, in the order it makes them.
FACET_TABLES = (
    "facet_combo_counts",
    "facet_keys",
    "network_facet_tops",
    "station_facet_tops",
    "network_station_tops",
    "station_network_tops",
)


@pytest.mark.parametrize(
    "dropped",
    [
        pytest.param(FACET_TABLES, id="before-any-facet-count"),
        # Built by a load that ranked networks per set of combinations, but not yet stations
        # per set, per network or networks per station.
        pytest.param(FACET_TABLES[3:], id="before-the-station-and-per-value-rankings"),
    ],
)
def test_a_generation_loaded_without_facet_counts_counts_its_rows(
    database_factory: Callable[[], str],
    api_app_factory: Callable[..., Any],
    admin_headers: dict[str, str],
    dropped: tuple[str, ...],
):
    """A generation built before the facet counts existed, or some of them (their tables
    dropped here), answers the same facets on every path, counted from its origin rows."""
    graph = facets_graph()
    conninfo = database_factory()
    load_records(conninfo, graph.records)
    queries = [
        {},
        {"governance_state": "governed"},
        {"network_id": NZ},
        {"station_id": "10"},
        {"station_id": "10", "governance_state": "governed"},
        {"network_id": NB, "station_id": "9"},
        {"network_id": NZ, "transport": "iptv"},
    ]

    def facets_of(client: Any, query: dict[str, str]) -> Any:
        target = "/registry/origins?" + urlencode({**query, "facet": EVERY_FACET})
        response = client.get(target, headers=admin_headers)
        assert response.status_code == 200, response.get_data()
        return response.get_json()["facets"]

    first = api_app_factory(conninfo).test_client()
    read = [facets_of(first, query) for query in queries]
    first.application.extensions["registry_db"].close()  # its connections, not at the run's end
    load_records(conninfo, graph.records)  # generation 2, the same graph
    with psycopg.connect(conninfo, autocommit=True) as conn:
        for table in dropped:
            conn.execute(sql.SQL("DROP TABLE graph.{}").format(sql.Identifier(table)))
    client = api_app_factory(conninfo).test_client()
    assert [facets_of(client, query) for query in queries] == read


def test_a_generation_whose_search_keys_stand_alone_counts_a_searchs_facets_by_rows(
    database_factory: Callable[[], str],
    api_app_factory: Callable[..., Any],
    admin_headers: dict[str, str],
):
    """A generation loaded before origin_search kept the network, station and combination
    beside the search keys (those columns and the network numbers dropped here) answers the
    same facets of every search, alone and with each other filter, by looking its matches up
    in origin_rows."""
    graph = facets_graph()
    conninfo = database_factory()
    load_records(conninfo, graph.records)
    queries = [
        {"search": "origin"},
        {"search": "ORIGIN 1"},
        {"search": "nothing like it"},
        {"search": "origin", "network_id": NZ},
        {"search": "origin", "station_id": "10"},
        {"search": "origin", "governance_state": "governed", "transport": "iptv"},
        {"search": "origin 1", "network_id": NB, "station_id": "10"},
    ]

    def facets_of(client: Any, query: dict[str, str]) -> Any:
        target = "/registry/origins?" + urlencode({**query, "facet": EVERY_FACET})
        response = client.get(target, headers=admin_headers)
        assert response.status_code == 200, response.get_data()
        return response.get_json()["facets"]

    first = api_app_factory(conninfo).test_client()
    read = [facets_of(first, query) for query in queries]
    first.application.extensions["registry_db"].close()  # its connections, not at the run's end
    load_records(conninfo, graph.records)  # generation 2, the same graph
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("ALTER TABLE graph.origin_search DROP COLUMN combo, DROP COLUMN station")
        conn.execute("ALTER TABLE graph.origin_search DROP COLUMN network")
        conn.execute("DROP TABLE graph.network_numbers")
    client = api_app_factory(conninfo).test_client()
    assert [facets_of(client, query) for query in queries] == read
