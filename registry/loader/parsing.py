"""The parse of a load: the document read and checked line by line, on every core it may use.

A document in a regular file of PARALLEL_FROM bytes or more is cut into one piece per
worker at line boundaries (registry.loader.workers); each worker reads its piece with a
DocumentReader that knows the number of the piece's first line, so every problem and every
row's source_line carries the document's own line number, and spools its rows to files of
its own. The loader sends them with COPY piece after piece, so each table's rows arrive in
document order as they did from one reader. A document read from standard input, a small
one, or one on a machine of one core, is read by this process alone.

The problems reported are exactly one reader's: the pieces' first problems are joined in
line order and the counts added up. The one rule that spans pieces, at most one catalog and
one feed record, is settled here: a piece's first such record is a problem when an earlier
piece already had one, and the piece's own "second record" problems then name that line.
"""

from __future__ import annotations

import bisect
import io
import os
import stat
import tempfile
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from registry.loader.document import DocumentReader
from registry.loader.records import TABLES, Problem, second_record
from registry.loader.workers import (
    WorkerProcesses,
    count_lines,
    line_ranges,
    shared_counters,
    worker_count,
)

if TYPE_CHECKING:  # workers import this module: they need no progress display (rich)
    from registry.loader.progress import LoadProgress

# Below this size one process parses faster than two start up (about 10,000 origins).
PARALLEL_FROM = 16 << 20
_PROGRESS_EVERY_S = 0.25


@dataclass
class ParsedDocument:
    """What the parse found: counts, lines, problems, and the spooled rows of each piece."""

    counts: dict[str, int]
    lines: int
    problems: list[Problem]
    problem_count: int
    # One spool per table for each piece, in document order, each positioned at its end.
    pieces: list[dict[str, IO[str]]] = field(default_factory=list)

    def close(self) -> None:
        """Close (and so delete) every spool."""
        for spools in self.pieces:
            for spool in spools.values():
                spool.close()


@dataclass(frozen=True)
class ParsedPiece:
    """What one worker found in its piece of the document."""

    counts: dict[str, int]
    lines: int
    problems: list[Problem]
    problem_count: int
    single_records: dict[str, int]


def spool() -> IO[str]:
    """A temporary file for one table's COPY rows; it never holds the document in memory."""
    return tempfile.TemporaryFile("w+", encoding="utf-8", newline="")


def parse_document(
    stream: IO[bytes],
    progress: LoadProgress,
    max_problems: int,
    workers: int | None = None,
    parallel_from: int = PARALLEL_FROM,
) -> ParsedDocument:
    """Read and check the whole document, on up to workers processes (default: the cores)."""
    path = _file_path(stream)
    workers = worker_count() if workers is None else workers
    if path is not None and workers > 1:
        size = os.fstat(stream.fileno()).st_size
        start = stream.tell()
        if size - start >= parallel_from:
            ranges = line_ranges(path, start, size, workers)
            if len(ranges) > 1:
                return _parse_pieces(path, ranges, progress, max_problems)
    spools = {kind: spool() for kind in TABLES}
    reader = DocumentReader(spools, max_problems=max_problems)
    try:
        reader.read(stream, progress.parsed)
    except BaseException:
        for file in spools.values():
            file.close()
        raise
    progress.parsed(reader.lines)
    return ParsedDocument(
        reader.counts, reader.lines, reader.problems, reader.problem_count, [spools]
    )


def _file_path(stream: IO[bytes]) -> str | None:
    """The path of the regular file stream reads, if a worker can open it by that path."""
    name = getattr(stream, "name", None)
    if not isinstance(name, str):
        return None
    name = os.path.abspath(name)
    try:
        opened = os.fstat(stream.fileno())
        named = os.stat(name)
    except (OSError, ValueError, AttributeError):
        return None
    same = (opened.st_dev, opened.st_ino) == (named.st_dev, named.st_ino)
    return name if same and stat.S_ISREG(opened.st_mode) else None


def _parse_pieces(
    path: str, ranges: list[tuple[int, int]], progress: LoadProgress, max_problems: int
) -> ParsedDocument:
    """One worker per range; the loader counts each range's lines to number the next one."""
    spool_dir = tempfile.mkdtemp(prefix="registry-load-")
    counters = shared_counters(2 * len(ranges))
    pieces: list[dict[str, IO[str]]] = []
    try:
        with WorkerProcesses() as workers:
            first_line = 1
            for number, (start, end) in enumerate(ranges):
                workers.start(
                    parse_piece,
                    path,
                    start,
                    end,
                    first_line,
                    spool_dir,
                    number,
                    counters,
                    max_problems,
                )
                if number + 1 < len(ranges):
                    first_line += count_lines(path, start, end)
            running = set(range(len(ranges)))
            while running:
                workers.wait_any(_PROGRESS_EVERY_S)
                for number in [number for number in running if workers.done(number)]:
                    workers.result(number)  # a failed worker ends the load now
                    running.discard(number)
                _report(progress, counters)
            results: list[ParsedPiece] = [workers.result(n) for n in range(len(ranges))]
        for number in range(len(ranges)):
            pieces.append(_open_spools(spool_dir, number))
    except BaseException:
        for spools in pieces:
            for file in spools.values():
                file.close()
        raise
    finally:
        _remove_dir(spool_dir)
    parsed = _merge(results, max_problems)
    parsed.pieces = pieces
    progress.parsed(parsed.lines, ranges[-1][1])
    return parsed


def _report(progress: LoadProgress, counters: Any) -> None:
    """The workers' lines and bytes so far, summed, to the progress display."""
    values = list(counters)
    progress.parsed(sum(values[0::2]), sum(values[1::2]))


def _merge(results: list[ParsedPiece], max_problems: int) -> ParsedDocument:
    """The pieces' findings as one reader of the whole document would have made them."""
    counts = dict.fromkeys(results[0].counts, 0)
    problems: list[Problem] = []
    total = 0
    firsts: dict[str, int] = {}
    for piece in results:
        for kind, count in piece.counts.items():
            counts[kind] += count
        found = list(piece.problems)
        total += piece.problem_count
        for kind, own in sorted(piece.single_records.items(), key=lambda item: item[1]):
            first = firsts.setdefault(kind, own)
            if first == own:
                continue
            # The piece took its first record for the document's first: it is a second one,
            # and the piece's later ones are seconds of the document's first.
            mistaken = second_record(0, kind, own).message
            found = [
                second_record(p.line, kind, first) if p.message == mistaken else p for p in found
            ]
            # Its line had no problem of its own (the record passed), so it goes in line
            # order: past the piece's first problems it is cut below, and only counts.
            at = bisect.bisect_left([p.line for p in found], own)
            found.insert(at, second_record(own, kind, first))
            total += 1
            counts[kind] -= 1
        problems.extend(found[: max(0, max_problems - len(problems))])
    return ParsedDocument(counts, results[-1].lines, problems, total)


def _open_spools(spool_dir: str, number: int) -> dict[str, IO[str]]:
    """Piece number's spools, opened for COPY and positioned at their end (their size)."""
    spools: dict[str, IO[str]] = {}
    for kind in TABLES:
        file = open(_spool_path(spool_dir, number, kind), encoding="utf-8", newline="")  # noqa: SIM115
        file.seek(0, os.SEEK_END)
        spools[kind] = file
    return spools


def _spool_path(spool_dir: str, number: int, kind: str) -> str:
    """Where piece number spools the rows of one record type."""
    return os.path.join(spool_dir, f"{number}-{kind}.copy")


def _remove_dir(spool_dir: str) -> None:
    """Delete the workers' spool files (those still open stay readable until closed)."""
    for name in os.listdir(spool_dir):
        os.unlink(os.path.join(spool_dir, name))
    os.rmdir(spool_dir)


class _Piece:
    """[start, end) of a binary file, read line by line out of blocks of BLOCK bytes.

    A buffered file's readline with a size limit costs several times an in-memory one's, and
    the parse reads millions of lines; a line that runs past a block's end is completed from
    the next one, so lines come out exactly as the file holds them.
    """

    BLOCK = 4 << 20

    def __init__(self, file: IO[bytes], start: int, end: int):
        file.seek(start)
        self._file = file
        self._left = end - start
        self._block = io.BytesIO()
        self.position = start

    def readline(self, size: int = -1, /) -> bytes:
        """The next line of the piece, at most size bytes of it."""
        line = self._block.readline(size)
        while not line.endswith(b"\n") and (size < 0 or len(line) < size) and self._refill():
            line += self._block.readline(size - len(line) if size >= 0 else -1)
        self.position += len(line)
        return line

    def _refill(self) -> bool:
        """The piece's next block in memory; False at the piece's end."""
        block = self._file.read(min(self.BLOCK, self._left))
        if not block:
            return False
        self._left -= len(block)
        self._block = io.BytesIO(block)
        return True


def parse_piece(
    path: str,
    start: int,
    end: int,
    first_line: int,
    spool_dir: str,
    number: int,
    counters: Any,
    max_problems: int,
) -> ParsedPiece:
    """In a worker: read [start, end) of the document, whose first line is first_line."""
    spools: dict[str, IO[str]] = {
        kind: open(_spool_path(spool_dir, number, kind), "w", encoding="utf-8", newline="")  # noqa: SIM115
        for kind in TABLES
    }
    try:
        reader = DocumentReader(spools, max_problems=max_problems)
        with open(path, "rb") as document:
            piece = _Piece(document, start, end)

            def report(line: int) -> None:
                counters[2 * number] = line - first_line + 1
                counters[2 * number + 1] = piece.position - start

            reader.read(piece, report, first_line=first_line)
        counters[2 * number] = reader.lines - first_line + 1
        counters[2 * number + 1] = end - start
    finally:
        for spool_file in spools.values():
            spool_file.close()
    return ParsedPiece(
        reader.counts, reader.lines, reader.problems, reader.problem_count, reader.single_records
    )
