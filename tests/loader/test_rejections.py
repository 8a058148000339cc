"""Every rule of docs/loading.md, The graph document rejects a document that breaks it, naming the
line and field, and the rejected load leaves the graph that was served before exactly as it was."""

from __future__ import annotations

from typing import Any

import orjson
import psycopg
import pytest

from registry.database import repository
from registry.loader.loading import LoadRejected

from .conftest import ServedGraph
from .graphs import (
    APPENDED,
    BASE,
    DROP,
    HELD_LINE,
    LINE,
    NETWORK_ID,
    ORIGIN_ID,
    OTHER_ORIGIN_ID,
    UNKNOWN_ORIGIN_ID,
    Record,
    appended,
    base_with,
    document,
    edited,
    graph_state,
    inserted,
    load,
)

ORIGIN_UUID = ORIGIN_ID.removeprefix("svc:origin:")
ORIGIN = LINE["origin"]
ALLOCATION = LINE["allocation"]
CARRIAGE = LINE["carriage"]
CATALOG = LINE["catalog"]
FEED = LINE["feed"]
NETWORK = LINE["network"]
EDGE = LINE["governance_edge"]


def case(case_id: str, payload: bytes, line: int, field: str, fragment: str) -> Any:
    """One row of the table: the document, then where and what the first problem is."""
    return pytest.param(payload, line, field, fragment, id=case_id)


def new_origin(origin_id: str, name: str = "Gamma") -> Record:
    """A valid origin record with no network."""
    return {
        "type": "origin",
        "id": origin_id,
        "name": name,
        "network_id": None,
        "registry_id": None,
        "reviewed": True,
    }


def new_allocation(origin_id: str, network: int, station: int, channel: int) -> Record:
    """A valid published allocation."""
    return {
        "type": "allocation",
        "origin_id": origin_id,
        "network": network,
        "station": station,
        "channel": channel,
        "publication_status": "published",
        "held_at": None,
        "held_reason": None,
    }


def new_carriage(carriage_id: str, origin_id: str | None = None) -> Record:
    """A valid iptv carriage."""
    return {
        "type": "carriage",
        "id": carriage_id,
        "transport": "iptv",
        "provider": None,
        "source": None,
        "availability": None,
        "origin_id": origin_id,
    }


# The tables below keep one case per row or two, so the formatter is off until CASES.
# fmt: off

# Every required field of every type, written out from docs/loading.md, The graph document (all but
# held_reason) rather than taken from the loader's own tables.
REQUIRED_FIELDS = {
    "network": ("id", "name"),
    "origin": ("id", "name", "network_id", "registry_id", "reviewed"),
    "governance_edge": ("origin_id", "governor_id", "active"),
    "allocation": (
        "origin_id", "network", "station", "channel", "publication_status", "held_at",
    ),
    "carriage": ("id", "transport", "provider", "source", "availability", "origin_id"),
    "catalog": ("transports",),
    "feed": (
        "connected", "networks", "iptv_networks", "ovp_networks", "channels", "programs",
        "reviews", "pending_reviews",
    ),
}

SYNTAX_CASES = [
    case("invalid-json-truncated", base_with(ORIGIN, b'{"type": "origin", "id": '),
         ORIGIN, "record", "invalid JSON"),
    case("invalid-json-trailing-comma", base_with(NETWORK, b'{"type": "network", "id": "n",}'),
         NETWORK, "record", "invalid JSON"),
    case("invalid-json-single-quotes", base_with(NETWORK, b"{'type': 'network'}"),
         NETWORK, "record", "invalid JSON"),
    case("invalid-utf8", base_with(NETWORK, b'{"type": "network", "id": "n", "name": "\xff"}'),
         NETWORK, "record", "invalid JSON"),
    case("not-an-object-array", base_with(ORIGIN, b'["origin", 1]'), ORIGIN, "record",
         "JSON object"),
    case("not-an-object-string", base_with(ORIGIN, b'"origin"'), ORIGIN, "record",
         "JSON object"),
    case("not-an-object-number", base_with(ORIGIN, b"42"), ORIGIN, "record", "JSON object"),
    case("not-an-object-null", base_with(ORIGIN, b"null"), ORIGIN, "record", "JSON object"),
    case("empty-line-in-the-middle", inserted(5, b""), 5, "record", "empty line"),
    case("blank-line-in-the-middle", inserted(5, b"  \t "), 5, "record", "empty line"),
    case("missing-type", edited(ORIGIN, type=DROP), ORIGIN, "type", "is required"),
    case("unknown-type", edited(ORIGIN, type="person"), ORIGIN, "type", "unknown record type"),
    case("type-in-the-wrong-case", edited(ORIGIN, type="Origin"), ORIGIN, "type",
         "unknown record type"),
    case("type-not-a-string", edited(ORIGIN, type=4), ORIGIN, "type", "unknown record type"),
]

UNKNOWN_FIELD_CASES = [
    case(f"unknown-field-{kind}", edited(line, colour="red"), line, "colour", "unknown field")
    for kind, line in LINE.items()
] + [
    # held_reason is the one optional field: an unknown field must not pass in its place
    case("unknown-field-allocation-without-held-reason",
         edited(ALLOCATION, held_reason=DROP, colour="red"), ALLOCATION, "colour",
         "unknown field"),
]

MISSING_FIELD_CASES = [
    case(f"missing-{kind}-{name}", edited(LINE[kind], **{name: DROP}), LINE[kind], name,
         "is required")
    for kind, names in REQUIRED_FIELDS.items()
    for name in names
] + [
    case("missing-held-allocation-held_at", edited(HELD_LINE, held_at=DROP), HELD_LINE,
         "held_at", "is required"),
]

# null only where the graph document allows it
NULL_CASES = [
    case(f"null-{kind}-{name}", edited(LINE[kind], **{name: None}), LINE[kind], name, "null")
    for kind, name in [
        ("network", "id"), ("origin", "id"), ("origin", "name"), ("origin", "reviewed"),
        ("governance_edge", "origin_id"), ("governance_edge", "governor_id"),
        ("governance_edge", "active"), ("allocation", "origin_id"), ("allocation", "network"),
        ("allocation", "station"), ("allocation", "channel"), ("carriage", "id"),
        ("catalog", "transports"), ("feed", "connected"),
    ]
]

WRONG_TYPE_CASES = [
    case("string-for-boolean-reviewed", edited(ORIGIN, reviewed="true"), ORIGIN, "reviewed",
         "true or false"),
    case("number-for-boolean-active", edited(EDGE, active=1), EDGE, "active", "true or false"),
    case("string-for-boolean-connected", edited(FEED, connected="yes"), FEED, "connected",
         "true or false"),
    case("float-for-integer-network", edited(ALLOCATION, network=1.0), ALLOCATION, "network",
         "integer"),
    case("float-for-integer-station", edited(ALLOCATION, station=2.5), ALLOCATION, "station",
         "integer"),
    case("boolean-for-integer-channel", edited(ALLOCATION, channel=True), ALLOCATION, "channel",
         "integer"),
    case("string-for-integer-channel", edited(ALLOCATION, channel="3"), ALLOCATION, "channel",
         "integer"),
    case("float-for-integer-feed-programs", edited(FEED, programs=10.5), FEED, "programs",
         "integer"),
    case("boolean-for-integer-feed-networks", edited(FEED, networks=False), FEED, "networks",
         "integer"),
    case("string-for-integer-feed-channels", edited(FEED, channels="2"), FEED, "channels",
         "integer"),
    case("number-for-string-origin-name", edited(ORIGIN, name=5), ORIGIN, "name", "string"),
    case("object-for-string-origin-name", edited(ORIGIN, name={"en": "Alpha"}), ORIGIN, "name",
         "string"),
    case("number-for-string-registry_id", edited(ORIGIN, registry_id=7), ORIGIN, "registry_id",
         "string"),
    case("number-for-string-network-name", edited(NETWORK, name=5), NETWORK, "name", "string"),
    case("number-for-string-network_id", edited(ORIGIN, network_id=5), ORIGIN, "network_id",
         "string"),
    case("number-for-string-governor_id", edited(EDGE, governor_id=3), EDGE, "governor_id",
         "string"),
    case("number-for-string-carriage-id", edited(CARRIAGE, id=9), CARRIAGE, "id", "string"),
    case("number-for-string-provider", edited(CARRIAGE, provider=1), CARRIAGE, "provider",
         "string"),
    case("array-for-string-source", edited(CARRIAGE, source=["lineup"]), CARRIAGE, "source",
         "string"),
    case("number-for-string-availability", edited(CARRIAGE, availability=0), CARRIAGE,
         "availability", "string"),
    case("number-for-string-held_reason", edited(HELD_LINE, held_reason=5), HELD_LINE,
         "held_reason", "string"),
    case("number-for-date-time-held_at", edited(HELD_LINE, held_at=1767323045), HELD_LINE,
         "held_at", "string"),
    case("number-for-origin-id", edited(ORIGIN, id=1), ORIGIN, "id", "string"),
    case("number-for-transport", edited(CARRIAGE, transport=1), CARRIAGE, "transport",
         "one of"),
    case("string-for-catalog-transports", edited(CATALOG, transports="iptv"), CATALOG,
         "transports", "array"),
    case("object-for-catalog-transports", edited(CATALOG, transports={"iptv": True}), CATALOG,
         "transports", "array"),
    case("array-for-catalog-transports-entry", edited(CATALOG, transports=[["iptv"], "ovp"]),
         CATALOG, "transports", '["iptv"]'),
    case("number-for-catalog-transports-entry", edited(CATALOG, transports=["iptv", 2]),
         CATALOG, "transports", "2"),
    case("null-for-catalog-transports-entry", edited(CATALOG, transports=["iptv", None]),
         CATALOG, "transports", "null"),
]

NUL_CASES = [
    case(f"nul-in-{kind}-{name}", edited(line, **{name: "a\u0000b"}), line, name, "NUL")
    for kind, line, name in [
        ("network", NETWORK, "id"), ("network", NETWORK, "name"), ("origin", ORIGIN, "name"),
        ("origin", ORIGIN, "registry_id"), ("governance_edge", EDGE, "governor_id"),
        ("allocation", HELD_LINE, "held_reason"), ("carriage", CARRIAGE, "id"),
        ("carriage", CARRIAGE, "provider"),
    ]
]

ID_CASES = [
    case("empty-network-id", edited(NETWORK, id=""), NETWORK, "id", "empty"),
    case("empty-carriage-id", edited(CARRIAGE, id=""), CARRIAGE, "id", "empty"),
    case("empty-governor-id", edited(EDGE, governor_id=""), EDGE, "governor_id", "empty"),
    case("empty-origin-id", edited(ORIGIN, id=""), ORIGIN, "id", "svc:origin:<uuid>"),
    case("empty-network_id-reference", edited(ORIGIN, network_id=""), ORIGIN, "network_id",
         "empty"),
] + [
    case(f"malformed-origin-id-{label}", edited(ORIGIN, id=value), ORIGIN, "id",
         "svc:origin:<uuid>")
    for label, value in [
        ("bare-uuid", ORIGIN_UUID),
        ("network-prefix", f"svc:network:{ORIGIN_UUID}"),
        ("not-a-uuid", "svc:origin:alpha"),
        ("no-hyphens", "svc:origin:" + ORIGIN_UUID.replace("-", "")),
        ("braces", "svc:origin:{" + ORIGIN_UUID + "}"),
        ("non-hex-digit", "svc:origin:" + ORIGIN_UUID[:-1] + "g"),
        ("too-short", "svc:origin:" + ORIGIN_UUID[:-1]),
        ("too-long", "svc:origin:" + ORIGIN_UUID + "0"),
        ("trailing-space", f"{ORIGIN_ID} "),
        ("trailing-newline", f"{ORIGIN_ID}\n"),
        ("leading-space", f" {ORIGIN_ID}"),
    ]
] + [
    case(f"malformed-origin-reference-{kind}", edited(line, origin_id="svc:origin:alpha"), line,
         "origin_id", "svc:origin:<uuid>")
    for kind, line in [("governance_edge", EDGE), ("allocation", ALLOCATION),
                       ("carriage", CARRIAGE)]
]

ALLOCATION_CASES = [
    case(f"{name}-{value}", edited(ALLOCATION, **{name: value}), ALLOCATION, name,
         "between 0 and 2147483647")
    for name in ("network", "station", "channel")
    for value in (-1, 2147483648)
] + [
    case("huge-station", edited(ALLOCATION, station=2**63), ALLOCATION, "station",
         "2147483647"),
    case("publication_status-unknown", edited(ALLOCATION, publication_status="pending"),
         ALLOCATION, "publication_status", "must be one of"),
    case("publication_status-capitalised", edited(ALLOCATION, publication_status="Published"),
         ALLOCATION, "publication_status", "must be one of"),
    case("publication_status-empty", edited(ALLOCATION, publication_status=""),
         ALLOCATION, "publication_status", "must be one of"),
    case("publication_status-boolean", edited(ALLOCATION, publication_status=True),
         ALLOCATION, "publication_status", "must be one of"),
    case("held-without-held_at", edited(HELD_LINE, held_at=None), HELD_LINE, "held_at",
         "required"),
    case("held_at-when-published", edited(ALLOCATION, held_at="2026-01-02T03:04:05Z"),
         ALLOCATION, "held_at", "must be null"),
    case("held_at-when-no-status",
         edited(ALLOCATION, publication_status=None, held_at="2026-01-02T03:04:05Z"),
         ALLOCATION, "held_at", "must be null"),
] + [
    case(f"held_at-{label}", edited(HELD_LINE, held_at=value), HELD_LINE, "held_at",
         "date-time")
    for label, value in [
        ("no-time-zone", "2026-01-02T03:04:05"),
        ("date-only", "2026-01-02"),
        ("garbage", "soon"),
        ("empty", ""),
        ("no-seconds", "2026-01-02T03:04Z"),
        ("month-13", "2026-13-02T03:04:05Z"),
        ("february-30", "2026-02-30T03:04:05Z"),
        ("hour-25", "2026-01-02T25:04:05Z"),
        ("offset-hour-24", "2026-01-02T03:04:05+24:00"),
        ("short-offset", "2026-01-02T03:04:05+2"),
        ("unix-time-string", "1767323045"),
        # valid RFC 3339 text whose UTC instant falls outside years 1..9999, which the
        # API could not write back as an RFC 3339 date-time in UTC
        ("after-year-9999-in-utc", "9999-12-31T23:59:59-23:59"),
        ("before-year-1-in-utc", "0001-01-01T00:00:00+23:59"),
    ]
]

# Rules that need the whole document: the problem is on the later line and names the first.
WHOLE_DOCUMENT_CASES = [
    case("duplicate-network-id", appended({"type": "network", "id": NETWORK_ID, "name": "X"}),
         APPENDED, "id", f"line {NETWORK}"),
    case("duplicate-origin-id", appended(new_origin(ORIGIN_ID)), APPENDED, "id",
         f"line {ORIGIN}"),
    case("duplicate-origin-id-differing-in-case",
         appended(new_origin("svc:origin:" + ORIGIN_UUID.upper())), APPENDED, "id",
         f"line {ORIGIN}"),
    case("duplicate-carriage-id", appended(new_carriage("iptv-alpha")), APPENDED, "id",
         f"line {CARRIAGE}"),
    case("two-allocations-for-one-origin", appended(new_allocation(ORIGIN_ID, 5, 5, 5)),
         APPENDED, "origin_id", f"line {ALLOCATION}"),
    case("address-allocated-twice",
         appended(new_origin(UNKNOWN_ORIGIN_ID), new_allocation(UNKNOWN_ORIGIN_ID, 1, 2, 3)),
         APPENDED + 1, "network.station.channel", f"line {ALLOCATION}"),
    case("origin-names-unknown-network",
         edited(ORIGIN, network_id="svc:network:00000000-0000-4000-8000-000000000000"),
         ORIGIN, "network_id", "no network"),
    case("governance_edge-names-unknown-origin", edited(EDGE, origin_id=UNKNOWN_ORIGIN_ID),
         EDGE, "origin_id", "no origin"),
    case("allocation-names-unknown-origin", edited(ALLOCATION, origin_id=UNKNOWN_ORIGIN_ID),
         ALLOCATION, "origin_id", "no origin"),
    case("carriage-names-unknown-origin", edited(CARRIAGE, origin_id=UNKNOWN_ORIGIN_ID),
         CARRIAGE, "origin_id", "no origin"),
    case("carriage-names-origin-without-transport", edited(CARRIAGE, transport=None),
         CARRIAGE, "transport", "names an origin"),
    # without line 1 the first carriage moves up to line CARRIAGE - 1
    case("carriage-without-catalog", document(BASE[1:]), CARRIAGE - 1, "type", "catalog"),
    case("unclassified-carriage-without-catalog",
         document([BASE[FEED - 1], {**new_carriage("loose"), "transport": None}]), 2, "type",
         "catalog"),
    case("carriage-transport-not-in-catalog", edited(CARRIAGE, transport="fast"), CARRIAGE,
         "transport", "catalog"),
    case("loose-carriage-transport-not-in-catalog", edited(CATALOG, transports=["iptv"]),
         len(BASE), "transport", "catalog"),
    case("two-catalog-records", appended({"type": "catalog", "transports": ["iptv", "ovp"]}),
         APPENDED, "type", f"line {CATALOG}"),
    case("two-feed-records", appended(BASE[FEED - 1]), APPENDED, "type", f"line {FEED}"),
    case("catalog-unknown-transport", edited(CATALOG, transports=["iptv", "ovp", "cable"]),
         CATALOG, "transports", "cable"),
    case("catalog-duplicate-transport", edited(CATALOG, transports=["iptv", "ovp", "iptv"]),
         CATALOG, "transports", "repeat"),
    case("carriage-unknown-transport", edited(CARRIAGE, transport="satellite"), CARRIAGE,
         "transport", "must be one of"),
]

# Limits (docs/loading.md): ids at most 256 characters, free text at most 1,024, a line at
# most 1 MiB, every key once.
LIMIT_CASES = [
    case(f"too-long-{kind}-{name}", edited(line, **{name: "é" * (limit + 1)}), line, name,
         f"too long: {limit + 1} characters, at most {limit}")
    for kind, line, name, limit in [
        ("network", NETWORK, "id", 256), ("network", NETWORK, "name", 1024),
        ("origin", ORIGIN, "name", 1024), ("origin", ORIGIN, "network_id", 256),
        ("origin", ORIGIN, "registry_id", 256), ("governance_edge", EDGE, "governor_id", 256),
        ("allocation", HELD_LINE, "held_reason", 1024), ("carriage", CARRIAGE, "id", 256),
        ("carriage", CARRIAGE, "provider", 1024), ("carriage", CARRIAGE, "source", 1024),
        ("carriage", CARRIAGE, "availability", 1024),
    ]
] + [
    # The case: a 20 kB id used to reach PostgreSQL's index and fail there.
    case("20-kb-network-id", edited(NETWORK, id="n" * 20_000), NETWORK, "id", "too long"),
    case("20-kb-origin-id", edited(ORIGIN, id="svc:origin:" + "0" * 20_000), ORIGIN, "id",
         "too long"),
    case("line-over-1-mib", edited(NETWORK, name="x" * 100, pad=" " * (1 << 20)), NETWORK,
         "record", "line too long"),
    case("line-over-1-mib-last-no-newline",
         document(BASE) + b'{"type": "network", "id": "' + b"y" * (1 << 20) + b'"}', len(BASE) + 1,
         "record", "line too long"),
    case("repeated-key", base_with(NETWORK, b'{"type": "network", "id": "a", "id": "b", '
         b'"name": null}'), NETWORK, "id", "given more than once"),
    case("repeated-key-escaped", base_with(NETWORK, b'{"type": "network", "id": "a", '
         b'"i\\u0064": "b", "name": null}'), NETWORK, "id", "given more than once"),
    case("repeated-type", base_with(NETWORK, b'{"type": "origin", "type": "network", "id": "a", '
         b'"name": null}'), NETWORK, "type", "given more than once"),
]

CASES = [
    *SYNTAX_CASES, *UNKNOWN_FIELD_CASES, *MISSING_FIELD_CASES, *NULL_CASES, *WRONG_TYPE_CASES,
    *NUL_CASES, *ID_CASES, *ALLOCATION_CASES, *WHOLE_DOCUMENT_CASES, *LIMIT_CASES,
]
# fmt: on


def reject(served: ServedGraph, payload: bytes) -> LoadRejected:
    """Attempt a load that must be rejected; check the served graph survived it intact."""
    with pytest.raises(LoadRejected) as caught:
        load(served.conninfo, payload)
    assert graph_state(served.conninfo) == served.state
    return caught.value


def test_base_document_is_valid(scratch_db: str) -> None:
    """The base every case edits loads, so each case's failure is its own edit's doing."""
    result = load(scratch_db, document(BASE))
    assert result.lines == len(BASE)
    assert graph_state(scratch_db)["total"] == 2


@pytest.mark.parametrize(("payload", "line", "field", "fragment"), CASES)
def test_rule_rejects_document(
    served: ServedGraph, payload: bytes, line: int, field: str, fragment: str
) -> None:
    """A document breaking one rule is refused with its line and field; nothing changes."""
    rejected = reject(served, payload)
    first = rejected.problems[0]
    assert (first.line, first.field) == (line, field), rejected.report()
    assert str(first).startswith(f"line {line}: {field}: ")
    assert fragment in first.message
    assert rejected.total >= 1
    assert rejected.report().splitlines()[0] == str(first)


def test_misspelled_field_is_both_missing_and_unknown(served: ServedGraph) -> None:
    """A misspelt name is reported as the missing field and as an unknown one."""
    record = {**BASE[ORIGIN - 1], "nmae": "Alpha"}
    del record["name"]
    rejected = reject(served, base_with(ORIGIN, record))
    assert {(p.line, p.field) for p in rejected.problems} == {(ORIGIN, "name"), (ORIGIN, "nmae")}


def test_problems_on_several_lines_are_sorted_by_line(served: ServedGraph) -> None:
    """Record problems come out in line order, whatever order the lines break in."""
    records: list[Record | bytes] = list(BASE)
    records[CARRIAGE - 1] = {**BASE[CARRIAGE - 1], "transport": "cable"}
    records[ORIGIN - 1] = {**BASE[ORIGIN - 1], "reviewed": "yes"}
    records[EDGE - 1] = b"{not json"
    rejected = reject(served, document(records))
    assert [(p.line, p.field) for p in rejected.problems] == [
        (ORIGIN, "reviewed"),
        (EDGE, "record"),
        (CARRIAGE, "transport"),
    ]
    assert rejected.total == 3
    assert rejected.report().splitlines() == [str(p) for p in rejected.problems]


def test_whole_document_problems_of_several_rules_are_sorted_by_line(
    served: ServedGraph,
) -> None:
    """Problems found by different whole-document rules merge into one line order."""
    records: list[Record | bytes] = list(BASE)
    records[ORIGIN - 1] = {**BASE[ORIGIN - 1], "network_id": "svc:network:elsewhere"}
    records[CARRIAGE - 1] = {**BASE[CARRIAGE - 1], "origin_id": UNKNOWN_ORIGIN_ID}
    records.append({"type": "network", "id": NETWORK_ID, "name": "Again"})
    records.append(new_carriage("ovp-loose"))
    rejected = reject(served, document(records))
    assert [(p.line, p.field) for p in rejected.problems] == [
        (ORIGIN, "network_id"),
        (CARRIAGE, "origin_id"),
        (APPENDED, "id"),
        (APPENDED + 1, "id"),
    ]
    assert rejected.total == 4


def bad_origins(count: int) -> list[Record]:
    """count origins whose reviewed flag is a string: one problem each."""
    return [
        {**new_origin(f"svc:origin:00000000-0000-4000-8000-{n:012d}"), "reviewed": "no"}
        for n in range(count)
    ]


@pytest.mark.parametrize(("count", "more"), [(20, None), (21, 1), (57, 37)])
def test_at_most_20_record_problems_are_listed_then_a_count(
    served: ServedGraph, count: int, more: int | None
) -> None:
    """Past 20 problems the report lists the first 20 and says how many more there are."""
    rejected = reject(served, document([*BASE, *bad_origins(count)]))
    assert rejected.total == count
    assert [p.line for p in rejected.problems] == list(range(APPENDED, APPENDED + 20))
    lines = rejected.report().splitlines()
    assert lines[:20] == [str(p) for p in rejected.problems]
    assert lines[20:] == ([] if more is None else [f"... and {more} more problem(s)"])


def test_at_most_20_whole_document_problems_are_listed_then_a_count(
    served: ServedGraph,
) -> None:
    """The same limit holds for problems of whole-document rules, across several rules."""
    duplicates = [new_carriage("iptv-alpha") for _ in range(15)]
    orphans = [{**new_carriage(f"orphan-{n}"), "origin_id": UNKNOWN_ORIGIN_ID} for n in range(15)]
    # interleaved, so the first 20 by line mix both rules
    interleaved = [record for pair in zip(duplicates, orphans, strict=True) for record in pair]
    rejected = reject(served, document([*BASE, *interleaved]))
    assert rejected.total == 30
    assert [p.line for p in rejected.problems] == list(range(APPENDED, APPENDED + 20))
    assert {p.field for p in rejected.problems} == {"id", "origin_id"}
    assert rejected.report().splitlines()[20:] == ["... and 10 more problem(s)"]


def origin_record(rendered: str | None) -> dict[str, Any]:
    """An origin's stored record, decoded (the repository returns the JSON the API sends)."""
    assert rendered is not None
    return orjson.loads(rendered)


def origin_ids(conninfo: str) -> list[str]:
    """The ids of the live graph's origins, in listing order."""
    state = graph_state(conninfo)
    return [item["origin"]["id"] for item in state["origins"]]


def psycopg_connect(conninfo: str) -> psycopg.Connection:
    """A connection like the service's: autocommit and read-only."""
    return psycopg.connect(conninfo, autocommit=True, options="-c default_transaction_read_only=on")


def test_upper_case_origin_ids_are_accepted_and_lower_cased(scratch_db: str) -> None:
    """Upper-case hex in an origin id, in records and references alike, is the same origin."""
    upper = "svc:origin:" + ORIGIN_UUID.upper()
    records = [dict(record) for record in BASE]
    records[ORIGIN - 1]["id"] = upper
    records[EDGE - 1]["origin_id"] = upper
    records[CARRIAGE - 1]["origin_id"] = "svc:origin:" + ORIGIN_UUID[:18] + ORIGIN_UUID[18:].upper()
    load(scratch_db, document(records))
    assert sorted(origin_ids(scratch_db)) == sorted([ORIGIN_ID, OTHER_ORIGIN_ID])
    with psycopg_connect(scratch_db) as conn:
        found = origin_record(repository.get_origin_by_id(conn, ORIGIN_UUID)[1])
    assert found["origin"]["id"] == ORIGIN_ID
    assert found["governance"]["active_edges"] == 1
    assert found["bans"]["address"] == "1.2.3"
    assert [p["carriage_id"] for p in found["presentations"]] == ["iptv-alpha"]


def test_records_load_in_any_order(scratch_db: str) -> None:
    """References may come before what they name: the reversed base loads to the same graph."""
    load(scratch_db, document(BASE))
    in_order = graph_state(scratch_db)
    load(scratch_db, document(BASE[::-1]))
    reversed_order = graph_state(scratch_db)
    for key in ("total", "origins", "summary", "integration_status"):
        assert reversed_order[key] == in_order[key], key


def test_empty_document_loads_an_empty_graph(scratch_db: str) -> None:
    """An empty document, allowed (docs/loading.md, Dry run and guards), replaces the graph with an
    empty one."""
    load(scratch_db, document(BASE))
    result = load(scratch_db, b"", allow_empty=True)
    assert result.lines == 0
    state = graph_state(scratch_db)
    assert state["origin_rows"] == (0,)
    assert (state["total"], state["origins"]) == (0, [])
    assert state["integration_status"] is None
    assert state["summary"]["canonical_origins"] == 0
    assert state["summary"]["catalog_carriages"] is None


def test_held_reason_without_a_hold_loads_and_is_not_shown(scratch_db: str) -> None:
    """The graph document lets held_reason be any string or null; only a hold shows it."""
    load(scratch_db, edited(ALLOCATION, held_reason="licence"))
    with psycopg_connect(scratch_db) as conn:
        found = origin_record(repository.get_origin_by_id(conn, ORIGIN_UUID)[1])
    assert found["bans"]["publication_status"] != "held"
    assert found["bans"]["held"] is None


def test_held_reason_may_be_left_out(scratch_db: str) -> None:
    """held_reason is the one optional field: without it a held allocation has no reason."""
    load(scratch_db, edited(HELD_LINE, held_reason=DROP))
    with psycopg_connect(scratch_db) as conn:
        found = origin_record(
            repository.get_origin_by_id(conn, OTHER_ORIGIN_ID.removeprefix("svc:origin:"))[1]
        )
    assert found["bans"]["held"] == {"at": "2026-01-02T03:04:05Z", "reason": None}


def test_last_line_without_newline_and_crlf_endings_load(scratch_db: str) -> None:
    """A final line without its newline still counts, and CRLF line ends are whitespace."""
    payload = document(BASE).replace(b"\n", b"\r\n").removesuffix(b"\r\n")
    result = load(scratch_db, payload)
    assert result.lines == len(BASE)
    assert graph_state(scratch_db)["summary"]["catalog_carriages"] == 2


def test_strings_keep_every_character(scratch_db: str) -> None:
    """Tabs, newlines, backslashes and COPY's own markers in strings come back unchanged."""
    name = "tab\there\nnew line\\N back\\slash \\. \r ünï ✓ 🎉 ' \" %_"
    load(scratch_db, edited(ORIGIN, name=name, registry_id="\\N"))
    with psycopg_connect(scratch_db) as conn:
        found = origin_record(repository.get_origin_by_id(conn, ORIGIN_UUID)[1])
    assert (found["origin"]["name"], found["origin"]["registry_id"]) == (name, "\\N")


def test_strings_at_their_limits_load(scratch_db: str) -> None:
    """Ids of 256 characters and text of 1,024 (four-byte ones) are accepted as they are."""
    long_id, long_text = "\U0001f4fa" * 256, "\U0001f4fa" * 1024
    records = [dict(record) for record in BASE]
    records[NETWORK - 1].update(id=long_id, name=long_text)
    records[ORIGIN - 1].update(network_id=long_id, name=long_text, registry_id=long_id)
    records[CARRIAGE - 1].update(provider=long_text, source=long_text, availability=long_text)
    load(scratch_db, document(records))
    with psycopg.connect(scratch_db) as conn:
        _, found = repository.get_origin_by_id(conn, ORIGIN_UUID)
    assert found is not None
    assert orjson.loads(found)["origin"]["network"] == {"id": long_id, "name": long_text}
