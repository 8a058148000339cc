"""One step of the mirror: bring the copy to the service's newest generation in one
transaction, and prove it there by the digest (docs/mirror.md, "A step" and "Proof").

The copy's digest is kept as the integer sum of its records' hashes (registry/digest.py):
an export adds the hash of every line as sent (each the canonical form of its record,
registry/mirror/parser.py); a change subtracts the hash of the record the copy
really holds for that id (read back from the store, never taken from the change's `before`,
so a copy that drifted cannot prove itself equal) and adds the hash of `after`. The sum
after the step must equal the answer's `Registry-Digest`, or the step is rolled back.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from registry.digest import as_hex, from_hex, record_hash, text_hash
from registry.mirror.body import batches, parsed, stamp, total
from registry.mirror.client import NDJSON, Answer, Client, Failed
from registry.mirror.parser import exported
from registry.mirror.stores import MirrorRow, Store, Writer, utc_now

EXPORT_PATH = "/registry/origins"
CHANGE_KINDS = ("added", "removed", "changed")


class Progress(Protocol):
    """What an export reports as it goes (a bar on a terminal, nothing elsewhere)."""

    def start(self, total: int) -> None:
        """The export announced `total` origins."""

    def advance(self, rows: int) -> None:
        """`rows` more were written."""

    def stop(self) -> None:
        """The export ended, whole or not."""


class DigestMismatch(Exception):
    """The copy after a step is not the generation the service answered."""

    def __init__(self, what: str, held: str, served: str):
        super().__init__(f"{what}, digest mismatch (copy {held}, service {served})")


@dataclass
class Step:
    """What a step needs: the service, the copy, the URL it mirrors, where lines go."""

    client: Client
    store: Store
    url: str
    report: Callable[[str], None]
    progress: Progress
    stop: threading.Event

    def run(self, export: bool) -> int:
        """One step in one transaction: an export when `export` or when there is no copy,
        else the changes since the copy's generation. The generation reached."""
        with no_cycle_collection(), self.store.step() as writer:
            copy = writer.state()
            if copy is None or export:
                return self._export(writer)
            return self._catch_up(writer, copy)

    def _catch_up(self, writer: Writer, copy: MirrorRow) -> int:
        """Apply the changes since the copy's generation, or export again when the service
        no longer has them (410) or never had that generation (404)."""
        since = copy.generation
        conditional = {"If-None-Match": copy.etag} if copy.etag else {}
        path = f"/registry/changes?since={since}"
        with self.client.get(path, NDJSON, conditional) as answer:
            if answer.status in (404, 410):
                answer.message()  # read whole, so that the export reuses the connection
                self.report(f"since {since} is gone ({answer.status}): exporting again")
            elif answer.status == 304:
                return self._not_modified(writer, copy, answer)
            else:
                _expect_200(answer, path)
                return self._apply(writer, copy, answer)
        return self._export(writer)

    def _not_modified(self, writer: Writer, copy: MirrorRow, answer: Answer) -> int:
        """304: nothing to apply, but the copy must still be the digest of the generation."""
        generation, served = stamp(answer)
        line = f"generation {generation}: not modified"
        if generation != copy.generation or served != copy.digest:
            raise DigestMismatch(line, copy.digest, served)
        writer.set_state(_row(copy.url, generation, copy.digest, copy.etag))
        self.report(line)
        return generation

    def _apply(self, writer: Writer, copy: MirrorRow, answer: Answer) -> int:
        """Apply a body of changes batch by batch, keeping the digest as it goes."""
        generation, served = stamp(answer)
        expected = total(answer)
        digest = from_hex(copy.digest)
        before = 0
        for lines in batches(answer, expected, self.stop):
            digest += _apply_batch(writer, parsed(lines, before))
            before += len(lines)
        held = as_hex(digest)
        since = copy.generation
        unchanged = generation == since and expected == 0
        if unchanged:
            what = f"generation {since}: not modified"
        else:
            what = f"generation {since} -> {generation}: {expected} changes"
        if held != served:
            raise DigestMismatch(what, held, served)
        # The ETag names this URL (since=<since>): worth sending only while since stays.
        etag = answer.header("ETag") if generation == since else None
        writer.set_state(_row(copy.url, generation, held, etag))
        self.report(what if unchanged else f"{what}, digest ok")
        return generation

    def _export(self, writer: Writer) -> int:
        """Replace the copy with an export of every origin."""
        with self.client.get(EXPORT_PATH, NDJSON) as answer:
            _expect_200(answer, EXPORT_PATH)
            generation, served = stamp(answer)
            expected = total(answer)
            writer.clear()
            digest = 0
            self.progress.start(expected)
            before = 0  # the lines of the body ahead of this batch
            try:
                for lines in batches(answer, expected, self.stop):
                    ids, hashes = exported(lines, before)
                    digest += hashes
                    writer.insert(ids, lines)
                    before += len(lines)
                    self.progress.advance(len(lines))
            finally:
                self.progress.stop()
            writer.index()
        held = as_hex(digest)
        if held != served:
            # Lines that are not the records' canonical form (a graph rendered before the
            # service sorted keys) hash differently: the records themselves decide.
            held = as_hex(sum(text_hash(text) for batch in writer.records() for text in batch))
        what = f"exported generation {generation}: {expected} origins"
        if held != served:
            raise DigestMismatch(what, held, served)
        writer.set_state(_row(self.url, generation, held, None))
        self.report(f"{what}, digest ok")
        return generation


@contextmanager
def no_cycle_collection() -> Iterator[None]:
    """Python's cycle collector paused for a step. A batch holds thousands of parsed records
    (about 40 objects each) alive at once, and the collector went over them again and again:
    5 % of the instructions of parsing and hashing a batch (callgrind, 10,000 records). The
    records hold no cycles and are freed by their reference counts, so nothing waits for the
    collector."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _apply_batch(writer: Writer, changes: list[Any]) -> int:
    """Apply one batch of changes; what it adds to the copy's digest (held records out,
    `after` records in)."""
    ids = [_change_id(change) for change in changes]
    if len(set(ids)) != len(ids):
        raise Failed("a body of changes names the same origin twice")
    held = writer.held(ids)
    delta = -sum(text_hash(text) for text in held.values())
    removed: list[str] = []
    replaced: list[tuple[str, str]] = []
    for origin_id, change in zip(ids, changes, strict=True):
        if change.get("kind") == "removed":
            removed.append(origin_id)
            continue
        after = change.get("after")
        if change.get("kind") not in CHANGE_KINDS or not isinstance(after, dict):
            raise Failed(f"not a change the mirror knows: {orjson.dumps(change)[:200]!r}")
        delta += record_hash(after)
        replaced.append((origin_id, orjson.dumps(after).decode("utf-8")))
    writer.delete(removed)
    writer.upsert(replaced)
    return delta


def _change_id(change: Any) -> str:
    """A change's origin id."""
    if not isinstance(change, dict) or not isinstance(change.get("id"), str):
        raise Failed(f"a change without an id: {orjson.dumps(change)[:200]!r}")
    return str(change["id"])


def _expect_200(answer: Answer, path: str) -> None:
    """Anything but 200 here is an answer the mirror cannot go on from."""
    if answer.status != 200:
        raise Failed(f"GET {path} answered {answer.status}: {answer.message()}")


def _row(url: str, generation: int, digest: str, etag: str | None) -> MirrorRow:
    """The mirror row after a step, proven now."""
    return MirrorRow(url, generation, digest, etag, utc_now())
