"""The four rankings sql/load/build_filter_counts.sql keeps for the network_id and station_id
facets, every row, against one oracle computed from the graph document alone: the
plain-Python model of the listing (tests/properties/model.py), which ranks a facet over the
origins a listing's filters match, by count descending, then value ascending (network ids in
code-point order, stations as numbers), null last (docs/api.md, "Facets and many ids in one
request"). Each table keeps the first 101 values of a listing's facet, rank 1 first:

- network_facet_tops and station_facet_tops: per set of flag filter values. facet_keys maps
  each key (the five flag filters' values, or '' for one not given, joined by '|') to its
  set, and every key's listing must rank as its set's rows say;
- network_station_tops: the station_id facet of each network's listing;
- station_network_tops: the network_id facet of each station's listing.

On the wide graph of tests/api/facet_graphs.py, where the whole graph, the big network and
the big station each rank more than 101 values, tied across the cut.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from tests.api.facet_graphs import BIG_NETWORK, BIG_STATION, wide_graph
from tests.conftest import load_records
from tests.properties.model import RegistryModel, parse_filters

KEPT = 101
# Every value of each flag filter (docs/api.md), in the order a key joins them.
FLAG_VALUES = (
    ("governance_state", ("governed", "ungoverned")),
    ("allocation_state", ("allocated", "unallocated")),
    ("publication_status", ("published", "held")),
    ("transport", ("iptv", "ovp", "ota", "fast")),
    ("has_presentations", ("true", "false")),
)

Ranking = list[tuple[Any, int, int]]


def every_key() -> dict[str, dict[str, Any]]:
    """Every combination of flag filter values (each value, or not given) by its key, with
    the filters it stands for, parsed as the model takes them."""
    keys = {}
    for values in itertools.product(*[(None, *choices) for _, choices in FLAG_VALUES]):
        given = zip((name for name, _ in FLAG_VALUES), values, strict=True)
        key = "|".join("" if value is None else value for value in values)
        keys[key] = parse_filters({name: value for name, value in given if value is not None})
    return keys


def ranked(model: RegistryModel, filters: dict[str, Any], name: str, size: int) -> Ranking:
    """(value, count, rank) of the first size values of the model's facet under filters."""
    facet = model.facets(filters, [name], size)[name]
    return [(value["value"], value["count"], rank) for rank, value in enumerate(facet["values"], 1)]


def stored(conn: psycopg.Connection, table: str, group: str, value: str) -> dict[Any, Ranking]:
    """A ranking table's rows, as (value, n, rank) in rank order per group."""
    rows = conn.execute(
        f"SELECT {group}, {value}, n, rank FROM graph.{table} ORDER BY {group}, rank"
    ).fetchall()
    grouped: dict[Any, Ranking] = {}
    for key, item, n, rank in rows:
        grouped.setdefault(key, []).append((item, n, rank))
    return grouped


def assert_cut_in_a_tie(model: RegistryModel, filters: dict[str, Any], name: str) -> None:
    """The facet has more values than a ranking keeps, and ranks 101 and 102 tie, so the cut
    and the tie-break decide what is kept."""
    whole = ranked(model, filters, name, 10**6)
    assert len(whole) > KEPT + 1, (filters, name)
    assert whole[KEPT - 1][1] == whole[KEPT][1], (filters, name)


@pytest.mark.parametrize(
    "variant",
    [
        pytest.param(0, id="wide"),
        pytest.param(1, id="variant"),
    ],
)
def test_every_stored_ranking_row_is_the_models(
    database_factory: Callable[[], str], variant: int
) -> None:
    """network_facet_tops and station_facet_tops for every key of flag filter values,
    network_station_tops for every network and station_network_tops for every station hold
    exactly the first 101 values of the facet the model ranks from the document."""
    records = wide_graph(variant).records
    model = RegistryModel(records)
    if variant == 0:
        assert_cut_in_a_tie(model, {}, "network_id")
        assert_cut_in_a_tie(model, {}, "station_id")
        assert_cut_in_a_tie(model, {"network_id": BIG_NETWORK}, "station_id")
        assert_cut_in_a_tie(model, {"station_id": BIG_STATION}, "network_id")
    else:
        # Exactly as many networks as a ranking keeps, one station fewer.
        assert len(ranked(model, {}, "network_id", 10**6)) == KEPT
        assert len(ranked(model, {}, "station_id", 10**6)) == KEPT - 1
    conninfo = database_factory()
    load_records(conninfo, records)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        sets = dict(conn.execute("SELECT key, set FROM graph.facet_keys").fetchall())
        network_tops = stored(conn, "network_facet_tops", "set", "network_id")
        station_tops = stored(conn, "station_facet_tops", "set", "station")
        per_network = stored(conn, "network_station_tops", "network_id", "station")
        per_station = stored(conn, "station_network_tops", "station", "network_id")

    keys = every_key()
    assert sorted(sets) == sorted(keys)
    assert set(network_tops) <= set(sets.values()) and set(station_tops) <= set(sets.values())
    for key, filters in keys.items():
        assert network_tops.get(sets[key], []) == ranked(model, filters, "network_id", KEPT), key
        assert station_tops.get(sets[key], []) == ranked(model, filters, "station_id", KEPT), key

    networks = {record["origin"]["network"]["id"] for record in model.ordered} - {None}
    assert sorted(per_network) == sorted(networks)
    for network in networks:
        expected = ranked(model, {"network_id": network}, "station_id", KEPT)
        assert per_network[network] == expected, network
    stations = {record["bans"]["station"] for record in model.ordered} - {None}
    assert sorted(per_station) == sorted(stations)
    for place in stations:
        expected = ranked(model, {"station_id": place}, "network_id", KEPT)
        assert per_station[place] == expected, place
