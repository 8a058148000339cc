"""GET /registry/origins/{originId} (both id forms) and /registry/addresses/{address}.

Every origin of a generated graph is looked up every way it can be named, and a few
names that match nothing must answer 404 with the documented body.
"""

from __future__ import annotations

import re
import uuid
from typing import TYPE_CHECKING, Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.properties.model import RegistryModel, canonical_origin_id, origin_uuid
from tests.properties.strategies import (
    ADDRESS_CHANNELS,
    ADDRESS_NETWORKS,
    ADDRESS_STATIONS,
    PROPERTY_SETTINGS,
    examples,
    graph_documents,
)

if TYPE_CHECKING:
    from tests.properties.conftest import LoadedGraph

UTC_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|\+00:00)\Z")


def id_forms(written: str) -> set[str]:
    """Every way to name an origin: svc:origin:<uuid> or the bare uuid, any letter case."""
    bare = origin_uuid(written)
    return {
        written,
        bare,
        "svc:origin:" + bare.lower(),
        bare.lower(),
        bare.upper(),
    }


def assert_envelope(graph: LoadedGraph, path: str, expected: dict[str, Any]) -> None:
    """The path answers the OriginEnvelope of the expected record."""
    body = graph.get_json(path)
    assert set(body) == {"success", "generated_at", "origin"}, path
    assert body["success"] is True
    assert UTC_DATE_TIME.match(body["generated_at"]), body["generated_at"]
    assert body["origin"] == expected, path


def assert_not_found(graph: LoadedGraph, path: str) -> None:
    """The path answers 404 with success false and an error string, as JSON."""
    response = graph.get(path)
    assert response.status_code == 404, (path, response.status_code, response.data)
    assert response.mimetype == "application/json"
    body = response.get_json()
    assert set(body) == {"success", "error"}, body
    assert body["success"] is False
    assert isinstance(body["error"], str) and body["error"]


@settings(PROPERTY_SETTINGS, max_examples=examples(40))
@given(records=graph_documents(), strangers=st.lists(st.uuids(), max_size=2))
def test_every_origin_is_found_by_each_id_form_and_by_its_address(
    registry_graph: LoadedGraph, records: list[dict[str, Any]], strangers: list[uuid.UUID]
) -> None:
    """Each id form and the held address give the model's record; unknown ones give 404."""
    registry_graph.load(records)
    model = RegistryModel(records)
    for record in records:
        if record["type"] != "origin":
            continue
        expected = model.records[canonical_origin_id(record["id"])]
        for form in sorted(id_forms(record["id"])):
            assert_envelope(registry_graph, f"/registry/origins/{form}", expected)
        if expected["bans"]["allocated"]:
            address = expected["bans"]["address"]
            assert_envelope(registry_graph, f"/registry/addresses/{address}", expected)
    known = {origin_uuid(record_id).lower() for record_id in model.records}
    for stranger in strangers:
        if str(stranger) not in known:
            assert_not_found(registry_graph, f"/registry/origins/svc:origin:{stranger}")
            assert_not_found(registry_graph, f"/registry/origins/{stranger}")
    # Addresses from the same few numbers, so that they sit between the allocated ones.
    free = [
        (network, station, channel)
        for network in ADDRESS_NETWORKS
        for station in ADDRESS_STATIONS
        for channel in ADDRESS_CHANNELS
        if model.by_address(network, station, channel) is None
    ]
    for network, station, channel in free[:: max(1, len(free) // 3)]:
        assert_not_found(registry_graph, f"/registry/addresses/{network}.{station}.{channel}")


@settings(PROPERTY_SETTINGS, max_examples=examples(15))
@given(records=graph_documents(max_origins=5))
def test_names_that_are_not_origin_ids_or_addresses_are_not_found(
    registry_graph: LoadedGraph, records: list[dict[str, Any]]
) -> None:
    """Malformed ids and addresses match no origin: 404, never 400 or 500."""
    registry_graph.load(records)
    model = RegistryModel(records)
    for record in model.ordered:
        origin_id = record["origin"]["id"]
        for malformed in (
            origin_id.replace("svc:origin:", "svc:network:"),
            origin_id + "0",
            origin_uuid(origin_id)[:-1],
        ):
            assert_not_found(registry_graph, f"/registry/origins/{malformed}")
        if record["bans"]["allocated"]:
            bans = record["bans"]
            for malformed in (
                f"{bans['network']}.{bans['station']}",
                f"{bans['network']}.{bans['station']}.{bans['channel']}.0",
                f"-{bans['network']}.{bans['station']}.{bans['channel']}",
                f"{bans['network']}.{bans['station']}.{bans['channel'] + 2**32}",
            ):
                assert_not_found(registry_graph, f"/registry/addresses/{malformed}")
