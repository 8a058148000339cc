"""An export's lines parsed and hashed, in a second process when the export is large
(docs/mirror.md, "A step").

Per line, an export reads the origin's id, hashes the line and checks that it is UTF-8, then
the store inserts it. The service sends each record in its canonical form (docs/api.md,
"Digests"), so the SHA-256 of the line as sent is its h, and the sum over the export must be
the answer's `Registry-Digest`: that sum proves the lines are the canonical records of the
generation, byte for byte, without writing any record again. Only the id is decoded (msgspec,
into the one field it needs; the rest of the line is checked as JSON and skipped), a sixth of
what a whole parse into Python objects costs. A graph the service rendered before it sorted
keys sends other bytes for the same records; the step then recomputes the digest from the
records themselves (registry/mirror/steps.py).

That work overlaps with the inserts only in another process (Python runs one thread of a
process at a time): it reads and hashes batch k + 1 while the mirror inserts batch k and reads
the next from the body.

The second process is a child started fresh (spawn: nothing of the mirror's state, threads
or connections is copied into it), ignores SIGINT and SIGTERM (the mirror decides when a
step ends, and a terminal's Ctrl-C or systemd's SIGTERM reaches the whole group), and holds
only its own end of one pipe: when the mirror closes its end, or dies (kill -9 included), the
child's next read ends and so does the child. It writes nothing anywhere; the step's
transaction stays the mirror's alone.
"""

from __future__ import annotations

import gc
import multiprocessing
import signal
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from typing import Any

import msgspec

from registry.digest import canonical_hash
from registry.mirror.client import Failed

# By default, an export of fewer lines is parsed in the mirror's own process: it ends in about
# the time the second process takes to start (0.2 to 0.4 s). `--second-process-from` sets it.
SECOND_PROCESS_FROM = 20_000
# How long a second process that was told to end gets before it is killed.
END_WAIT_S = 5.0

# A batch parsed: its lines, each line's origin id, the sum of the lines' hashes.
Parsed = tuple[list[bytes], list[str], int]


class _Origin(msgspec.Struct):
    """The one field of an Origin record's `origin` block an export needs."""

    id: str


class _Record(msgspec.Struct):
    """An exported line as far as the mirror reads it: `origin.id`."""

    origin: _Origin


_READ_ID = msgspec.json.Decoder(_Record)


def exported(lines: list[bytes], before: int) -> tuple[list[str], int]:
    """The origin id of each exported line and the sum of the lines' hashes, `before` the
    lines of the body ahead of these (for the line number of an error)."""
    utf8(lines, before)
    try:
        ids = [_READ_ID.decode(line).origin.id for line in lines]
    except msgspec.MsgspecError:
        for number, line in enumerate(lines, before + 1):
            try:
                _READ_ID.decode(line)
            except msgspec.ValidationError as error:  # a DecodeError too: asked first
                raise Failed(
                    f"an exported line without origin.id (line {number}): {error}"
                ) from error
            except msgspec.DecodeError as error:
                raise Failed(f"line {number} of the body is not JSON: {error}") from error
        raise
    return ids, sum(map(canonical_hash, lines))


def utf8(lines: list[bytes], before: int) -> None:
    """Raise Failed unless every line is UTF-8 (the id's decoder skips the rest of a line
    unread; the stores take the lines as they came)."""
    text = b"\n".join(lines)
    try:
        text.decode("utf-8")
    except UnicodeDecodeError as error:
        number = before + 1 + text.count(b"\n", 0, error.start)
        raise Failed(f"line {number} of the body is not UTF-8") from None


@contextmanager
def parsing(
    batches: Iterable[list[bytes]], expected: int, apart_from: int
) -> Iterator[Iterator[Parsed]]:
    """The export's batches parsed, in order: in a second process when `expected` lines are
    `apart_from` or more, else here."""
    if expected < apart_from:
        yield _here(batches)
        return
    helper = Helper()
    try:
        yield helper.pipelined(batches)
    finally:
        helper.close()


def _here(batches: Iterable[list[bytes]]) -> Iterator[Parsed]:
    """Each batch parsed in this process."""
    before = 0
    for lines in batches:
        yield (lines, *exported(lines, before))
        before += len(lines)


class Helper:
    """The second process, one batch ahead of the mirror."""

    def __init__(self) -> None:
        context = multiprocessing.get_context("spawn")
        self._pipe, theirs = context.Pipe()
        self._process = context.Process(
            target=serve, args=(theirs,), name="registry-mirror-parser", daemon=True
        )
        self._process.start()
        theirs.close()

    def pipelined(self, batches: Iterable[list[bytes]]) -> Iterator[Parsed]:
        """Each batch parsed, in order. While the caller uses batch k, the helper parses
        batch k + 1; the body's next batch is read while the helper parses."""
        items = iter(batches)
        lines = next(items, None)
        if lines is None:
            return
        self._send(lines, 0)
        before = 0  # the lines of the body ahead of `following`, once `lines` is counted
        while True:
            following = next(items, None)
            ids, hashes = self._receive()
            before += len(lines)
            if following is not None:
                self._send(following, before)
            yield lines, ids, hashes
            if following is None:
                return
            lines = following

    def _send(self, lines: list[bytes], before: int) -> None:
        """A batch to parse."""
        try:
            self._pipe.send((lines, before))
        except OSError:
            raise self._ended() from None

    def _receive(self) -> tuple[list[str], int]:
        """The next batch's result; its error raised here."""
        try:
            result = self._pipe.recv()
        except (EOFError, OSError):
            raise self._ended() from None
        if isinstance(result, BaseException):
            raise result
        ids, hashes = result
        return ids, hashes

    def _ended(self) -> Failed:
        """The error for a second process that ended under way (killed, say)."""
        self._process.join(END_WAIT_S)
        return Failed(f"the process parsing the export ended (exit code {self._process.exitcode})")

    def close(self) -> None:
        """End the process: it sees its pipe closed and returns."""
        self._pipe.close()
        self._process.join(END_WAIT_S)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()


def serve(pipe: Connection) -> None:
    """The second process: parse and hash each batch sent until the pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # As in a step (registry/mirror/steps.py): parsed records hold no cycles.
    gc.disable()
    while True:
        try:
            lines, before = pipe.recv()
        except EOFError:
            return
        result: Any
        try:
            result = exported(lines, before)
        except Failed as error:  # raised in the mirror
            result = error
        except Exception as error:  # anything else, in words that pickle
            result = Failed(f"parsing the export failed: {error!r}")
        try:
            pipe.send(result)
        except OSError:  # the mirror is gone
            return
