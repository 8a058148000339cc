"""An NDJSON body read in bounded batches and held to the `Registry-Total` it announced."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from registry.mirror.client import Answer, Failed, Retryable

# Rows parsed, hashed and written at a time: a batch of Origin records (about 1 to 2 KB
# each) is a few megabytes, whatever the size of the graph; the service's own export
# batches are as large.
BATCH_ROWS = 2000


class Stopped(Exception):
    """SIGINT or SIGTERM came while a step was under way: it is rolled back."""


def stamp(answer: Answer) -> tuple[int, str]:
    """The answer's `Registry-Generation` and `Registry-Digest`."""
    generation, digest = answer.header("Registry-Generation"), answer.header("Registry-Digest")
    if generation is None or not generation.isdigit():
        raise Failed(f"the answer ({answer.status}) carries no Registry-Generation")
    if digest is None:
        raise Failed(
            f"the answer ({answer.status}) carries no Registry-Digest: the service predates "
            "digests and a copy of it cannot be proven (docs/mirror.md)"
        )
    return int(generation), digest.strip()


def total(answer: Answer) -> int:
    """The answer's `Registry-Total`: the lines its body holds."""
    value = answer.header("Registry-Total")
    if value is None or not value.strip().isdigit():
        raise Failed("the export carries no Registry-Total, so a cut body could look whole")
    return int(value)


def batches(
    answer: Answer, expected: int, stop: threading.Event, size: int = BATCH_ROWS
) -> Iterator[list[bytes]]:
    """The body's lines without their newlines, `size` at a time; raises Retryable when the
    body ends short of `expected` lines (or past it, or without its last newline), Stopped
    as soon as `stop` is set after a block arrives."""
    count = 0  # lines yielded
    waiting: list[bytes] = []  # lines read, fewer than a batch
    for lines in _lines(answer.blocks(), stop):
        if count + len(waiting) + len(lines) > expected:
            # A line past the total: not the body that was announced.
            raise Retryable(f"the body does not hold the {expected} lines it announced")
        waiting += lines
        whole = len(waiting) - len(waiting) % size
        for start in range(0, whole, size):
            yield waiting[start : start + size]
            count += size
        del waiting[:whole]
    if waiting:
        yield waiting
        count += len(waiting)
    if count != expected:
        raise Retryable(f"the body ended after {count} of the {expected} lines it announced")


def _lines(blocks: Iterable[bytes], stop: threading.Event) -> Iterator[list[bytes]]:
    """The whole lines of each block with what was left of the previous one, without their
    newlines. A body whose last line lacks its newline (a proxy that ended a cut answer as if
    it were whole) raises Retryable."""
    pending = b""
    for block in blocks:
        if stop.is_set():
            raise Stopped
        lines = (pending + block).split(b"\n") if pending else block.split(b"\n")
        pending = lines.pop()
        if lines:
            yield lines
    if pending:
        raise Retryable("the body's last line ends without a newline")


def parsed(lines: list[bytes], before: int) -> list[Any]:
    """The object each line writes, `before` the lines of the body ahead of these; the
    body's line number in the error when one is not JSON."""
    try:
        return list(map(orjson.loads, lines))
    except orjson.JSONDecodeError:
        for number, line in enumerate(lines, before + 1):
            try:
                orjson.loads(line)
            except orjson.JSONDecodeError as error:
                raise Failed(f"line {number} of the body is not JSON: {error}") from error
        raise
