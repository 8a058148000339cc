"""Hypothesis strategies: valid graph documents (docs/loading.md, The graph document) and listing
queries (docs/api.md, Listing origins).

Documents are small but crowded: names and registry ids come from a tiny alphabet (case
pairs, letters whose folding is special, `%`, `_`, `\\`) so that search terms collide;
addresses come from a few numbers so that origins share network and station and numeric
order differs from text order; ids mix cases and scripts so that collation matters.
"""

from __future__ import annotations

import math
import os
from datetime import datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from tests.properties.model import FACET_NAMES, ORIGIN_PREFIX, TRANSPORTS, Record

INT32_MAX = 2_147_483_647
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
MAX_ORIGINS = 40

# Shared by every property test: no example database (CI starts clean every time), no
# deadline (a load is a few DDL statements), and fixtures that live across examples on purpose.
PROPERTY_SETTINGS = settings(
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# The share of each property's examples a run draws: 1 (all) unless
# REGISTRY_PROPERTY_EXAMPLES_SHARE says less. CI's second run (make test-db, on the machine's
# PostgreSQL 15) draws a quarter: it checks every property on a second server, on fresh
# examples each run, while the first run (make test) draws them all; the second run's property
# tests were about 290 of its 860 process seconds when they drew them all, on a run that must
# share two cores with make test (docs/ci.md).
EXAMPLES_SHARE = "REGISTRY_PROPERTY_EXAMPLES_SHARE"


def examples(count: int) -> int:
    """count, scaled by REGISTRY_PROPERTY_EXAMPLES_SHARE (0 < share <= 1), never below 1."""
    raw = os.environ.get(EXAMPLES_SHARE, "1")
    try:
        share = float(raw)
    except ValueError:
        share = math.nan
    if not 0 < share <= 1:
        raise ValueError(f"{EXAMPLES_SHARE}={raw!r}: give a share above 0 and at most 1")
    return max(1, round(count * share))


# Case pairs; letters whose case folding is not one-to-one: sharp s and capital sharp s
# (fold to "ss"), long s and the Kelvin sign (fold onto ASCII s and k), Greek sigma with its
# final form, Cyrillic ka (looks like k, is not), dotted capital I and dotless i; a decomposed
# é beside the composed one; LIKE's wildcards and escape; a space and digits.
NAME_LETTERS = (
    "a", "A", "s", "S", "\u017f", "ß", "ẞ", "é", "É", "e\u0301", "\u03c3", "Σ", "\u03c2",
    "\u043a", "\u041a", "i", "I", "\u0130", "\u0131", "k", "\u212a", "%", "_", "\\", " ",
    "1", "0",
)  # fmt: skip
# Ids whose code-point order differs from any linguistic collation's.
ID_LETTERS = ("a", "A", "b", "B", "Z", "é", "É", "ä", "_", "-", ".", "1", "9", "/", "%")
GOVERNORS = ("svc:domain:harbour", "svc:domain:regulator", "svc:domain:nord", "gouverneur-é")
# A few address numbers, so that origins share network and station, and 9 < 10 < 100
# as numbers but not as text.
ADDRESS_NETWORKS = (0, 1, 2, 9, 10, 100, INT32_MAX)
ADDRESS_STATIONS = (0, 1, 2, 9, 10, 100, INT32_MAX)
ADDRESS_CHANNELS = (0, 1, 3, 10, INT32_MAX)
LIMITS = st.one_of(st.integers(1, 3), st.integers(1, 200))


def words(letters: tuple[str, ...], min_size: int = 0, max_size: int = 6) -> st.SearchStrategy[str]:
    """Short strings made of the given letters."""
    return st.lists(st.sampled_from(letters), min_size=min_size, max_size=max_size).map("".join)


def optional(strategy: st.SearchStrategy[Any], value_odds: int = 1) -> st.SearchStrategy[Any]:
    """The strategy's values, or null about once in value_odds + 1 draws."""
    return st.integers(0, value_odds).flatmap(lambda n: strategy if n else st.none())


@st.composite
def rfc3339_date_times(draw: st.DrawFn) -> str:
    """An RFC 3339 date-time in any offset, t/T, z/Z, with 0-9 fraction digits."""
    # The UTC instant stays a day away from year 1 and year 9999, so that both the local
    # form and UTC have four-digit years (see the report on held_at near the year edges).
    instant = draw(
        st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30, 23, 59, 59))
    ).replace(microsecond=0)
    zone = draw(st.sampled_from(("Z", "z", "+00:00", "-00:00", "offset")))
    minutes = draw(st.integers(-(23 * 60 + 59), 23 * 60 + 59)) if zone == "offset" else 0
    if zone == "offset":
        sign = "-" if minutes < 0 else "+"
        zone = f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    local = instant + timedelta(minutes=minutes)
    fraction = draw(st.text("0123456789", max_size=9))
    separator = draw(st.sampled_from("Tt"))
    return (
        f"{local.year:04d}-{local.month:02d}-{local.day:02d}{separator}"
        f"{local.hour:02d}:{local.minute:02d}:{local.second:02d}"
        + (f".{fraction}" if fraction else "")
        + zone
    )


@st.composite
def origin_ids(draw: st.DrawFn) -> str:
    """svc:origin:<uuid>, the uuid usually in lower case and sometimes in upper case."""
    uuid = str(draw(st.uuids()))
    return ORIGIN_PREFIX + (uuid.upper() if draw(st.integers(0, 3)) == 0 else uuid)


def network_ids() -> st.SearchStrategy[str]:
    """A network id: by convention svc:network:<uuid>, but any non-empty string will do."""
    return st.one_of(st.uuids().map(lambda uuid: f"svc:network:{uuid}"), words(ID_LETTERS, 1, 4))


@st.composite
def allocation_records(draw: st.DrawFn, origin_id: str, address: tuple[int, int, int]) -> Record:
    """One allocation of an address; held_at iff held, held_reason null or absent unless held."""
    network, station, channel = address
    status = draw(st.sampled_from((None, "published", "held")))
    record: Record = {
        "type": "allocation",
        "origin_id": origin_id,
        "network": network,
        "station": station,
        "channel": channel,
        "publication_status": status,
        "held_at": draw(rfc3339_date_times()) if status == "held" else None,
    }
    # held_reason is the one optional field: absent, null or a reason (shown only when held).
    reason = draw(st.sampled_from(("absent", "null", "text")))
    if reason == "null":
        record["held_reason"] = None
    elif reason == "text":
        record["held_reason"] = draw(words(NAME_LETTERS, 0, 8))
    return record


@st.composite
def carriage_records(
    draw: st.DrawFn, carriage_id: str, origin_ids_: list[str], classified: list[str]
) -> Record:
    """One carriage: naming an origin only with a transport, its transport in the catalog."""
    named = origin_ids_ and classified and draw(st.integers(0, 3)) > 0
    origin_id = draw(st.sampled_from(origin_ids_)) if named else None
    if origin_id is not None:
        transport = draw(st.sampled_from(classified))
    else:
        transport = draw(optional(st.sampled_from(classified))) if classified else None
    return {
        "type": "carriage",
        "id": carriage_id,
        "transport": transport,
        "provider": draw(optional(words(NAME_LETTERS, 0, 4))),
        "source": draw(optional(st.sampled_from(("lineup", "epg", "")))),
        "availability": draw(optional(st.sampled_from(("reachable", "unreachable", "Ω")))),
        "origin_id": origin_id,
    }


def feed_records() -> st.SearchStrategy[Record]:
    """The broadcast-feed record: connected and each count null or any 64-bit integer."""
    count = optional(st.one_of(st.integers(0, 5000), st.integers(INT64_MIN, INT64_MAX)))
    return st.fixed_dictionaries(
        {
            "type": st.just("feed"),
            "connected": st.booleans(),
            **{
                name: count
                for name in (
                    "networks",
                    "iptv_networks",
                    "ovp_networks",
                    "channels",
                    "programs",
                    "reviews",
                    "pending_reviews",
                )
            },
        }
    )


@st.composite
def graph_documents(draw: st.DrawFn, max_origins: int = MAX_ORIGINS) -> list[Record]:
    """A valid graph document as a list of records, in any order, possibly empty."""
    records: list[Record] = []
    count = draw(st.integers(0, 4))
    networks = draw(st.lists(network_ids(), unique=True, min_size=count, max_size=count))
    records += [
        {"type": "network", "id": network_id, "name": draw(optional(words(NAME_LETTERS, 0, 5)))}
        for network_id in networks
    ]
    # Unique as uuids, whatever their case.
    # Sizes drawn explicitly: plain lists stay short, and crowded graphs are the point.
    size = draw(st.one_of(st.integers(0, 6), st.integers(0, max_origins)))
    origins = draw(
        st.lists(origin_ids(), unique_by=lambda oid: oid.lower(), min_size=size, max_size=size)
    )
    for origin_id in origins:
        records.append(
            {
                "type": "origin",
                "id": origin_id,
                "name": draw(words(NAME_LETTERS, 0, 6)),
                "network_id": (
                    draw(optional(st.sampled_from(networks), value_odds=3)) if networks else None
                ),
                "registry_id": draw(optional(words(NAME_LETTERS, 0, 3))),
                "reviewed": draw(st.booleans()),
            }
        )
        for _ in range(draw(st.integers(0, 3))):
            records.append(
                {
                    "type": "governance_edge",
                    "origin_id": origin_id,
                    "governor_id": draw(st.sampled_from(GOVERNORS)),
                    "active": draw(st.booleans()),
                }
            )
    allocated = [origin_id for origin_id in origins if draw(st.booleans())]
    addresses = draw(
        st.lists(
            st.tuples(
                st.sampled_from(ADDRESS_NETWORKS),
                st.sampled_from(ADDRESS_STATIONS),
                st.sampled_from(ADDRESS_CHANNELS),
            ),
            unique=True,
            min_size=len(allocated),
            max_size=len(allocated),
        )
    )
    records += [
        draw(allocation_records(origin_id, address))
        for origin_id, address in zip(allocated, addresses, strict=True)
    ]
    if draw(st.integers(0, 3)) > 0:
        classified = draw(
            st.one_of(
                st.permutations(TRANSPORTS), st.lists(st.sampled_from(TRANSPORTS), unique=True)
            )
        )
        records.append({"type": "catalog", "transports": classified})
        count = draw(st.integers(0, 25))
        carriage_ids = draw(
            st.lists(words(ID_LETTERS, 1, 4), unique=True, min_size=count, max_size=count)
        )
        records += [
            draw(carriage_records(carriage_id, origins, classified)) for carriage_id in carriage_ids
        ]
    if draw(st.booleans()):
        records.append(draw(feed_records()))
    return draw(st.permutations(records))


@st.composite
def search_terms(draw: st.DrawFn, records: list[Record]) -> str:
    """A non-empty search term: a piece of some name or registry id, case changed, or noise."""
    texts = [
        text
        for record in records
        if record["type"] == "origin"
        for text in (record["name"], record["registry_id"])
        if text
    ]
    if texts and draw(st.integers(0, 3)) > 0:
        text = draw(st.sampled_from(texts))
        start = draw(st.integers(0, len(text) - 1))
        end = draw(st.integers(start + 1, len(text)))
        change = draw(st.sampled_from((str, str.upper, str.lower, str.swapcase, str.casefold)))
        term = change(text[start:end])
        if term:
            return term
    return draw(words(NAME_LETTERS, 1, 3))


@st.composite
def id_lists(draw: st.DrawFn, records: list[Record]) -> str:
    """An `id` value: ids of the graph's origins and unknown ones, prefixed or bare, in any
    case, some twice."""
    known = [record["id"] for record in records if record["type"] == "origin"]
    some_id = st.one_of(st.sampled_from(known), origin_ids()) if known else origin_ids()
    ids = draw(st.lists(some_id, min_size=1, max_size=6))
    if draw(st.booleans()):
        # The same id again, its uuid in the other case: still the same origin.
        ids.append(
            ORIGIN_PREFIX + draw(st.sampled_from(ids)).removeprefix(ORIGIN_PREFIX).swapcase()
        )
    return ",".join(
        origin_id.removeprefix(ORIGIN_PREFIX) if draw(st.booleans()) else origin_id
        for origin_id in ids
    )


@st.composite
def listing_filters(draw: st.DrawFn, records: list[Record]) -> dict[str, str]:
    """A combination of filters as query-string values (absent, matching or not)."""
    network_choices = [record["id"] for record in records if record["type"] == "network"]
    stations = [record["station"] for record in records if record["type"] == "allocation"]
    options: dict[str, st.SearchStrategy[str]] = {
        "governance_state": st.sampled_from(("governed", "ungoverned")),
        "allocation_state": st.sampled_from(("allocated", "unallocated")),
        "publication_status": st.sampled_from(("published", "held")),
        "transport": st.sampled_from(TRANSPORTS),
        "has_presentations": st.sampled_from(("true", "false")),
        # Mostly values the graph holds, so that the filter selects something.
        "network_id": (
            st.one_of(
                st.sampled_from(network_choices), st.sampled_from(network_choices), network_ids()
            )
            if network_choices
            else network_ids()
        ),
        "station_id": (
            st.one_of(
                st.sampled_from(stations), st.sampled_from(stations), st.integers(0, INT32_MAX)
            )
            if stations
            else st.integers(0, INT32_MAX)
        ).map(str),
        "search": search_terms(records),
        "id": id_lists(records),
    }
    # At most three filters: ANDing more of them over a small graph almost never matches.
    count = draw(st.integers(0, 3))
    names = draw(
        st.lists(st.sampled_from(sorted(options)), unique=True, min_size=count, max_size=count)
    )
    return {name: draw(options[name]) for name in names}


@st.composite
def listing_cases(draw: st.DrawFn) -> tuple[list[Record], list[tuple[dict[str, str], int]]]:
    """A graph document and a few (filters, limit) listings to sweep over it."""
    records = draw(graph_documents())
    queries = draw(st.lists(st.tuples(listing_filters(records), LIMITS), min_size=1, max_size=4))
    return records, queries


@st.composite
def facet_queries(draw: st.DrawFn) -> dict[str, str]:
    """facet (some names, any order) and sometimes facet_size, small so that it cuts."""
    names = draw(st.lists(st.sampled_from(FACET_NAMES), unique=True, min_size=1, max_size=7))
    query = {"facet": ",".join(names)}
    if draw(st.integers(0, 2)):
        # Mostly small, so that a crowded graph's networks and stations overflow it.
        query["facet_size"] = str(draw(st.one_of(st.integers(1, 2), st.integers(1, 100))))
    return query


@st.composite
def faceted_listing_cases(
    draw: st.DrawFn,
) -> tuple[list[Record], list[tuple[dict[str, str], int]]]:
    """listing_cases, most queries asking for facets too (every page of a sweep the same)."""
    records, queries = draw(listing_cases())
    faceted = [
        ({**query, **draw(facet_queries())} if draw(st.integers(0, 3)) else query, limit)
        for query, limit in queries
    ]
    return records, faceted
