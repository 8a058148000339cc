"""Plain functions over the graph, connection first, one SQL file each."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import psycopg

from registry.database.generations import LIVE_SCHEMA, Stamp, graph_statement, row_stamp
from registry.database.queries import QUERIES
from registry.database.rows import Row, one_row
from registry.database.search_cache import REMEMBERED, SearchCache
from registry.database.search_text import fold_for_search

_INTEGRATION_STATUS = "summary/get_integration_status"
_REGISTRY_SUMMARY = "summary/get_registry_summary"
_LIST_ALL = "origins/list_all_origins"
_LIST_BY_FLAGS = "origins/list_origins_by_flags"
# A network without a station filter, and with one (either optionally narrowed by flags).
_LIST_BY_NETWORK = "origins/list_origins_by_network"
_LIST_BY_NETWORK_AND_STATION = "origins/list_origins_by_network_and_station"
_LIST_BY_STATION = "origins/list_origins_by_station"
_SEARCH = "origins/search_origins"
_LIST_BY_IDS = "origins/list_origins_by_ids"
_BY_POSITIONS = "origins/get_origins_by_positions"
_ORIGIN_BY_ID = "origins/get_origin_by_id"
_ORIGIN_BY_ADDRESS = "origins/get_origin_by_address"
_SCHEMA_STATE = QUERIES["meta/get_schema_state"]

TRANSPORT_BITS = {"iptv": 1, "ovp": 2, "ota": 4, "fast": 8}
# origin_rows.combo packs the flag filters into one integer (sql/load/build_origin_rows.sql).
GOVERNED, ALLOCATED, PUBLISHED, HELD = 1, 2, 4, 8
TRANSPORT_SHIFT = 4
ALL_COMBOS = range(256)
_LIKE_ESCAPES = str.maketrans({"\\": "\\\\", "%": "\\%", "_": "\\_"})
# This process's memory of search matches, per generation (registry/database/search_cache.py).
SEARCHES = SearchCache()


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a listing: the total matching, how many are on the page, and the page's
    records as one JSON array text, joined by the statement in position order, which the
    answer passes through as it is (no array to parse, no record to re-encode)."""

    total: int
    returned: int
    records: str


def _stamped_value(
    conn: psycopg.Connection,
    name: str,
    column: str,
    schema: str,
    params: dict[str, Any] | None = None,
) -> tuple[Stamp, Any]:
    """(stamp, column) of the one row a read query returns, read in schema."""
    row = one_row(conn, graph_statement(name, schema), params)
    return row_stamp(row), row[column]


def get_integration_status(
    conn: psycopg.Connection, schema: str = LIVE_SCHEMA
) -> tuple[Stamp, dict[str, Any] | None]:
    """The feed record's non-null fields, or None when the graph has no feed record."""
    return _stamped_value(conn, _INTEGRATION_STATUS, "feed", schema)


def get_registry_summary(
    conn: psycopg.Connection, schema: str = LIVE_SCHEMA
) -> tuple[Stamp, dict[str, Any]]:
    """The platform-wide counts of the loaded graph."""
    return _stamped_value(conn, _REGISTRY_SUMMARY, "doc", schema)


def get_origin_by_id(
    conn: psycopg.Connection, origin_uuid: str | None, schema: str = LIVE_SCHEMA
) -> tuple[Stamp, str | None]:
    """The record (JSON text) of one origin by its uuid (lower-case; None: no uuid), or None."""
    return _stamped_value(conn, _ORIGIN_BY_ID, "doc", schema, {"origin_uuid": origin_uuid})


def get_origin_by_address(
    conn: psycopg.Connection, network: int, station: int, channel: int, schema: str = LIVE_SCHEMA
) -> tuple[Stamp, str | None]:
    """The record (JSON text) of the origin holding network.station.channel, or None."""
    params = {"network": network, "station": station, "channel": channel}
    return _stamped_value(conn, _ORIGIN_BY_ADDRESS, "doc", schema, params)


FLAG_FILTERS = (
    "governance_state",
    "allocation_state",
    "publication_status",
    "transport",
    "has_presentations",
)
# The values each flag filter takes, parsed (schemas/params.py checks the query string; the
# load ranks a facet for every combination of them: facets.facet_key_combos).
FLAG_FILTER_VALUES: dict[str, tuple[Any, ...]] = {
    "governance_state": ("governed", "ungoverned"),
    "allocation_state": ("allocated", "unallocated"),
    "publication_status": ("published", "held"),
    "transport": tuple(TRANSPORT_BITS),
    "has_presentations": (True, False),
}


def matching_combos(filters: dict[str, Any]) -> list[int] | None:
    """The flag combinations the flag filters admit; None when none of them is given."""
    key = tuple(filters.get(name) for name in FLAG_FILTERS)
    if key == (None,) * len(FLAG_FILTERS):
        return None
    return list(_combos_for(key))


@cache
def _combos_for(key: tuple[Any, ...]) -> tuple[int, ...]:
    """Every combination passing the given flag filters (few distinct keys: computed once)."""
    governance, allocation, publication, transport, presentations = key
    tests = []
    if governance is not None:
        tests.append(lambda combo: bool(combo & GOVERNED) == (governance == "governed"))
    if allocation is not None:
        tests.append(lambda combo: bool(combo & ALLOCATED) == (allocation == "allocated"))
    if publication is not None:
        state = PUBLISHED if publication == "published" else HELD
        tests.append(lambda combo: bool(combo & state))
    if transport is not None:
        bit = TRANSPORT_BITS[transport] << TRANSPORT_SHIFT
        tests.append(lambda combo: bool(combo & bit))
    if presentations is not None:
        tests.append(lambda combo: (combo >> TRANSPORT_SHIFT != 0) == presentations)
    return tuple(combo for combo in ALL_COMBOS if all(test(combo) for test in tests))


def like_pattern(search: str) -> str:
    """A LIKE pattern matching the case-folded term literally, anywhere."""
    return "%" + fold_for_search(search).translate(_LIKE_ESCAPES) + "%"


def id_uuids(filters: dict[str, Any]) -> str | None:
    """The `id` filter's bare uuids as one uuid[] literal, `{<uuid>,...}`, or None.

    One text parameter, not a list: psycopg checks and quotes a list's every item on every
    request, while the parser has already held each id to hex digits and dashes, which an
    array literal takes as they are.
    """
    ids = filters.get("id")
    if ids is None:
        return None
    return "{" + ",".join([origin_id.rpartition(":")[2] for origin_id in ids]) + "}"


# The parameters of a listing's page, not of what it lists.
_PAGE = frozenset({"limit", "offset"})
# Every filter filter_params reads: the flag filters, then one parameter each. A filter the
# parser gives (schemas.params.FILTER_NAMES) must be one of these; a facet statement refuses
# any other (facets.facet_statement), and a search's remembered matches are keyed by every
# parameter filter_params returns (_search_key).
FILTERS_READ = (*FLAG_FILTERS, "network_id", "station_id", "search", "id")


def filter_params(filters: dict[str, Any]) -> dict[str, Any]:
    """The parameters every filtered statement takes, each None when its filter is not given."""
    return {
        "combos": matching_combos(filters),
        "network_id": filters.get("network_id"),
        "station": filters.get("station_id"),
        "pattern": like_pattern(filters["search"]) if "search" in filters else None,
        "ids": id_uuids(filters),
    }


def list_origins(
    conn: psycopg.Connection,
    filters: dict[str, Any],
    limit: int,
    offset: int,
    schema: str = LIVE_SCHEMA,
) -> tuple[Stamp, Page]:
    """(stamp, page) for the parsed filters.

    Each access path is its own SQL file, so every statement has a plan that fits it; each
    returns the generation, the total and the page from one statement, hence one snapshot.
    """
    params = {**filter_params(filters), "limit": limit, "offset": offset}
    combos, network_id, station = params["combos"], params["network_id"], params["station"]
    if params["ids"] is not None:
        # At most 100 origins: found by id, whatever else is asked (search included).
        query = _LIST_BY_IDS
    elif params["pattern"] is not None:
        return _search(conn, params, schema)
    elif network_id is not None:
        query = _LIST_BY_NETWORK_AND_STATION if station is not None else _LIST_BY_NETWORK
    elif station is not None:
        query = _LIST_BY_STATION
    elif combos is not None:
        query = _LIST_BY_FLAGS
    else:
        query = _LIST_ALL
    row = one_row(conn, graph_statement(query, schema), params)
    return row_stamp(row), _page(row, int(row["total"]))


def _page(row: Row, total: int) -> Page:
    """The page a listing statement's row holds (returned, records), of total matches."""
    return Page(total, int(row["returned"]), row["records"])


def _search(conn: psycopg.Connection, params: dict[str, Any], schema: str) -> tuple[Stamp, Page]:
    """A search page: from the remembered positions when the generation is still theirs.

    One statement either way: the page's records by position (with, from the same snapshot,
    the generation they were read from, which must be the one the positions came from), or,
    the first time in a generation, the whole search, whose positions are kept for the next
    pages. A common term's matches are counted once per process and generation, not per page.
    """
    key = _search_key(conn, params)
    start, limit = params["offset"], params["limit"]
    known = SEARCHES.get(key)
    if known is not None and known.covers(start, limit):
        page = list(known.positions[start : start + limit])
        row = one_row(conn, graph_statement(_BY_POSITIONS, schema), {"positions": page})
        stamp = row_stamp(row)
        if stamp == known.stamp:
            return stamp, _page(row, known.total)
    row = one_row(conn, graph_statement(_SEARCH, schema), {**params, "remembered": REMEMBERED})
    stamp = row_stamp(row)
    total = int(row["total"])
    if known is None or known.stamp != stamp:
        SEARCHES.put(key, stamp, total, row["positions"])
    return stamp, _page(row, total)


def _search_key(conn: psycopg.Connection, params: dict[str, Any]) -> tuple[Any, ...]:
    """What a search's remembered matches are kept under: the database (generation numbers
    are only unique within one) and every parameter of the statement but the page's offset
    and limit, whatever filters there are: a new filter is part of the key by itself, so a
    search it narrows never reads another's positions."""
    info = conn.info
    filtering = sorted((name, value) for name, value in params.items() if name not in _PAGE)
    return (
        info.host,
        info.port,
        info.dbname,
        *((name, tuple(value) if isinstance(value, list) else value) for name, value in filtering),
    )


def get_schema_state(conn: psycopg.Connection) -> dict[str, Any]:
    """The newest applied migration, the version the live graph was built with, and when."""
    # A SELECT of scalar subqueries always returns its one row.
    row = one_row(conn, _SCHEMA_STATE)
    return {name: row[name] for name in ("migrations_version", "graph_version", "loaded_at")}
