"""Facets of a listing pinned to an older generation (`generation=n`; docs/api.md, "Pinned
reads" and "Facets and many ids in one request"): counted from generation n's graph on every
access path, the ones read from the load's counts included.

Two different graphs are loaded one after the other (tests/api/facet_graphs.py, variants 0
and 1: other flags, a quarter of the origins gone), so every facet of every path differs
between the two generations; each answer is checked against the plain-Python model of the
listing (tests/properties/model.py) over the document its generation was loaded from.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import pytest
from flask import Flask

from tests.api.api_support import CheckedClient, OpenApiConformance
from tests.api.facet_graphs import BIG_NETWORK, BIG_STATION, origin_uuid, wide_graph
from tests.conftest import load_records
from tests.properties.model import FACET_NAMES, RegistryModel, parse_filters

SIZE = 100


@dataclass(frozen=True)
class Loaded:
    """A client over a database holding two generations, and a model of each one's graph."""

    client: CheckedClient
    older: int
    newer: int
    models: dict[int, RegistryModel]


def generation_of(client: CheckedClient) -> int:
    """The generation an unpinned listing is answered from: the newest."""
    response = client.get("/registry/origins?limit=1")
    assert response.status_code == 200
    return int(response.headers["Registry-Generation"])


@pytest.fixture(scope="module")
def loaded(
    database_factory: Callable[[], str],
    api_app_factory: Callable[..., Flask],
    api_conformance: OpenApiConformance,
    admin_headers: dict[str, str],
) -> Loaded:
    """The wide graph loaded, then its variant over it: both generations kept."""
    conninfo = database_factory()
    first, second = wide_graph(0).records, wide_graph(1).records
    load_records(conninfo, first)
    app = api_app_factory(conninfo)
    client = CheckedClient(app.test_client(), api_conformance, admin_headers)
    older = generation_of(client)
    load_records(conninfo, second)
    newer = generation_of(client)
    assert newer > older
    return Loaded(client, older, newer, {older: RegistryModel(first), newer: RegistryModel(second)})


FLAGS = {"allocation_state": "allocated"}
SOME_IDS = ",".join(origin_uuid(number) for number in range(0, 300, 3))


@pytest.mark.parametrize(
    "query",
    [
        pytest.param({}, id="unfiltered"),
        pytest.param(FLAGS, id="flags"),
        pytest.param({"governance_state": "governed", "transport": "iptv"}, id="flags-narrow"),
        pytest.param({"network_id": BIG_NETWORK}, id="network"),
        pytest.param({"network_id": BIG_NETWORK, "governance_state": "governed"},
                     id="network+flags"),
        pytest.param({"station_id": str(BIG_STATION)}, id="station"),
        pytest.param({"station_id": str(BIG_STATION), "has_presentations": "true"},
                     id="station+flags"),
        pytest.param({"search": "news"}, id="search"),
        pytest.param({"id": SOME_IDS}, id="ids"),
        pytest.param({"id": SOME_IDS, **FLAGS}, id="ids+flags"),
    ],
)  # fmt: skip
def test_pinned_facets_count_their_generations_graph(loaded: Loaded, query: dict[str, str]):
    """Every facet, pinned to the older generation, is that graph's; pinned to the newer one
    or not pinned, the newer graph's; the older one asked again after those, still its own."""
    filters = parse_filters(query)
    names = list(FACET_NAMES)
    expected = {
        generation: model.facets(filters, names, SIZE)
        for generation, model in loaded.models.items()
    }
    # The two graphs differ in this path's facets, ranked ones included.
    for name in names:
        assert expected[loaded.older][name] != expected[loaded.newer][name], name
    asked = {**query, "facet": ",".join(names), "facet_size": str(SIZE), "limit": "1"}

    def facets(generation: int | None) -> tuple[int, Any]:
        """(generation answered, facets) of the listing, pinned to generation when given."""
        pinned = asked if generation is None else {**asked, "generation": str(generation)}
        response = loaded.client.get("/registry/origins?" + urlencode(pinned))
        assert response.status_code == 200, response.get_data()
        return int(response.headers["Registry-Generation"]), response.get_json()["facets"]

    assert facets(loaded.older) == (loaded.older, expected[loaded.older])
    assert facets(loaded.newer) == (loaded.newer, expected[loaded.newer])
    assert facets(None) == (loaded.newer, expected[loaded.newer])
    assert facets(loaded.older) == (loaded.older, expected[loaded.older])
