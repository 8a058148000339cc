"""Plain functions over the graph, connection first, one SQL file each."""

from __future__ import annotations

from typing import Any

import psycopg

from registry.queries import QUERIES
from registry.search_text import fold_for_search

_INTEGRATION_STATUS = QUERIES["summary/get_integration_status"]
_REGISTRY_SUMMARY = QUERIES["summary/get_registry_summary"]
_LIST_ORIGINS = QUERIES["origins/list_origins"]
_ORIGIN_BY_ID = QUERIES["origins/get_origin_by_id"]
_ORIGIN_BY_ADDRESS = QUERIES["origins/get_origin_by_address"]

TRANSPORT_BITS = {"iptv": 1, "ovp": 2, "ota": 4, "fast": 8}


def _one_value(conn: psycopg.Connection, query: str, params: dict[str, Any] | None = None) -> Any:
    """The first column of the first row, or None when there is no row."""
    row = conn.execute(query, params).fetchone()
    return None if row is None else row[0]


def get_integration_status(conn: psycopg.Connection) -> dict[str, Any] | None:
    """The feed record's non-null fields, or None when the graph has no feed record."""
    return _one_value(conn, _INTEGRATION_STATUS)


def get_registry_summary(conn: psycopg.Connection) -> dict[str, Any]:
    """The platform-wide counts of the loaded graph."""
    return _one_value(conn, _REGISTRY_SUMMARY)


def get_origin_by_id(conn: psycopg.Connection, origin_uuid: str) -> dict[str, Any] | None:
    """The record of one origin by its uuid (lower-case), or None."""
    return _one_value(conn, _ORIGIN_BY_ID, {"origin_uuid": origin_uuid})


def get_origin_by_address(
    conn: psycopg.Connection, network: int, station: int, channel: int
) -> dict[str, Any] | None:
    """The record of the origin holding network.station.channel, or None."""
    return _one_value(
        conn, _ORIGIN_BY_ADDRESS, {"network": network, "station": station, "channel": channel}
    )


def list_origins(
    conn: psycopg.Connection, filters: dict[str, Any], limit: int, offset: int
) -> tuple[int, list[dict[str, Any]]]:
    """(total matching, the records of one page) for the parsed filters."""
    governance = filters.get("governance_state")
    allocation = filters.get("allocation_state")
    search = filters.get("search")
    params = {
        "governed": None if governance is None else governance == "governed",
        "allocated": None if allocation is None else allocation == "allocated",
        "publication_status": filters.get("publication_status"),
        "transport_bit": TRANSPORT_BITS.get(filters.get("transport", "")),
        "has_presentations": filters.get("has_presentations"),
        "network_id": filters.get("network_id"),
        "station": filters.get("station_id"),
        "search": None if search is None else fold_for_search(search),
        "limit": limit,
        "offset": offset,
    }
    row = conn.execute(_LIST_ORIGINS, params).fetchone()
    assert row is not None  # an aggregate query always returns its one row
    return int(row[0]), row[1]
