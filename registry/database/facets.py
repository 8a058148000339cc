"""Facets of a listing (docs/api.md, Facets and ids): counts per value over every origin its filters
match.

Counts are read, not counted, wherever the load kept them: per flag combination over the
whole graph (combo_counts), per network or station (network_combo_counts,
station_combo_counts), per network, station and combination (facet_combo_counts), and the
network_id and station_id facets already ranked for every combination of flag filter values
(network_facet_tops, station_facet_tops), the stations of each network and the networks of
each station (network_station_tops, station_network_tops; all in
load/build_filter_counts.sql). Only a network or station narrowed further sums its rows of
facet_combo_counts at request time.
Only a search or an `id` list, which no count table knows, has its matching origins grouped
at request time (the `id` list holds at most 100). A search's matches are grouped where they
are found: the load keeps each origin's station, flag combination and network (as a number
that follows network ids in string order, network_numbers) beside its search keys in
origin_search, so counting a frequent term's facets reads the pages the search reads and
groups them, with no lookup per match in origin_rows (at 1,000,000 origins "news" matches
some 36,000 origins). The counts stay exact: nothing is sampled or bounded. They are still
counted once per worker, generation and search, then remembered for the search's other
pages; counting them inside the search statement itself would save one pass over pages the
search has just read (so in cache), at the cost of a wider statement for every search
without facets. Each access path is one statement
returning the generation it read with its counts; the flag facets are then summed here from
the combinations' counts, and the network_id and station_id facets come ranked and cut to
facet_size + 1 values (the one past the cut says `truncated`).

A generation loaded before all the facet counts existed (origins/facet_counts_exist.sql asks
for the last of them) has its facets counted from origin_rows (count_facets_of_rows.sql), the
same answer at a higher cost, until the loads that follow replace it; one loaded before
origin_search kept the facets' columns (it has no network_numbers) has a search's facets
counted by a lookup per match (count_facets_of_search_rows.sql). Which generations have which
is asked of the catalog once per generation: these are the load's layout, not the schema's,
so no migration rewrites the generations already kept.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import psycopg

from registry.database.generations import LIVE_SCHEMA, Stamp, graph_statement, row_stamp
from registry.database.repository import (
    ALL_COMBOS,
    ALLOCATED,
    FILTERS_READ,
    FLAG_FILTER_VALUES,
    FLAG_FILTERS,
    GOVERNED,
    HELD,
    PUBLISHED,
    TRANSPORT_BITS,
    TRANSPORT_SHIFT,
    filter_params,
    matching_combos,
)
from registry.database.rows import one_row

_OF_ALL = "origins/count_facets_of_all"
_BY_FLAGS = "origins/count_facets_by_flags"
_OF_NETWORK = "origins/count_facets_of_network"
# A network alone (_OF_NETWORK), or narrowed by a station or flag filter.
_OF_NETWORK_NARROWED = "origins/count_facets_of_network_narrowed"
_OF_STATION = "origins/count_facets_of_station"
_BY_STATION = "origins/count_facets_by_station"
_OF_SEARCH = "origins/count_facets_of_search"
_OF_SEARCH_ROWS = "origins/count_facets_of_search_rows"
_OF_ROWS = "origins/count_facets_of_rows"
_EXIST = "origins/facet_counts_exist"

Facets = dict[str, dict[str, Any]]

# Whether a generation has the facet counts, and whether its origin_search keeps what a
# search's facets group by (network_numbers beside it), per database and generation: a
# generation's tables never change once it is committed, so the answer holds for as long as
# it is kept.
_HAS_COUNTS: dict[tuple[Any, ...], tuple[bool, bool]] = {}
_HAS_COUNTS_KEPT = 64
# A search's facets, per database, generation, filters and facets asked: a sweep of a search
# asks for the same counts on every page, and they are counted from its matches.
_SEARCH_FACETS: dict[tuple[Any, ...], Facets] = {}
_SEARCH_FACETS_KEPT = 1024


class UnknownFilter(ValueError):
    """Facets asked for a listing with a filter no facet statement reads: a filter added to
    the parameters without its place here (ARCHITECTURE.md, "Adding a filter or a facet")."""

    def __init__(self, names: list[str]):
        super().__init__(f"no facet statement reads the filter(s) {', '.join(names)}")
        self.names = names


@dataclass(frozen=True, slots=True)
class Counted:
    """What a facet statement returns: combinations' counts and the two ranked facets."""

    combos: list[list[int]]
    networks: list[list[Any]]
    stations: list[list[Any]]


def facet_statement(
    filters: dict[str, Any],
    names: list[str],
    size: int,
    with_counts: bool = True,
    search_facets: bool = True,
) -> tuple[str, dict[str, Any]]:
    """The statement (SQL file name) counting these facets for these filters, and its
    parameters; with_counts false: the one for a graph without facet counts; search_facets
    false: the one for a graph whose origin_search has only the search keys. A filter no
    facet statement reads raises UnknownFilter: counting the whole graph (or a wider
    listing) for it would answer wrongly without an error."""
    unknown = sorted(set(filters) - set(FILTERS_READ))
    if unknown:
        raise UnknownFilter(unknown)
    params = filter_params(filters)
    params |= {
        "key": flag_key(filters),
        "networks": "network_id" in names,
        "stations": "station_id" in names,
        # One value past the cut says whether there are more.
        "size": size + 1,
    }
    if params["pattern"] is not None and params["ids"] is None:
        return (_OF_SEARCH if search_facets else _OF_SEARCH_ROWS), params
    if params["ids"] is not None or not with_counts:
        return _OF_ROWS, params
    if params["network_id"] is not None:
        if params["station"] is None and params["combos"] is None:
            return _OF_NETWORK, params
        return _OF_NETWORK_NARROWED, params
    if params["station"] is not None:
        return (_OF_STATION if params["combos"] is None else _BY_STATION), params
    if params["combos"] is not None:
        return _BY_FLAGS, params
    return _OF_ALL, params


def flag_key(filters: dict[str, Any]) -> str:
    """The flag filters' values as network_facet_tops keys them (load/build_filter_counts.sql):
    each value or '' when not given, in FLAG_FILTERS order, joined by '|'."""
    values = []
    for name in FLAG_FILTERS:
        value = filters.get(name)
        if isinstance(value, bool):
            value = "true" if value else "false"
        values.append("" if value is None else value)
    return "|".join(values)


def facet_key_combos() -> dict[str, list[int]]:
    """Every combination of flag filter values (each value, or not given) by its flag_key,
    with the flag combinations it admits, as matching_combos gives them to the listing: the
    load ranks the network_id and station_id facets per key from these
    (load/create_facet_key_combos.sql), so that the load and the listing cannot disagree."""
    keys = {}
    choices = [(None, *FLAG_FILTER_VALUES[name]) for name in FLAG_FILTERS]
    for values in itertools.product(*choices):
        given = zip(FLAG_FILTERS, values, strict=True)
        filters = {name: value for name, value in given if value is not None}
        combos = matching_combos(filters)
        keys[flag_key(filters)] = list(ALL_COMBOS) if combos is None else combos
    return keys


def _has_counts(conn: psycopg.Connection, schema: str, generation: int) -> tuple[bool, bool]:
    """Whether generation (read in schema) was loaded with the facet counts, and with the
    search facets' columns in origin_search."""
    info = conn.info
    key = (info.host, info.port, info.dbname, generation)
    known = _HAS_COUNTS.get(key)
    if known is not None:
        return known
    row = one_row(conn, graph_statement(_EXIST, schema), {"schema": schema})
    # Kept under the generation the schema held when asked (a load may have renamed it since
    # the caller's statement): the answer is that generation's for as long as it is kept.
    if len(_HAS_COUNTS) >= _HAS_COUNTS_KEPT:
        _HAS_COUNTS.clear()
    layout = (bool(row["present"]), bool(row["search_facets"]))
    _HAS_COUNTS[(*key[:3], int(row["generation"]))] = layout
    return layout


def count_facets(
    conn: psycopg.Connection,
    filters: dict[str, Any],
    names: list[str],
    size: int,
    seen: Stamp,
    schema: str = LIVE_SCHEMA,
) -> tuple[Stamp, Facets]:
    """(stamp, facets) of the named facets over the origins the filters match, read in
    schema, whose graph the caller's page came from (seen): the caller checks that the stamp
    is still that one. A search's facets, counted from its matches, are remembered for the
    search's other pages in that generation (it never changes)."""
    with_counts, search_facets = _has_counts(conn, schema, seen.generation)
    name, params = facet_statement(filters, names, size, with_counts, search_facets)
    info = conn.info
    key = (info.host, info.port, info.dbname, seen, name, repr(sorted(params.items())), *names)
    searched = name in (_OF_SEARCH, _OF_SEARCH_ROWS)
    if searched and (remembered := _SEARCH_FACETS.get(key)) is not None:
        return seen, remembered
    row = one_row(conn, graph_statement(name, schema), params)
    if name == _BY_FLAGS and not row["known"]:
        # Flag filters this generation did not rank networks for: count its rows.
        name, params = facet_statement(filters, names, size, with_counts=False)
        row = one_row(conn, graph_statement(name, schema), params)
    counted = Counted(row["combos"] or [], row["networks"] or [], row["stations"] or [])
    stamp, facets = row_stamp(row), build_facets(counted, names, size)
    if searched and stamp == seen:
        if len(_SEARCH_FACETS) >= _SEARCH_FACETS_KEPT:
            _SEARCH_FACETS.clear()
        _SEARCH_FACETS[key] = facets
    return stamp, facets


def build_facets(counted: Counted, names: list[str], size: int) -> Facets:
    """The `facets` member: one entry per name, in the order asked."""
    return {name: _facet(name, counted, size) for name in names}


def _facet(name: str, counted: Counted, size: int) -> dict[str, Any]:
    """One facet's values and whether more values were left out."""
    if name == "network_id":
        values = [
            {"value": network_id, "name": network_name, "count": int(n)}
            for network_id, network_name, n in counted.networks[:size]
        ]
        return {"values": values, "truncated": len(counted.networks) > size}
    if name == "station_id":
        values = [{"value": station, "count": int(n)} for station, n in counted.stations[:size]]
        return {"values": values, "truncated": len(counted.stations) > size}
    sums = [(combo, int(n)) for combo, n in counted.combos]
    return {"values": _flag_values(name, sums), "truncated": False}


def _flag_values(name: str, sums: list[tuple[int, int]]) -> list[dict[str, Any]]:
    """Every value of a flag facet, in the documented order, summed over the combinations."""

    def total(test: Any) -> int:
        return sum(n for combo, n in sums if test(combo))

    counts: dict[Any, int]
    if name == "governance_state":
        counts = {
            "governed": total(lambda combo: combo & GOVERNED),
            "ungoverned": total(lambda combo: not combo & GOVERNED),
        }
    elif name == "allocation_state":
        counts = {
            "allocated": total(lambda combo: combo & ALLOCATED),
            "unallocated": total(lambda combo: not combo & ALLOCATED),
        }
    elif name == "publication_status":
        counts = {
            "published": total(lambda combo: combo & PUBLISHED),
            "held": total(lambda combo: combo & HELD),
            None: total(lambda combo: not combo & (PUBLISHED | HELD)),
        }
    elif name == "transport":
        counts = {
            transport: total(lambda combo, bit=bit: combo & (bit << TRANSPORT_SHIFT))
            for transport, bit in TRANSPORT_BITS.items()
        }
    elif name == "has_presentations":
        counts = {
            True: total(lambda combo: combo >> TRANSPORT_SHIFT),
            False: total(lambda combo: not combo >> TRANSPORT_SHIFT),
        }
    else:
        raise ValueError(f"no facet named {name!r}")
    return [{"value": value, "count": count} for value, count in counts.items()]
