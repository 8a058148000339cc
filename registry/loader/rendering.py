"""Serializing every origin once per load, with the same OriginSchema the API documents.

The load streams each origin's fields in position order (sql/load/copy_origin_sources.sql)
and its presentations in the same order (copy_presentation_sources.sql) to two files (COPY
text). Here each record (the Origin record) is assembled from them and dumped through
OriginSchema (compiled: schemas/compiled.py), and kept as JSON text in graph.origin_docs, so
a request sends stored JSON instead of rebuilding it.

A large graph's origins are cut at line boundaries into one piece per worker process
(registry.loader.workers), each finding its presentations by position and rendering its
piece into a file of its own. The workers run while the loader's connection builds the
rest of the read model; the loader then sends the rendered pieces with COPY in order, so
origin_docs is written in position order.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from types import TracebackType
from typing import IO, Any

from registry.digest import MODULUS, as_hex, canonical_as_built, canonical_hash
from registry.loader.workers import WorkerProcesses, line_ranges, next_line_start, worker_count
from schemas.compiled import compile_dump
from schemas.origin import OriginSchema

# OriginSchema's dump written out as plain code (schemas/compiled.py): the same output as
# OriginSchema().dump, about a twelfth of its cost, which a load pays once per origin. Its
# dicts hold their keys in sorted order (canonical=True refuses a schema declared otherwise),
# so each record's JSON is its canonical form, sent as it is hashed (registry/digest.py).
_DUMP_ORIGIN = compile_dump(OriginSchema, canonical=True)
# Below this many origins worker processes cost more to start than they save.
PARALLEL_FROM = 50_000
_CHUNK_LINES = 5_000
_READ_BYTES = 1 << 20
# How often rendered() looks for more of a piece still being written, in seconds.
_POLL_S = 0.05
# COPY's text format: \N is null; a backslash escapes a backslash or stands for a control
# character (PostgreSQL writes \b \f \n \r \t \v); COPY FROM reads any other as itself.
_ESCAPE = re.compile(r"\\(.)", re.S)
_ESCAPED = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_NULL = "\\N"


def _unescape(match: re.Match[str]) -> str:
    return _ESCAPED.get(match[1], match[1])


def copy_fields(line: bytes) -> list[str | None]:
    """The fields of one COPY text line (without its newline), as texts or None."""
    return [
        None if field == _NULL else _ESCAPE.sub(_unescape, field) if "\\" in field else field
        for field in line.decode().split("\t")
    ]


def _presentation(fields: list[str | None]) -> dict[str, Any]:
    """A presentation from its line's fields: pos, carriage_id, transport, provider, source,
    availability."""
    _, carriage_id, transport, provider, source, availability = fields
    return {
        "carriage_id": carriage_id,
        "transport": transport,
        "provider": provider,
        "source": source,
        "availability": availability,
    }


def _origin(fields: list[str | None], presentations: list[dict[str, Any]]) -> dict[str, Any]:
    """An Origin from its line's fields (sql/load/copy_origin_sources.sql names them) and its
    presentations."""
    (
        _,
        origin_id,
        name,
        registry_id,
        network_id,
        network_name,
        governed,
        active_edges,
        allocated,
        network,
        station,
        channel,
        status,
        held_at,
        held_reason,
    ) = fields
    assert active_edges is not None  # both come from NOT NULL columns
    if allocated == "t":
        assert network is not None and station is not None and channel is not None
        bans: dict[str, Any] = {
            "allocated": True,
            "address": f"{network}.{station}.{channel}",
            "network": int(network),
            "station": int(station),
            "channel": int(channel),
            "publication_status": status,
            "held": {"at": held_at, "reason": held_reason} if status == "held" else None,
        }
    else:
        bans = {
            "allocated": False,
            "address": None,
            "network": None,
            "station": None,
            "channel": None,
            "publication_status": None,
            "held": None,
        }
    return {
        "origin": {
            "id": origin_id,
            "name": name,
            "registry_id": registry_id,
            "network": {"id": network_id, "name": network_name},
        },
        "governance": {
            "state": "governed" if governed == "t" else "ungoverned",
            "active_edges": int(active_edges),
        },
        "bans": bans,
        "presentations": presentations,
    }


class Presentations:
    """The presentation lines of a range of a file, handed out by position, in order."""

    def __init__(self, lines: Iterator[bytes]):
        self._lines = lines
        self._pending = next(self._lines, None)

    def take(self, position: int) -> list[dict[str, Any]]:
        """The presentations of this position (positions must be asked for in order)."""
        own = []
        while self._pending is not None:
            fields = copy_fields(self._pending)
            at = int(fields[0])  # type: ignore[arg-type]  # pos is never null
            if at > position:
                break
            if at == position:
                own.append(_presentation(fields))
            self._pending = next(self._lines, None)
        return own


def render_lines(lines: list[bytes], presentations: Presentations) -> tuple[bytes, int]:
    """COPY text lines of origins' fields (without newlines, in position order) -> COPY text
    lines `pos<TAB>json` of their records dumped by OriginSchema, each with the presentations
    of its position; and the sum of the records' hashes (registry.digest), not yet reduced."""
    out = []
    hashes = 0
    for line in lines:
        fields = copy_fields(line)
        shown = presentations.take(int(fields[0]))  # type: ignore[arg-type]
        record = _DUMP_ORIGIN(_origin(fields, shown))
        form = canonical_as_built(record)
        hashes += canonical_hash(form)
        rendered = form.replace(b"\\", b"\\\\")
        out.append(line[: line.index(b"\t")] + b"\t" + rendered + b"\n")
    return b"".join(out), hashes


def _batches(file: IO[bytes], start: int, end: int) -> Iterator[list[bytes]]:
    """The lines of [start, end) of file, without their newlines, a few thousand at a time."""
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


def _lines(file: IO[bytes], start: int, end: int) -> Iterator[bytes]:
    """The lines of [start, end) of file, one by one, without their newlines."""
    for batch in _batches(file, start, end):
        yield from batch


def first_line_from(path: str, position: int) -> int:
    """The offset of the first line of a file of lines in position order whose position is
    position or more (the file's size when there is none)."""
    size = os.path.getsize(path)
    # Lines starting before low are before position; lines starting at or after high are not.
    low, high = 0, size
    with open(path, "rb") as file:
        while high - low > _READ_BYTES:
            middle = next_line_start(file, (low + high) // 2, high)
            if middle >= high:
                break
            file.seek(middle)
            line = file.readline()
            if _position(line) < position:
                low = middle + len(line)
            else:
                high = middle
        file.seek(low)
        offset = low
        while offset < high:
            line = file.readline()
            if not line or _position(line) >= position:
                break
            offset += len(line)
        return offset


def _position(line: bytes) -> int:
    """The position a line of either file starts with."""
    return int(line[: line.index(b"\t")])


def render_piece(
    origins: str, start: int, end: int, presentations: str, from_offset: int, target: str
) -> int:
    """Render the origins of [start, end) of the origins file, with their presentations read
    from from_offset of the presentations file on, into target; the sum of their records'
    hashes (registry.digest), reduced."""
    hashes = 0
    with (
        open(origins, "rb") as records,
        open(presentations, "rb") as shown,
        open(target, "wb") as out,
    ):
        taken = Presentations(_lines(shown, from_offset, os.path.getsize(presentations)))
        for batch in _batches(records, start, end):
            rendered, batch_hashes = render_lines(batch, taken)
            out.write(rendered)
            hashes = (hashes + batch_hashes) % MODULUS
    return hashes


class OriginRender:
    """Rendering of one load's records: in worker processes, beside the loader.

    The loader writes the origins' fields to `source` and their presentations to
    `presentations` (COPY text, both in position order), calls start(), goes on with its
    other steps, then reads rendered() to send the documents with COPY. Leaving the `with`
    block ends the workers and deletes the files, whatever happened.
    """

    def __init__(self, origins: int, workers: int | None = None):
        self._directory = tempfile.TemporaryDirectory(prefix="registry-render-")
        self.source = os.path.join(self._directory.name, "sources.copy")
        self.presentations = os.path.join(self._directory.name, "presentations.copy")
        self._origins = origins
        self._workers = worker_count() if workers is None else workers
        self._processes = WorkerProcesses()
        self._pieces: list[tuple[int, str]] = []
        # The sum of the hashes of the pieces rendered so far (the generation's digest once
        # rendered() has given every piece).
        self._hashes = 0
        self._rendered = False

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
        with open(self.source, "rb") as source:
            for number, (start, end) in enumerate(line_ranges(self.source, 0, size, self._workers)):
                source.seek(start)
                shown = first_line_from(self.presentations, _position(source.readline()))
                target = os.path.join(self._directory.name, f"rendered-{number}.copy")
                open(target, "wb").close()  # readable from the start, by rendered()
                worker = self._processes.start(
                    render_piece, self.source, start, end, self.presentations, shown, target
                )
                self._pieces.append((worker, target))

    def rendered(self) -> Iterator[bytes]:
        """The rendered records in position order, in blocks.

        A piece's records are given while its worker writes them, so that whoever sends
        them (registry.loader.beside) need not wait for the whole render; a worker that
        failed raises WorkerFailed once what it wrote has been given.
        """
        if not self._pieces:  # a small graph: rendered here, now
            target = os.path.join(self._directory.name, "rendered.copy")
            size = os.path.getsize(self.source)
            self._hashes = render_piece(self.source, 0, size, self.presentations, 0, target)
            self._pieces.append((-1, target))
        for number, target in self._pieces:
            with open(target, "rb") as file:
                while True:
                    # Finished before this read means this read sees all it wrote.
                    finished = number < 0 or self._processes.done(number)
                    if block := file.read(_READ_BYTES):
                        yield block
                    elif finished:
                        break
                    else:
                        self._processes.wait_for(number, _POLL_S)
            if number >= 0:
                self._hashes += self._processes.result(number)
        self._rendered = True

    @property
    def digest(self) -> str:
        """The digest of the records rendered (registry.digest), once rendered() is done."""
        if not self._rendered:
            raise RuntimeError("the digest is known once every record is rendered")
        return as_hex(self._hashes)
