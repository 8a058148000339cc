"""The digest of a generation (docs/api.md, "Digests"): one definition, for the loader that
computes it and for every copy (`registry mirror`) that proves it holds the same records.

Each origin's record (the Origin object the API sends) is written in its RFC 8785 canonical
form (JCS): object keys sorted, no whitespace, UTF-8, and only `"`, `\\` and U+0000 to U+001F
escaped (`\\b \\t \\n \\f \\r` where those exist, else `\\u00xx` in lowercase hex). Its hash h
is the SHA-256 of those bytes read as a 256-bit big-endian unsigned integer, and the digest
is the sum of h over every origin, modulo 2^256, as 64 lowercase hex digits. A sum depends
on the set of records, not their order, so a copy keeps it up to date one change at a time:
minus h(before), plus h(after).

orjson with sorted keys writes exactly the canonical form of these records: their keys are
ASCII (so code-point order is JCS's UTF-16 order), their numbers are integers (written in
plain decimal, as JCS writes integers below 2^53; a larger one is refused rather than
written another way), and its string escapes are JCS's. An Origin holds no float and no
other key (schemas/origin.py), so nothing else is checked: a check of every value cost four
times the hash itself, which a load pays once per origin.

The service sends every record in this form (schemas/origin.py declares its keys sorted), so
the loader writes a record once, for the answer and its hash alike (canonical_as_built), and
the SHA-256 of a record's bytes as sent is its h.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import Any

import orjson

BITS = 256
MODULUS = 1 << BITS
# The digest of a generation with no origin.
EMPTY = "0" * (BITS // 4)
_DIGEST = re.compile(r"[0-9a-f]{64}\Z")
# An integer past 2^53, which JCS would write as a double, is an error; keys sorted.
_AS_BUILT = orjson.OPT_STRICT_INTEGER
_CANONICAL = _AS_BUILT | orjson.OPT_SORT_KEYS


def canonical(record: Any) -> bytes:
    """The RFC 8785 canonical form of an Origin record (strings, integers, booleans, null,
    arrays, and objects with ASCII keys): orjson, keys sorted, integers held to 53 bits."""
    return orjson.dumps(record, option=_CANONICAL)


def canonical_as_built(record: Any) -> bytes:
    """canonical(record) for a record whose every object already holds its keys in sorted
    order, as the loader builds them (schemas/compiled.py, canonical=True): nothing sorted
    again. The loader sends these bytes and hashes them, so it writes each record once."""
    return orjson.dumps(record, option=_AS_BUILT)


def canonical_hash(form: bytes) -> int:
    """h of one record given in its canonical form: its SHA-256 as a big-endian integer."""
    return int.from_bytes(hashlib.sha256(form).digest(), "big")


def record_hash(record: Any) -> int:
    """h of one record."""
    return canonical_hash(canonical(record))


def text_hash(text: bytes | str) -> int:
    """h of one record given as JSON text (as the API sends it, or as a copy stores it)."""
    return record_hash(orjson.loads(text))


def as_hex(total: int) -> str:
    """A sum of hashes as a digest: modulo 2^256, 64 lowercase hex digits."""
    return f"{total % MODULUS:064x}"


def from_hex(digest: str) -> int:
    """A digest as the integer it writes (for a copy that adds and subtracts hashes)."""
    if not _DIGEST.match(digest):
        raise ValueError(f"not a digest: {digest!r}")
    return int(digest, 16)


def digest_of(records: Iterable[Any]) -> str:
    """The digest of a set of records."""
    return as_hex(sum(record_hash(record) for record in records))
