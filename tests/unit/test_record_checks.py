"""registry/loader/records.py: the common case written out per record type.

check_record first tries a function compiled from RECORD_FIELDS for the record's type,
which gives the checked values of a record that has every field and breaks no rule, and
None for anything else, which then takes the general path. Here both paths check the same
generated records, well-formed and odd, and must give the same values or the same problems.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import registry.loader.records as record_checks
from registry.loader.fields import (
    INT32_MAX,
    MAX_ID_LENGTH,
    MAX_TEXT_LENGTH,
    RECORD_FIELDS,
)
from registry.loader.records import check_record

UUID = "0cb88c21-b953-48e5-9e64-4db7fb76eab3"
# Values near every rule's edges (half of the draws), or anything else JSON can give.
EDGES = [
    None,
    True,
    False,
    0,
    1,
    0.0,
    -1,
    INT32_MAX,
    INT32_MAX + 1,
    # What orjson.loads can give: ints within 64 bits (up to 2**64 - 1), floats beyond.
    2**63,
    -(2**63),
    2**64 - 1,
    -9.3e18,
    1.5,
    "",
    "a\x00b",
    "x" * MAX_ID_LENGTH,
    "x" * (MAX_ID_LENGTH + 1),
    "y" * MAX_TEXT_LENGTH,
    "y" * (MAX_TEXT_LENGTH + 1),
    f"svc:origin:{UUID}",
    f"svc:origin:{UUID.upper()}",
    "svc:origin:nope",
    "iptv",
    "ota",
    "held",
    "published",
    "2026-01-01T00:00:00Z",
    "2026-01-01T00:00:00.1234567+02:00",
    "2026-13-01T00:00:00Z",
    ["iptv", "iptv"],
    ["tv"],
    {},
]
VALUE = st.one_of(
    st.sampled_from(EDGES),
    st.one_of(
        st.booleans(),
        st.integers(min_value=-1, max_value=3),
        st.text(max_size=6),
        st.lists(st.sampled_from(["iptv", "ovp", "ota", "fast", "tv"]), max_size=3),
    ),
)


# A well-formed record of each type; the strategy below changes a few of its fields.
VALID: dict[str, dict[str, Any]] = {
    "network": {"id": "n1", "name": None},
    "origin": {
        "id": f"svc:origin:{UUID.upper()}",
        "name": "News 24",
        "network_id": "n1",
        "registry_id": None,
        "reviewed": True,
    },
    "governance_edge": {"origin_id": f"svc:origin:{UUID}", "governor_id": "g", "active": False},
    "allocation": {
        "origin_id": f"svc:origin:{UUID}",
        "network": 1,
        "station": 0,
        "channel": 4,
        "publication_status": "held",
        "held_at": "2026-01-01T00:00:00Z",
        "held_reason": "review",
    },
    "carriage": {
        "id": "c1",
        "transport": "iptv",
        "provider": "p",
        "source": None,
        "availability": None,
        "origin_id": f"svc:origin:{UUID}",
    },
    "catalog": {"transports": ["iptv", "ota"]},
    "feed": {
        "connected": True,
        "networks": 3,
        "iptv_networks": None,
        "ovp_networks": 0,
        "channels": 9,
        "programs": None,
        "reviews": 1,
        "pending_reviews": 0,
    },
}


@st.composite
def records(draw: st.DrawFn) -> dict[str, Any]:
    """A well-formed record with up to two fields given another value (any of VALUE), and
    sometimes a field left out or one added."""
    kind = draw(st.sampled_from(sorted(VALID)))
    record = {"type": kind, **VALID[kind]}
    names = [name for name, _, _ in RECORD_FIELDS[kind]]
    for name in draw(st.lists(st.sampled_from(names), max_size=2)):
        record[name] = draw(VALUE)
    if draw(st.booleans()) and draw(st.booleans()):
        record.pop(draw(st.sampled_from(names)))
    if draw(st.booleans()) and draw(st.booleans()):
        record[draw(st.sampled_from(["extra", "Type", "id"]))] = draw(VALUE)
    return record


def general_path(line: int, record: dict[str, Any]) -> Any:
    """check_record with the compiled common case switched off."""
    saved = dict(record_checks._COMMON_CASE)
    record_checks._COMMON_CASE.update({kind: lambda _record: None for kind in saved})
    try:
        return check_record(line, record)
    finally:
        record_checks._COMMON_CASE.update(saved)


@settings(max_examples=4000, deadline=None)
@given(records())
def test_both_paths_check_alike(record: dict[str, Any]) -> None:
    """The same values, or the same problems in the same order, whichever path ran."""
    assert check_record(7, dict(record)) == general_path(7, dict(record))


@pytest.mark.parametrize("kind", sorted(VALID))
def test_well_formed_records_take_the_compiled_path(kind: str) -> None:
    """The common records of a document are checked by the compiled function."""
    record = {"type": kind, **VALID[kind]}
    values = record_checks._COMMON_CASE[record["type"]](record)
    assert values is not None
    assert check_record(1, record) == general_path(1, record)


def test_every_edge_in_every_field_is_checked_alike() -> None:
    """Each field of each type set to each edge value in turn, then each field left out and
    an unknown one added: the compiled path and the general one agree on every record."""
    checked = 0
    for kind, valid in VALID.items():
        base = {"type": kind, **valid}
        variants = [{**base, name: value} for name in valid for value in EDGES]
        variants += [{key: value for key, value in base.items() if key != name} for name in valid]
        variants.append({**base, "extra": 1})
        for record in variants:
            assert check_record(3, dict(record)) == general_path(3, dict(record)), record
            checked += 1
    assert checked > 1000
