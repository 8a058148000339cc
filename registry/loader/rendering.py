"""Serializing every origin once per load, with the same OriginSchema the API documents.

The load assembles each origin's record in SQL (sql/load/copy_origin_sources.sql); here it
is dumped through OriginSchema (compiled: schemas/compiled.py) and kept as JSON text in
graph.origin_docs, so a request sends stored JSON instead of rebuilding it.

The loader streams the assembled records to a file (COPY text, in position order), and
a large graph's file is cut at line boundaries into one piece per worker process
(registry.loader.workers), each rendering its piece into a file of its own. The workers
run while the loader's connection builds the rest of the read model; the loader then sends
the rendered pieces with COPY in order, so origin_docs is written in position order.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from types import TracebackType
from typing import IO

import orjson

from registry.loader.workers import WorkerProcesses, line_ranges, worker_count
from schemas.compiled import compile_dump
from schemas.origin import OriginSchema

# OriginSchema's dump written out as plain code (schemas/compiled.py): the same output as
# OriginSchema().dump, about a twelfth of its cost, which a load pays once per origin.
_DUMP_ORIGIN = compile_dump(OriginSchema)
# Below this many origins worker processes cost more to start than they save.
PARALLEL_FROM = 50_000
_CHUNK_LINES = 5_000
_READ_BYTES = 1 << 20


def render_lines(lines: list[bytes]) -> bytes:
    """COPY text lines `pos<TAB>json` of assembled records -> the same, dumped by OriginSchema.

    COPY's text format doubles every backslash and, since JSON text has no raw control
    characters, escapes nothing else: undoing and redoing that is a plain replace.
    """
    out = []
    for line in lines:
        pos, _, source = line.rstrip(b"\n").partition(b"\t")
        record = orjson.loads(source.replace(b"\\\\", b"\\"))
        rendered = orjson.dumps(_DUMP_ORIGIN(record)).replace(b"\\", b"\\\\")
        out.append(pos + b"\t" + rendered + b"\n")
    return b"".join(out)


def _batches(file: IO[bytes], start: int, end: int) -> Iterator[list[bytes]]:
    """The whole lines of [start, end) of file, a few thousand at a time."""
    file.seek(start)
    left = end - start
    pending = b""
    batch: list[bytes] = []
    while left > 0:
        block = file.read(min(_READ_BYTES, left))
        if not block:
            break
        left -= len(block)
        lines = (pending + block).split(b"\n")
        pending = lines.pop()
        batch.extend(line for line in lines if line)
        if len(batch) >= _CHUNK_LINES:
            yield batch
            batch = []
    if pending:
        batch.append(pending)
    if batch:
        yield batch


def render_piece(source: str, start: int, end: int, target: str) -> int:
    """Render [start, end) of the assembled records in source into target; the bytes written."""
    written = 0
    with open(source, "rb") as records, open(target, "wb") as out:
        for batch in _batches(records, start, end):
            written += out.write(render_lines(batch))
    return written


class OriginRender:
    """Rendering of one load's assembled records: in worker processes, beside the loader.

    The loader writes the assembled records to `source` (COPY text), calls start(), goes on
    with its other steps, then reads rendered() to send the documents with COPY. Leaving the
    `with` block ends the workers and deletes the files, whatever happened.
    """

    def __init__(self, origins: int, workers: int | None = None):
        self._directory = tempfile.TemporaryDirectory(prefix="registry-render-")
        self.source = os.path.join(self._directory.name, "sources.copy")
        self._origins = origins
        self._workers = worker_count() if workers is None else workers
        self._processes = WorkerProcesses()
        self._pieces: list[tuple[int, str]] = []

    def __enter__(self) -> OriginRender:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._processes.close()
        self._directory.cleanup()

    def start(self) -> None:
        """Start rendering the source file: a worker per piece for a large graph."""
        if self._origins < PARALLEL_FROM or self._workers < 2:
            return
        size = os.path.getsize(self.source)
        for number, (start, end) in enumerate(line_ranges(self.source, 0, size, self._workers)):
            target = os.path.join(self._directory.name, f"rendered-{number}.copy")
            self._pieces.append(
                (self._processes.start(render_piece, self.source, start, end, target), target)
            )

    def rendered(self) -> Iterator[bytes]:
        """The rendered records in position order, in blocks, each piece once it is done."""
        if not self._pieces:  # a small graph: rendered here, now
            target = os.path.join(self._directory.name, "rendered.copy")
            render_piece(self.source, 0, os.path.getsize(self.source), target)
            self._pieces.append((-1, target))
        for number, target in self._pieces:
            if number >= 0:
                self._processes.result(number)
            with open(target, "rb") as file:
                while block := file.read(_READ_BYTES):
                    yield block
