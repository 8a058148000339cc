"""Serializing every origin once per load, with the same OriginSchema the API documents.

The load assembles each origin's record in SQL (sql/load/build_origin_sources.sql); here it
is dumped through OriginSchema and kept as JSON text in graph.origin_docs, so a request
sends stored JSON instead of rebuilding it. Large graphs are rendered in worker processes.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import IO

import orjson

from schemas.origin import OriginSchema

_ORIGIN = OriginSchema()
# Below this many origins a worker pool costs more to start than it saves.
PARALLEL_FROM = 50_000
_CHUNK_LINES = 5_000
Chunks = Iterable[bytes | bytearray | memoryview]


def render_lines(lines: list[bytes]) -> bytes:
    """COPY text lines `pos<TAB>json` of assembled records -> the same, dumped by OriginSchema.

    COPY's text format doubles every backslash and, since JSON text has no raw control
    characters, escapes nothing else: undoing and redoing that is a plain replace.
    """
    out = []
    for line in lines:
        pos, _, source = line.rstrip(b"\n").partition(b"\t")
        record = orjson.loads(source.replace(b"\\\\", b"\\"))
        rendered = orjson.dumps(_ORIGIN.dump(record)).replace(b"\\", b"\\\\")
        out.append(pos + b"\t" + rendered + b"\n")
    return b"".join(out)


def _line_chunks(chunks: Chunks) -> Iterator[list[bytes]]:
    """Whole lines, a few thousand at a time, from arbitrary chunks of COPY output."""
    pending = b""
    batch: list[bytes] = []
    for chunk in chunks:
        lines = (pending + bytes(chunk)).split(b"\n")
        pending = lines.pop()
        batch.extend(line for line in lines if line)
        if len(batch) >= _CHUNK_LINES:
            yield batch
            batch = []
    if pending:
        batch.append(pending)
    if batch:
        yield batch


def render_stream(chunks: Chunks, out: IO[bytes], origins: int) -> None:
    """Render COPY output chunks into out, in order, using every core for large graphs."""
    batches = _line_chunks(chunks)
    if origins < PARALLEL_FROM or (os.cpu_count() or 1) < 2:
        for batch in batches:
            out.write(render_lines(batch))
        return
    # spawn, not fork: the loader holds an open database connection.
    context = multiprocessing.get_context("spawn")
    workers = os.cpu_count() or 2
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        in_flight: deque[Future[bytes]] = deque()
        for batch in batches:
            in_flight.append(pool.submit(render_lines, batch))
            if len(in_flight) >= workers * 2:  # bounded: memory stays flat
                out.write(in_flight.popleft().result())
        while in_flight:
            out.write(in_flight.popleft().result())
