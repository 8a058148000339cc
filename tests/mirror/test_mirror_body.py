"""An NDJSON body read in blocks that end anywhere (registry/mirror/body.py, docs/mirror.md
"A step"): the lines come out whole and in order, in batches of the batch size (the last
one smaller), each parsed with its line number in the body for an error, and a body that is
not the one announced never reads as whole."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from registry.mirror.body import Stopped, batches, parsed
from registry.mirror.client import Failed, Retryable


@dataclass
class Blocks:
    """An answer whose body arrives in the blocks given."""

    pieces: list[bytes]

    def blocks(self) -> Iterator[bytes]:
        yield from self.pieces


def cut(body: bytes, at: list[int]) -> Blocks:
    """The body cut at these offsets."""
    edges = [0, *sorted({min(max(0, point), len(body)) for point in at}), len(body)]
    return Blocks([body[start:end] for start, end in pairwise(edges)])


def read(answer: Blocks, expected: int, size: int = 3) -> list[list[tuple[bytes, object]]]:
    """Each batch's lines, each with the object it writes."""
    got, before = [], 0
    for lines in batches(answer, expected, threading.Event(), size):  # type: ignore[arg-type]
        got.append(list(zip(lines, parsed(lines, before), strict=True)))
        before += len(lines)
    return got


records = st.lists(
    st.dictionaries(
        st.text(max_size=5), st.one_of(st.integers(-(2**53), 2**53), st.text(max_size=20))
    ),
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(records=records, at=st.lists(st.integers(min_value=0, max_value=4000), max_size=40))
def test_lines_cut_anywhere_come_out_whole_in_order_and_in_batches(
    records: list[dict[str, object]], at: list[int]
) -> None:
    lines = [orjson.dumps(record) for record in records]
    body = b"".join(line + b"\n" for line in lines)
    got = read(cut(body, at), len(lines))
    assert [len(batch) for batch in got[:-1]] == [3] * (len(got) - 1)
    assert all(0 < len(batch) <= 3 for batch in got)
    assert [line for batch in got for line, _ in batch] == lines
    assert [record for batch in got for _, record in batch] == records


def test_a_body_with_a_line_past_its_total_is_not_whole() -> None:
    with pytest.raises(Retryable, match="does not hold the 2 lines it announced"):
        read(Blocks([b'{"a":1}\n{"a":2}\n', b'{"a":3}\n']), 2)


def test_a_body_short_of_its_total_is_not_whole() -> None:
    with pytest.raises(Retryable, match="ended after 2 of the 3 lines it announced"):
        read(Blocks([b'{"a":1}\n{', b'"a":2}\n']), 3)


def test_a_last_line_without_its_newline_is_not_whole() -> None:
    with pytest.raises(Retryable, match="last line ends without a newline"):
        read(Blocks([b'{"a":1}\n{"a":2}']), 2)


def test_a_line_that_is_not_json_is_named_by_its_number_in_the_body() -> None:
    body = b"".join(b'{"a":%d}\n' % n for n in range(7)) + b"{oops\n" + b'{"a":8}\n'
    with pytest.raises(Failed, match="line 8 of the body is not JSON"):
        read(cut(body, [5, 40, 41]), 9)


def test_stop_ends_the_reading_at_the_next_block() -> None:
    stop = threading.Event()
    answer = Blocks([b'{"a":1}\n', b'{"a":2}\n', b'{"a":3}\n'])
    read_batches = batches(answer, 3, stop, 1)  # type: ignore[arg-type]
    assert next(read_batches) == [b'{"a":1}']
    stop.set()
    with pytest.raises(Stopped):
        next(read_batches)
