"""The five endpoints' 200 answers, field by field, on the worked example and small graphs.

Every response also goes through the OpenAPI document (api_support.CheckedClient).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.api.api_support import CheckedClient, GraphBuilder, origin_uuid

NEWS = "3b2f1e0d-9c8b-4a7f-8e6d-5c4b3a291807"
SPORT = "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"
TELE = "0f0e0d0c-0b0a-4909-8807-060504030201"
POPUP = "7e6d5c4b-3a29-4180-9f7e-6d5c4b3a2918"

GraphFactory = Callable[[GraphBuilder], CheckedClient]


def without_generated_at(body: dict[str, Any]) -> dict[str, Any]:
    """The body as the expected answers give it; generated_at checked on the way."""
    assert_utc_now(body["generated_at"])
    return {name: value for name, value in body.items() if name != "generated_at"}


# When this module was imported: every answer checked here was generated after it. Ordering,
# not a time budget, so a slow machine cannot break it.
IMPORTED_AT = datetime.now(UTC)


def assert_utc_now(text: str) -> None:
    """An RFC 3339 date-time in UTC, of the answer's making: after this test run began (to the
    second the text may be cut to) and not later than now."""
    assert text.endswith(("Z", "+00:00")), text
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    assert IMPORTED_AT.replace(microsecond=0) <= moment <= datetime.now(UTC), text


# -- the worked example ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "GET /summary",
        "GET /registry/summary",
        "GET /registry/addresses/9.10.3",
        f"GET /registry/origins/{NEWS}",
        f"GET /registry/origins/{SPORT}",
    ],
)
def test_example_answers(api_admin: CheckedClient, example_expected: dict[str, Any], key: str):
    """Each answer of small-graph.expected.json, exactly, generated_at aside."""
    body = api_admin.json(key.removeprefix("GET "))
    assert without_generated_at(body) == example_expected[key]


def test_summary_is_public(api_public: CheckedClient, example_expected: dict[str, Any]):
    """GET /summary needs no token; its null counts (pending_reviews) are left out."""
    body = api_public.json("/summary")
    assert without_generated_at(body) == example_expected["GET /summary"]
    assert "pending_reviews" not in body


@pytest.mark.parametrize(
    "origin_id",
    [
        f"svc:origin:{NEWS}",
        NEWS,
        NEWS.upper(),
        f"svc:origin:{NEWS.upper()}",
        "svc:origin:3B2f1E0d-9C8b-4A7f-8E6d-5C4b3A291807",
    ],
    ids=["prefixed", "bare", "bare-upper", "prefixed-upper", "mixed-case"],
)
def test_origin_id_forms(
    api_admin: CheckedClient, example_expected: dict[str, Any], origin_id: str
):
    """svc:origin:<uuid> or the bare uuid, hex in any case: the same record, id lower-case."""
    body = api_admin.json(f"/registry/origins/{origin_id}")
    assert without_generated_at(body) == example_expected[f"GET /registry/origins/{NEWS}"]


@pytest.mark.parametrize(
    ("address", "origin_id"),
    [("9.10.3", TELE), ("10.2.0", SPORT), ("10.2.1", NEWS)],
)
def test_address_lookup_agrees_with_id_lookup(
    api_admin: CheckedClient, address: str, origin_id: str
):
    """The address lookup returns the same envelope as the id lookup of its holder."""
    by_address = without_generated_at(api_admin.json(f"/registry/addresses/{address}"))
    by_id = without_generated_at(api_admin.json(f"/registry/origins/{origin_id}"))
    assert by_address == by_id
    assert by_address["origin"]["bans"]["address"] == address


def test_unallocated_origin_in_example(api_admin: CheckedClient):
    """Pop-up 50%: no network, no registry id, no allocation, no presentations."""
    origin = api_admin.json(f"/registry/origins/{POPUP}")["origin"]
    assert origin["origin"] == {
        "id": f"svc:origin:{POPUP}",
        "name": "Pop-up 50%",
        "registry_id": None,
        "network": {"id": None, "name": None},
    }
    assert origin["governance"] == {"state": "ungoverned", "active_edges": 0}
    assert origin["bans"] == {
        "allocated": False,
        "address": None,
        "network": None,
        "station": None,
        "channel": None,
        "publication_status": None,
        "held": None,
    }
    assert origin["presentations"] == []


def test_generated_at_is_per_response(api_admin: CheckedClient):
    """generated_at is the moment each response was built, in UTC, on every envelope."""
    for url in ("/summary", "/registry/summary", "/registry/origins", f"/registry/origins/{NEWS}"):
        assert_utc_now(api_admin.json(url)["generated_at"])


# -- the per-origin record on a purpose-built graph ----------------------------------------------

NETWORK = "svc:network:records"
UNNAMED_NETWORK = "svc:network:unnamed"


@pytest.fixture(scope="module")
def records_api(api_graph_factory: GraphFactory) -> CheckedClient:
    """One origin per shape of record."""
    graph = GraphBuilder(catalog=["iptv", "ovp", "ota", "fast"])
    graph.network(NETWORK, "Records Network")
    graph.network(UNNAMED_NETWORK, None)
    graph.origin(
        "Many Edges",
        network_id=NETWORK,
        registry_id="R1",
        edges=(True, True, False, True),
        address=(0, 0, 0),
        status="held",
        held_at="2026-03-14T10:30:00.5+01:00",
        held_reason=None,
    )
    graph.origin("Inactive Edges Only", network_id=UNNAMED_NETWORK, edges=(False, False))
    graph.origin("Max Address", address=(2147483647, 2147483647, 2147483647), status="published")
    unreviewed = graph.origin("Unreviewed", reviewed=False, address=(1, 1, 1))
    graph.carriage("unreviewed-iptv", "iptv", unreviewed, "P", "S", "reachable")
    ordered = graph.origin("Ordered Presentations", address=(1, 1, 2), status=None)
    for carriage_id in ("b", "a_1", "B", "a-1", "Z", "é"):
        graph.carriage(carriage_id, "ovp", ordered, availability="unknown")
    full = graph.origin("Full Carriage")
    graph.carriage("full", "ota", full, provider="Prov", source="Src", availability="reachable")
    return api_graph_factory(graph)


def record(api: CheckedClient, name: str) -> dict[str, Any]:
    """The record of a records-graph origin, by name."""
    return api.json(f"/registry/origins/{origin_uuid(name)}")["origin"]


def test_governance_counts_active_edges_only(records_api: CheckedClient):
    """active_edges counts active edges; governed from one active edge up."""
    assert record(records_api, "Many Edges")["governance"] == {
        "state": "governed",
        "active_edges": 3,
    }
    assert record(records_api, "Inactive Edges Only")["governance"] == {
        "state": "ungoverned",
        "active_edges": 0,
    }


def test_held_allocation(records_api: CheckedClient):
    """held carries at (RFC 3339, UTC, the same instant) and a null reason."""
    bans = record(records_api, "Many Edges")["bans"]
    assert {name: value for name, value in bans.items() if name != "held"} == {
        "allocated": True,
        "address": "0.0.0",
        "network": 0,
        "station": 0,
        "channel": 0,
        "publication_status": "held",
    }
    assert bans["held"]["reason"] is None
    at = bans["held"]["at"]
    assert at.endswith(("Z", "+00:00"))
    assert datetime.fromisoformat(at.replace("Z", "+00:00")) == datetime(
        2026, 3, 14, 9, 30, 0, 500000, tzinfo=UTC
    )


@pytest.mark.parametrize(
    ("name", "network"),
    [
        ("Many Edges", {"id": NETWORK, "name": "Records Network"}),
        ("Inactive Edges Only", {"id": UNNAMED_NETWORK, "name": None}),
        ("Max Address", {"id": None, "name": None}),
    ],
)
def test_network_block(records_api: CheckedClient, name: str, network: dict[str, Any]):
    """origin.network: id and name, the name null when the network has none, both null."""
    assert record(records_api, name)["origin"]["network"] == network


def test_unallocated_and_unpublished_bans(records_api: CheckedClient):
    """No allocation: allocated false, every other field null; status null stays null."""
    assert record(records_api, "Inactive Edges Only")["bans"] == {
        "allocated": False,
        "address": None,
        "network": None,
        "station": None,
        "channel": None,
        "publication_status": None,
        "held": None,
    }
    bans = record(records_api, "Ordered Presentations")["bans"]
    assert (bans["address"], bans["publication_status"], bans["held"]) == ("1.1.2", None, None)


def test_presentations_in_code_point_order(records_api: CheckedClient):
    """Presentations are ordered by carriage_id as plain strings, whatever the locale."""
    presentations = record(records_api, "Ordered Presentations")["presentations"]
    assert [p["carriage_id"] for p in presentations] == ["B", "Z", "a-1", "a_1", "b", "é"]
    assert presentations[0] == {
        "carriage_id": "B",
        "transport": "ovp",
        "provider": None,
        "source": None,
        "availability": "unknown",
    }


def test_presentation_fields(records_api: CheckedClient):
    """A presentation carries the carriage's fields as loaded."""
    assert record(records_api, "Full Carriage")["presentations"] == [
        {
            "carriage_id": "full",
            "transport": "ota",
            "provider": "Prov",
            "source": "Src",
            "availability": "reachable",
        }
    ]


def test_unreviewed_origin_has_no_presentations(records_api: CheckedClient):
    """Carriages of an unreviewed origin do not resolve: no presentations."""
    assert record(records_api, "Unreviewed")["presentations"] == []


@pytest.mark.parametrize(
    ("address", "name"),
    [
        ("0.0.0", "Many Edges"),
        ("2147483647.2147483647.2147483647", "Max Address"),
        ("1.1.1", "Unreviewed"),
    ],
)
def test_address_edges(records_api: CheckedClient, address: str, name: str):
    """Zeros and the largest allocatable numbers are found by the address lookup."""
    origin = records_api.json(f"/registry/addresses/{address}")["origin"]
    assert origin["origin"]["name"] == name
    assert origin["bans"]["address"] == address


def test_records_graph_summary(records_api: CheckedClient):
    """The registry counts of the records graph."""
    body = without_generated_at(records_api.json("/registry/summary"))
    assert body == {
        "success": True,
        "canonical_origins": 6,
        "reviewed_origins": 5,
        "governed_origins": 1,
        "eligible_unallocated": 0,
        "bans_allocated": 4,
        "published": 1,
        "held": 1,
        "catalog_carriages": 8,
        "resolved_carriages": 7,
        "unresolved_carriages": 1,
        "transport_inventory": {"iptv": 1, "ovp": 6, "ota": 1, "fast": 0},
        "resolved_presentations": {"iptv": 0, "ovp": 6, "ota": 1, "fast": 0},
    }


# -- the summaries on purpose-built graphs -----------------------------------------------------


def _summary_graph(
    catalog: list[str] | None, feed: dict[str, Any] | None, carriages: bool
) -> GraphBuilder:
    """A graph with one governed unallocated origin, and carriages when a catalog allows."""
    graph = GraphBuilder(catalog=catalog, feed=feed)
    governed = graph.origin("Governed", edges=(True,))
    graph.origin("Held", address=(3, 2, 1), status="held", edges=(False,))
    if carriages:
        graph.carriage("resolved-iptv", "iptv", governed)
        graph.carriage("unclassified", None)
        graph.carriage("orphan-iptv", "iptv")
    return graph


SUMMARY_CASES = [
    pytest.param(
        None,
        None,
        False,
        {"success": True, "connected": False},
        {
            "catalog_carriages": None,
            "resolved_carriages": None,
            "unresolved_carriages": None,
            "transport_inventory": {"iptv": None, "ovp": None, "ota": None, "fast": None},
            "resolved_presentations": {"iptv": 0, "ovp": 0, "ota": 0, "fast": 0},
        },
        id="no-catalog-no-feed",
    ),
    pytest.param(
        ["iptv"],
        {
            "connected": False,
            "networks": 0,
            "iptv_networks": None,
            "ovp_networks": None,
            "channels": 7,
            "programs": None,
            "reviews": None,
            "pending_reviews": 2,
        },
        True,
        {"success": True, "connected": False, "networks": 0, "channels": 7, "pending_reviews": 2},
        {
            "catalog_carriages": 3,
            "resolved_carriages": 1,
            "unresolved_carriages": 2,
            "transport_inventory": {"iptv": 2, "ovp": None, "ota": None, "fast": None},
            "resolved_presentations": {"iptv": 1, "ovp": 0, "ota": 0, "fast": 0},
        },
        id="iptv-catalog-feed-with-nulls",
    ),
    pytest.param(
        ["iptv", "ovp", "ota", "fast"],
        {
            "connected": True,
            **dict.fromkeys(
                (
                    "networks",
                    "iptv_networks",
                    "ovp_networks",
                    "channels",
                    "programs",
                    "reviews",
                    "pending_reviews",
                ),
                None,
            ),
        },
        False,
        {"success": True, "connected": True},
        {
            "catalog_carriages": 0,
            "resolved_carriages": 0,
            "unresolved_carriages": 0,
            "transport_inventory": {"iptv": 0, "ovp": 0, "ota": 0, "fast": 0},
            "resolved_presentations": {"iptv": 0, "ovp": 0, "ota": 0, "fast": 0},
        },
        id="full-catalog-no-carriages-feed-all-null",
    ),
]


@pytest.mark.parametrize(("catalog", "feed", "carriages", "status", "counts"), SUMMARY_CASES)
def test_summaries(
    api_graph_factory: GraphFactory,
    catalog: list[str] | None,
    feed: dict[str, Any] | None,
    carriages: bool,
    status: dict[str, Any],
    counts: dict[str, Any],
):
    """GET /summary echoes the feed without its nulls; GET /registry/summary counts."""
    api = api_graph_factory(_summary_graph(catalog, feed, carriages))
    public = CheckedClient(api.client, api.conformance)
    assert without_generated_at(public.json("/summary")) == status
    assert without_generated_at(api.json("/registry/summary")) == {
        "success": True,
        "canonical_origins": 2,
        "reviewed_origins": 2,
        "governed_origins": 1,
        "eligible_unallocated": 1,
        "bans_allocated": 1,
        "published": 0,
        "held": 1,
        **counts,
    }


def test_empty_graph(api_graph_factory: GraphFactory):
    """A graph with nothing in it: zero counts, an empty listing, lookups 404."""
    api = api_graph_factory(GraphBuilder())
    summary = api.json("/registry/summary")
    assert summary["canonical_origins"] == summary["bans_allocated"] == 0
    listing = api.json("/registry/origins")
    assert listing["origins"] == []
    assert listing["page"] == {"page": 1, "limit": 50, "offset": 0, "returned": 0, "total": 0}
    api.json(f"/registry/origins/{NEWS}", status=404)
    api.json("/registry/addresses/0.0.0", status=404)
