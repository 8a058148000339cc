"""registry/loader/common_lines.py: the common line written out per record type.

DocumentReader first hands a line's parsed record to a function compiled from RECORD_FIELDS
for its type, which gives the line's COPY text when the record has every field, breaks no
rule, repeats no key and needs no escape, and None for anything else, which then takes the
general path (the repeated-key check, check_record, copy_field). Here whole documents of
generated lines, well-formed and odd, are read both ways: the spooled rows, counts and
problems must be the same.
"""

from __future__ import annotations

import io
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import registry.loader.common_lines as common_lines
from registry.loader.document import DocumentReader
from registry.loader.records import TABLES
from tests.unit.test_record_checks import EDGES, VALID, records

# Texts COPY must escape or the fast path must not take as they are, beside plain ones.
AWKWARD = [
    "tab\there",
    "back\\slash",
    "new\nline",
    "cr\rhere",
    'a "quote"',
    "no-break\u00a0space",
    "line\u2028separator",
    "Köln",
    "ǅ title-case",
    "\N{LATIN SMALL LETTER SHARP S}",
    "\\N",
]


def read(lines: list[bytes], common: bool) -> tuple[dict[str, str], DocumentReader]:
    """Read lines as a document, with the compiled common lines on or off."""
    spools = {kind: io.StringIO() for kind in TABLES}
    reader = DocumentReader(spools, max_problems=1000)
    saved = dict(common_lines.COMMON_LINE)
    if not common:
        common_lines.COMMON_LINE.clear()
    try:
        reader.read(io.BytesIO(b"".join(lines)))
    finally:
        common_lines.COMMON_LINE.update(saved)
    return {kind: spool.getvalue() for kind, spool in spools.items()}, reader


def assert_read_alike(lines: list[bytes]) -> None:
    """Both ways give the same rows, counts, lines and problems."""
    fast_rows, fast = read(lines, common=True)
    slow_rows, slow = read(lines, common=False)
    assert fast_rows == slow_rows
    assert (fast.counts, fast.lines, fast.problems, fast.problem_count) == (
        slow.counts,
        slow.lines,
        slow.problems,
        slow.problem_count,
    )


def repeat_key(raw: bytes, record: dict[str, Any], name: str) -> bytes:
    """The line with `name` given a second time, first, before the others (orjson keeps the
    last, so the parsed record is unchanged)."""
    first = orjson.dumps({name: record.get(name, 0)})[:-1]
    return first + b"," + raw[1:]


@st.composite
def lines(draw: st.DrawFn) -> bytes:
    """A generated record as a line: plainly written, with an awkward text in one field, with a
    key given twice, or with a key spelled with escapes."""
    record = draw(records())
    if draw(st.booleans()):
        names = [name for name in record if name != "type"]
        if names:
            record[draw(st.sampled_from(names))] = draw(st.sampled_from(AWKWARD))
    raw = orjson.dumps(record)
    shape = draw(st.sampled_from(["plain", "plain", "repeated", "escaped key", "spaces"]))
    if shape == "repeated":
        raw = repeat_key(raw, record, draw(st.sampled_from(sorted(record))))
    elif shape == "escaped key":
        raw = raw.replace(b'"type"', b'"\\u0074ype"', 1)
    elif shape == "spaces":
        raw = raw.replace(b'":', b'" : ')
    return raw + b"\n"


@settings(max_examples=3000, deadline=None)
@given(st.lists(lines(), min_size=1, max_size=6))
def test_generated_documents_are_read_alike(document_lines: list[bytes]) -> None:
    """Rows, counts and problems are the same whichever path each line took."""
    assert_read_alike(document_lines)


def test_every_edge_and_awkward_text_in_every_field_is_read_alike() -> None:
    """Each field of each type set to each edge value and each awkward text in turn, each
    field left out, an unknown one added, each key repeated: read alike."""
    variants: list[bytes] = []
    for kind, valid in VALID.items():
        base = {"type": kind, **valid}
        for name in valid:
            variants += [orjson.dumps({**base, name: value}) for value in EDGES + AWKWARD]
            variants.append(orjson.dumps({k: v for k, v in base.items() if k != name}))
            variants.append(repeat_key(orjson.dumps(base), base, name))
        variants.append(orjson.dumps({**base, "extra": 1}))
    assert len(variants) > 1000
    assert_read_alike([raw + b"\n" for raw in variants])


@pytest.mark.parametrize("kind", sorted(common_lines.COMMON_LINE))
def test_well_formed_records_take_the_common_line(kind: str) -> None:
    """The common records of a document are written by the compiled function, and as the
    general path writes them."""
    record = {"type": kind, **VALID[kind]}
    raw = orjson.dumps(record)
    text = common_lines.COMMON_LINE[kind](raw, record)
    assert text is not None
    rows, _ = read([raw + b"\n"], common=False)
    assert rows[kind] == f"{text}\t1\n"


def test_an_escaped_quote_or_a_repeated_key_takes_the_general_path() -> None:
    """The quote count is what tells a repeated key: any line with more quotes than its
    record's keys and texts need is left to the general path."""
    record = {"type": "network", "id": "n1", "name": 'say "hi"'}
    raw = orjson.dumps(record)
    assert common_lines.COMMON_LINE["network"](raw, orjson.loads(raw)) is None
    record = {"type": "network", "id": "n1", "name": "n"}
    raw = repeat_key(orjson.dumps(record), record, "name")
    assert common_lines.COMMON_LINE["network"](raw, orjson.loads(raw)) is None
    assert_read_alike([raw + b"\n"])
