"""GET /registry/origins with facets over many values (docs/api.md, "Facets and many ids in
one request"), on the wide graph of tests/api/facet_graphs.py: more than 101 networks and
more than 101 stations, so that facet_size=100 and the rankings the load keeps (the first 101
values) both cut real values.

The network_id and station_id facets of every access path are checked against a brute force:
the NDJSON export of the same filters, counted and ranked here. And on every access path the
`facets` member lists the facets in the order asked, read from the raw body.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import orjson
import pytest

from tests.api.api_support import CheckedClient, GraphBuilder
from tests.api.facet_graphs import BIG_NETWORK, BIG_STATION, origin_uuid, wide_graph

NDJSON = "application/x-ndjson"


@pytest.fixture(scope="module")
def api(api_graph_factory: Callable[[GraphBuilder], CheckedClient]) -> CheckedClient:
    """The wide graph, loaded, with a checked admin client over it."""
    return api_graph_factory(wide_graph())


def exported(
    api: CheckedClient, admin_headers: dict[str, str], query: dict[str, str]
) -> list[dict[str, Any]]:
    """Every origin the filters match, as the NDJSON export streams them."""
    response = api.client.get(
        "/registry/origins?" + urlencode(query), headers={**admin_headers, "Accept": NDJSON}
    )
    assert response.status_code == 200, response.get_data()
    records = [orjson.loads(line) for line in response.get_data().splitlines()]
    assert response.headers["Registry-Total"] == str(len(records))
    return records


def ranking(records: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """Every value of a ranked facet over records with its count, by count descending, then
    value ascending (ids in code-point order, stations as numbers), null last."""
    counts: Counter[Any] = Counter()
    names: dict[str, str | None] = {}
    for record in records:
        if name == "network_id":
            network = record["origin"]["network"]
            value = None if network is None else network["id"]
            if value is not None:
                names[value] = network["name"]
        else:
            bans = record["bans"]
            value = bans["station"] if bans["allocated"] else None
        counts[value] += 1
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0] is None, item[0] or 0))
    if name == "network_id":
        return [{"value": v, "name": names.get(v), "count": n} for v, n in ordered]
    return [{"value": v, "count": n} for v, n in ordered]


def an_id_list() -> str:
    """100 origin ids across the graph: the big network's, the big station's, and others."""
    return ",".join(origin_uuid(number) for number in range(0, 300, 3))


FLAGS = {"allocation_state": "allocated"}
GOVERNED = {"governance_state": "governed"}
BOTH = ("network_id", "station_id")
# query, and the ranked facets that have more than 101 values under it.
ACCESS_PATHS = [
    pytest.param({}, BOTH, id="unfiltered"),
    pytest.param(FLAGS, BOTH, id="flags"),
    pytest.param({**GOVERNED, "transport": "iptv"}, (), id="flags-narrow"),
    pytest.param({"governance_state": "ungoverned", "has_presentations": "false"}, (),
                 id="flags-few"),
    pytest.param({"network_id": BIG_NETWORK}, ("station_id",), id="network"),
    pytest.param({"station_id": str(BIG_STATION)}, ("network_id",), id="station"),
    pytest.param({"network_id": BIG_NETWORK, **GOVERNED}, ("station_id",), id="network+flags"),
    pytest.param({"station_id": str(BIG_STATION), **GOVERNED}, ("network_id",),
                 id="station+flags"),
    pytest.param({"network_id": BIG_NETWORK, "station_id": str(BIG_STATION)}, (),
                 id="network+station"),
    pytest.param({"search": "news"}, BOTH, id="search"),
    pytest.param({"search": "NEWS", **FLAGS}, BOTH, id="search+flags"),
    pytest.param({"search": "news", "network_id": BIG_NETWORK}, ("station_id",),
                 id="search+network"),
    pytest.param({"id": an_id_list()}, (), id="ids"),
]  # fmt: skip


@pytest.mark.parametrize(("query", "wide"), ACCESS_PATHS)
def test_ranked_facets_count_every_match_past_the_hundredth(
    api: CheckedClient, admin_headers: dict[str, str], query: dict[str, str], wide: tuple
):
    """With facet_size=100, the network_id and station_id facets are the first 100 values of
    the export's own ranking, truncated exactly when it has more: values, names, counts,
    order."""
    records = exported(api, admin_headers, query)
    rankings = {name: ranking(records, name) for name in ("network_id", "station_id")}
    for name in wide:
        # The graph makes the cut meaningful: more values than the load keeps, and a tie of
        # count 1 across ranks 100 and 101, so the tie-break decides which values are shown.
        assert len(rankings[name]) > 101, name
        assert rankings[name][99]["count"] == rankings[name][100]["count"] == 1, name
    target = {**query, "facet": "network_id,station_id", "facet_size": "100", "limit": "1"}
    body = api.json("/registry/origins?" + urlencode(target))
    assert body["page"]["total"] == len(records)
    assert body["facets"] == {
        name: {"values": values[:100], "truncated": len(values) > 100}
        for name, values in rankings.items()
    }


def test_the_default_facet_size_cuts_at_ten(api: CheckedClient, admin_headers: dict[str, str]):
    """Without facet_size, the first ten of the same ranking, truncated."""
    records = exported(api, admin_headers, FLAGS)
    body = api.json("/registry/origins?" + urlencode({**FLAGS, "facet": "station_id,network_id"}))
    assert body["facets"] == {
        "station_id": {"values": ranking(records, "station_id")[:10], "truncated": True},
        "network_id": {"values": ranking(records, "network_id")[:10], "truncated": True},
    }


# None of them in the documented order, nor in alphabetical order.
ORDERS = [
    pytest.param("station_id,transport,governance_state", id="three"),
    pytest.param(
        "has_presentations,network_id,allocation_state,transport,publication_status,station_id,"
        "governance_state",
        id="all-seven",
    ),
    pytest.param("network_id,allocation_state", id="two"),
]


@pytest.mark.parametrize(
    "query",
    [
        pytest.param({}, id="unfiltered"),
        pytest.param(FLAGS, id="flags"),
        pytest.param({"network_id": BIG_NETWORK}, id="network"),
        pytest.param({"network_id": BIG_NETWORK, **FLAGS}, id="network+flags"),
        pytest.param({"station_id": str(BIG_STATION)}, id="station"),
        pytest.param({"station_id": str(BIG_STATION), **FLAGS}, id="station+flags"),
        pytest.param({"search": "news"}, id="search"),
        pytest.param({"id": an_id_list()}, id="ids"),
    ],
)
@pytest.mark.parametrize("names", ORDERS)
def test_facets_come_in_the_order_asked(api: CheckedClient, query: dict[str, str], names: str):
    """The `facets` member's keys are the names in the order the request gave them, not the
    documented order, as the raw body has them."""
    response = api.get("/registry/origins?" + urlencode({**query, "facet": names, "limit": "1"}))
    assert response.status_code == 200, response.get_data()
    # Every JSON object as its list of (key, value) pairs, in the order the body has them.
    body = dict(json.loads(response.get_data(), object_pairs_hook=list))
    assert [name for name, _ in body["facets"]] == names.split(",")
