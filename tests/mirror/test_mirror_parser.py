"""An export's lines read (registry/mirror/parser.py, docs/mirror.md "A step" and "Proof"):
each line's origin id and the sum of the lines' hashes as sent, which for lines in their
canonical form is the sum of the records' hashes; a line that is not JSON, has no origin.id
or is not UTF-8 is named by its number in the body."""

from __future__ import annotations

import uuid

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from registry.digest import canonical, canonical_hash, record_hash
from registry.mirror.client import Failed
from registry.mirror.parser import exported


def origin(number: int, name: str) -> dict[str, object]:
    """An Origin-shaped record with a distinct id."""
    return {
        "origin": {"id": f"svc:origin:{uuid.UUID(int=number)}", "name": name},
        "presentations": [],
    }


def lines_of(records: list[dict[str, object]]) -> list[bytes]:
    return [orjson.dumps(record) for record in records]


names = st.text(max_size=30)


@settings(max_examples=50, deadline=None)
@given(sizes=st.lists(st.integers(min_value=1, max_value=40), max_size=8), name=names)
def test_batches_give_the_ids_and_the_records_hashes(sizes: list[int], name: str) -> None:
    records = [origin(number, name) for number in range(sum(sizes))]
    lines, ids, hashes, before = lines_of(records), [], 0, 0
    for size in sizes:
        found, summed = exported(lines[before : before + size], before)
        ids += found
        hashes += summed
        before += size
    assert ids == [record["origin"]["id"] for record in records]  # type: ignore[index]
    # The lines as sent are the records' canonical form: their hashes are the records'.
    assert [orjson.loads(line) for line in lines] == records
    assert hashes == sum(map(record_hash, records))


@settings(max_examples=50, deadline=None)
@given(records=st.lists(st.dictionaries(st.text(max_size=8), st.text(max_size=8)), max_size=6))
def test_a_line_is_hashed_as_sent(records: list[dict[str, str]]) -> None:
    """An export's hash is the SHA-256 of each line's bytes: the record's h when the line is
    its canonical form, another value when it is not (keys unsorted, spaces), which the step
    then settles from the records themselves (tests/mirror/test_copy_steps.py)."""
    lines = [
        orjson.dumps({"origin": {"id": str(number)}, **extra})
        for number, extra in enumerate(records)
    ]
    assert exported(lines, 0) == (
        [str(number) for number in range(len(records))],
        sum(map(canonical_hash, lines)),
    )
    unsorted = b'{"presentations":[],"origin":{"name":"a","id":"svc:origin:1"}}'
    assert exported([unsorted], 0)[1] != record_hash(orjson.loads(unsorted))
    assert exported([canonical(orjson.loads(unsorted))], 0)[1] == record_hash(
        orjson.loads(unsorted)
    )


def test_a_line_that_is_not_json_is_named_by_its_number() -> None:
    lines = [*lines_of([origin(5, "y")]), b"{oops", *lines_of([origin(7, "z")])]
    with pytest.raises(Failed, match="line 7 of the body is not JSON"):
        exported(lines, 5)


def test_a_line_without_an_origin_id_is_refused() -> None:
    with pytest.raises(Failed, match=r"an exported line without origin\.id \(line 1\)"):
        exported([b'{"origin":{"name":"no id"}}'], 0)
    with pytest.raises(Failed, match=r"an exported line without origin\.id \(line 4\)"):
        exported([lines_of([origin(1, "a")])[0], b'{"origin":{"id":7}}'], 2)


@pytest.mark.parametrize(
    "line",
    [b'{"origin":{"id":"a","name":"\xff"}}', b'{"origin":{"id":"a"},"x":"\xed\xa0\x80"}'],
)
def test_a_line_that_is_not_utf8_is_named_by_its_number(line: bytes) -> None:
    """Only the id is decoded, so the rest of a line is checked as UTF-8 on its own: the stores
    take the bytes as they came."""
    good = lines_of([origin(number, "x") for number in range(3)])
    with pytest.raises(Failed, match="line 6 of the body is not UTF-8"):
        exported([*good[:2], line], 3)
