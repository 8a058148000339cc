"""The digest's one definition (registry/digest.py, docs/api.md "Digests"): a record's RFC 8785
canonical form, its SHA-256 as a big-endian integer, and the sum of those modulo 2^256."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from registry import digest

# Two records holding what canonical forms get wrong: non-ASCII text (a no-break space, an
# astral character), quotes, backslashes, every kind of control character (the five with a
# short escape, others as \u00xx in lowercase hex, DEL left alone), a slash (not escaped),
# empty arrays and nulls.
QUIET = {
    "origin": {
        "id": "svc:origin:00000000-0000-4000-8000-000000000001",
        "name": 'Télé "Nord" \\ 日本\u00a0\U0001f4fa',
        "registry_id": None,
        "network": {"id": None, "name": None},
    },
    "governance": {"state": "ungoverned", "active_edges": 0},
    "bans": {
        "allocated": False, "address": None, "network": None, "station": None,
        "channel": None, "publication_status": None, "held": None,
    },
    "presentations": [],
}  # fmt: skip
NOISY = {
    "origin": {
        "id": "svc:origin:00000000-0000-4000-8000-000000000002",
        "name": "tab\there\nline\r\x00\x1f\x7f\b\f/",
        "registry_id": "R-7",
        "network": {"id": "svc:network:x", "name": "Ctl \x01"},
    },
    "governance": {"state": "governed", "active_edges": 2},
    "bans": {
        "allocated": True, "address": "1.2.3", "network": 1, "station": 2, "channel": 3,
        "publication_status": "held",
        "held": {"at": "2026-01-02T03:04:05Z", "reason": '"quoted" \\back\\'},
    },
    "presentations": [
        {"carriage_id": "c1", "transport": "iptv", "provider": None, "source": None,
         "availability": None},
    ],
}  # fmt: skip
# Written out by hand from RFC 8785: keys sorted at every level, no whitespace, UTF-8.
QUIET_CANONICAL = (
    '{"bans":{"address":null,"allocated":false,"channel":null,"held":null,"network":null,'
    '"publication_status":null,"station":null},"governance":{"active_edges":0,'
    '"state":"ungoverned"},"origin":{"id":"svc:origin:00000000-0000-4000-8000-000000000001",'
    '"name":"Télé \\"Nord\\" \\\\ 日本\u00a0\U0001f4fa","network":{"id":null,"name":null},'
    '"registry_id":null},"presentations":[]}'
).encode()
NOISY_CANONICAL = (
    b'{"bans":{"address":"1.2.3","allocated":true,"channel":3,"held":{"at":'
    b'"2026-01-02T03:04:05Z","reason":"\\"quoted\\" \\\\back\\\\"},"network":1,'
    b'"publication_status":"held","station":2},"governance":{"active_edges":2,'
    b'"state":"governed"},"origin":{"id":"svc:origin:00000000-0000-4000-8000-000000000002",'
    b'"name":"tab\\there\\nline\\r\\u0000\\u001f\x7f\\b\\f/","network":{"id":"svc:network:x",'
    b'"name":"Ctl \\u0001"},"registry_id":"R-7"},"presentations":[{"availability":null,'
    b'"carriage_id":"c1","provider":null,"source":null,"transport":"iptv"}]}'
)
# SHA-256 of each canonical form, and their sum modulo 2^256.
QUIET_SHA = "b1104577ff18beb24663ae8a276ee2cc7d4e55674b9d3e7783c44db1f6939913"
NOISY_SHA = "465cdeaef71b2d6a1f59745368fbf38c777e8d6b67800c5231e62003dbc16399"
BOTH = "f76d2426f633ec1c65bd22dd906ad658f4cce2d2b31d4ac9b5aa6db5d254fcac"


def test_the_canonical_forms_are_rfc_8785s():
    assert digest.canonical(QUIET) == QUIET_CANONICAL
    assert digest.canonical(NOISY) == NOISY_CANONICAL


def test_the_hand_computed_digest():
    assert hashlib.sha256(QUIET_CANONICAL).hexdigest() == QUIET_SHA
    assert hashlib.sha256(NOISY_CANONICAL).hexdigest() == NOISY_SHA
    assert (int(QUIET_SHA, 16) + int(NOISY_SHA, 16)) % 2**256 == int(BOTH, 16)
    assert digest.record_hash(QUIET) == int(QUIET_SHA, 16)
    assert digest.digest_of([QUIET, NOISY]) == digest.digest_of([NOISY, QUIET]) == BOTH
    assert digest.text_hash(json.dumps(NOISY, indent=2)) == int(NOISY_SHA, 16)


def test_an_empty_graph_and_the_sum_that_wraps():
    assert digest.digest_of([]) == digest.EMPTY == "0" * 64
    assert digest.as_hex(2**256 + 5) == digest.as_hex(5) == "0" * 63 + "5"
    assert digest.as_hex(-1) == "f" * 64
    assert digest.from_hex(BOTH) == int(BOTH, 16)


@pytest.mark.parametrize("text", ["", "F" * 64, "0x" + "0" * 62, "0" * 63, "0" * 65, "g" * 64])
def test_only_64_lowercase_hex_digits_are_a_digest(text: str):
    with pytest.raises(ValueError, match="not a digest"):
        digest.from_hex(text)


def test_an_integer_without_a_plain_canonical_form_is_refused():
    with pytest.raises(TypeError):
        digest.canonical({"n": 2**53})
    assert digest.canonical({"n": 2**53 - 1}) == b'{"n":9007199254740991}'


# Values of every kind an Origin holds: text of every plane, integers, booleans, null.
SCALARS = st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text()
KEYS = st.text(st.characters(max_codepoint=127), max_size=8)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=20,
)


def jcs(value: Any) -> bytes:
    """RFC 8785 for these values, by the standard library: sorted keys, no whitespace, UTF-8
    as it is, its escapes (\\b \\t \\n \\f \\r, else \\u00xx in lowercase) being JCS's."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


@given(VALUES)
def test_the_canonical_form_agrees_with_an_independent_writer(value: Any):
    assert digest.canonical(value) == jcs(value)


@given(st.lists(VALUES, max_size=6), st.lists(VALUES, max_size=6))
def test_a_copy_keeps_the_digest_one_change_at_a_time(kept: list[Any], added: list[Any]):
    """digest(after) = digest(before) - sum of h(removed) + sum of h(added)."""
    before = digest.from_hex(digest.digest_of(kept))
    removed = kept[: len(kept) // 2]
    after = before - sum(map(digest.record_hash, removed)) + sum(map(digest.record_hash, added))
    assert digest.as_hex(after) == digest.digest_of(kept[len(kept) // 2 :] + added)
