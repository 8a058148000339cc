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


# A line of the body: its text (without the newline) and the object it writes.
Line = tuple[bytes, Any]


def batches(
    answer: Answer, expected: int, stop: threading.Event, size: int = BATCH_ROWS
) -> Iterator[list[Line]]:
    """The body's lines, `size` at a time; raises Retryable when the body ends short of
    `expected` lines (or past it), Stopped as soon as `stop` is set."""
    return _batched(_objects(answer.lines(), expected, stop), size)


def _objects(lines: Iterable[bytes], expected: int, stop: threading.Event) -> Iterator[Line]:
    """Each line with its object, counted against `expected`."""
    count = 0
    for line in lines:
        if stop.is_set():
            raise Stopped
        count += 1
        if count > expected or not line.endswith(b"\n"):
            # A line past the total, or a last line without its newline: not the body that
            # was announced (a proxy that ended a cut answer as if it were whole).
            raise Retryable(f"the body does not hold the {expected} lines it announced")
        try:
            yield line[:-1], orjson.loads(line)
        except orjson.JSONDecodeError as error:
            raise Failed(f"line {count} of the body is not JSON: {error}") from error
    if count != expected:
        raise Retryable(f"the body ended after {count} of the {expected} lines it announced")


def _batched(objects: Iterator[Line], size: int) -> Iterator[list[Line]]:
    """Lists of up to `size` lines, in order."""
    batch: list[Line] = []
    for item in objects:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
