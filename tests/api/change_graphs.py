"""Graphs A, B and C for the changes tests (docs/api.md, Changes between generations): B differs
from A in known ways, one by one, and C from B by one rename. CHANGES_B says what B changed, origin
by origin."""

from __future__ import annotations

from typing import Any

Record = dict[str, Any]
NORTH, SOUTH = "svc:network:north", "svc:network:south"
# Document order is origin 1, 2, ... 10; id order is another (each uuid's repeated digit).
DIGITS = {1: "9", 2: "3", 3: "7", 4: "1", 5: "5", 6: "2", 7: "8", 8: "4", 9: "6", 10: "0"}


def oid(key: int) -> str:
    """The origin id of test origin `key`."""
    digit = DIGITS[key]
    return f"svc:origin:{digit * 8}-0000-4000-8000-{digit * 12}"


def origin(key: int, name: str, network: str | None = None) -> Record:
    """A reviewed origin record."""
    return {
        "type": "origin",
        "id": oid(key),
        "name": name,
        "network_id": network,
        "registry_id": None,
        "reviewed": True,
    }


def edge(key: int, active: bool, governor: str = "svc:domain:one") -> Record:
    """A governance edge of origin `key`."""
    return {
        "type": "governance_edge",
        "origin_id": oid(key),
        "governor_id": governor,
        "active": active,
    }


def allocation(key: int, address: tuple[int, int, int], held_at: str | None = None) -> Record:
    """An allocation of origin `key`, published, or held when held_at is given."""
    network, station, channel = address
    return {
        "type": "allocation",
        "origin_id": oid(key),
        "network": network,
        "station": station,
        "channel": channel,
        "publication_status": "held" if held_at else "published",
        "held_at": held_at,
        "held_reason": None,
    }


def carriage(carriage_id: str, transport: str, key: int, provider: str | None = None) -> Record:
    """A carriage naming origin `key`."""
    return {
        "type": "carriage",
        "id": carriage_id,
        "transport": transport,
        "provider": provider,
        "source": None,
        "availability": None,
        "origin_id": oid(key),
    }


CATALOG = {"type": "catalog", "transports": ["iptv", "ovp", "ota", "fast"]}
GRAPH_A = [
    CATALOG,
    {"type": "network", "id": NORTH, "name": "North"},
    {"type": "network", "id": SOUTH, "name": "South"},
    *(origin(1, "Alpha", NORTH), edge(1, True), allocation(1, (1, 0, 5))),
    carriage("a-iptv", "iptv", 1),
    origin(2, "Bravo", NORTH),
    *(origin(3, "Charlie", SOUTH), edge(3, False), allocation(3, (1, 0, 1))),
    *(origin(4, "Delta"), allocation(4, (2, 0, 0))),
    *(carriage("d-1", "iptv", 4, "P1"), carriage("d-2", "ovp", 4, "P2")),
    *(origin(5, "Echo"), allocation(5, (3, 1, 4), "2026-01-02T03:04:05Z")),
    *(origin(6, "Foxtrot", SOUTH), allocation(6, (1, 0, 7))),
    *(origin(8, "Hotel"), carriage("h-1", "fast", 8, "Old")),
    *(origin(9, "India", SOUTH), edge(9, True), allocation(9, (5, 5, 5))),
    carriage("i-1", "ota", 9),
    *(origin(10, "Juliet"), allocation(10, (4, 0, 0))),
]
GRAPH_B = [
    CATALOG,
    {"type": "network", "id": NORTH, "name": "North Renamed"},
    {"type": "network", "id": SOUTH, "name": "South"},
    *(origin(1, "Alpha", NORTH), edge(1, True), allocation(1, (1, 0, 5))),
    *(carriage("a-iptv", "iptv", 1), carriage("a-fast", "fast", 1)),
    origin(2, "Bravo", NORTH),
    *(origin(3, "Charlie", SOUTH), edge(3, True), allocation(3, (1, 0, 1))),
    *(origin(4, "Delta"), edge(4, False, "svc:domain:two"), allocation(4, (2, 0, 0))),
    *(carriage("d-2", "ovp", 4, "P2"), carriage("d-1", "iptv", 4, "P1")),
    *(origin(6, "Foxtrot", SOUTH), allocation(6, (1, 0, 8))),
    *(origin(7, "Golf", NORTH), allocation(7, (1, 2, 3))),
    *(origin(8, "Hotel"), carriage("h-1", "fast", 8, "New")),
    *(origin(9, "India", SOUTH), edge(9, True), allocation(9, (5, 5, 5))),
    carriage("i-1", "ota", 9),
    origin(10, "Juliet Renamed"),
][::-1]
# What B changed, origin by origin: kind, blocks, and the CSV's name and address.
CHANGES_B = {
    1: ("changed", ["origin", "presentations"], "Alpha", "1.0.5"),
    2: ("changed", ["origin"], "Bravo", ""),
    3: ("changed", ["governance"], "Charlie", "1.0.1"),
    5: ("removed", [], "Echo", "3.1.4"),
    6: ("changed", ["bans"], "Foxtrot", "1.0.8"),
    7: ("added", [], "Golf", "1.2.3"),
    8: ("changed", ["presentations"], "Hotel", ""),
    10: ("changed", ["origin", "bans"], "Juliet Renamed", ""),
}
IDS_B = sorted(oid(key) for key in CHANGES_B)
IDS_A = sorted(oid(record_key) for record_key in DIGITS if record_key != 7)
COUNTS_B = {"added": 1, "removed": 1, "changed": 6}
# B with Golf renamed: one origin changed in its `origin` block.
GRAPH_C = [r for r in GRAPH_B if r.get("id") != oid(7)] + [origin(7, "Golf Renamed", NORTH)]
