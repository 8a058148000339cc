"""An export's rows written by a thread of their own while the next batch is parsed and hashed,
for a store whose writing happens mostly outside Python's lock.

Parsing and hashing hold the GIL. psycopg lets it go while it sends COPY data and waits for
the server to take it, and the server does the work in its own process: written behind, an
export into PostgreSQL took a fifth less time. SQLite lets it go only inside each row's step,
and a thread that needs it back after every row waits out the parsing thread's switch
interval each time: an export into SQLite took longer on a thread (a million origins: 20.5
and 21.5 s against 16.0 and 18.0 s written at once), so its rows are written at once. At
most `DEPTH` batches wait, so the mirror's memory stays bounded by a few batches whatever
the export's size. The store's connection is used by one thread at a time: the writer from
the first `put` until the block ends, the step's own before and after.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

Rows = TypeVar("Rows")
# Batches waiting for the writer: one being written and one ready is enough to keep both
# busy; more would only hold memory.
DEPTH = 2


class WriteBehind(Generic[Rows]):
    """One thread that calls `write` on each batch put, in order; the first failure is kept
    and raised to the putting thread, at its next `put` or when the block ends."""

    def __init__(self, write: Callable[[Rows], None]):
        self._write = write
        self._waiting: queue.Queue[Rows | None] = queue.Queue(maxsize=DEPTH)
        self._failure: BaseException | None = None
        self._abandoned = False
        self._thread = threading.Thread(target=self._run, name="mirror-store-writer", daemon=True)
        self._thread.start()

    def put(self, rows: Rows) -> None:
        """Hand a batch to the writer, waiting while DEPTH batches already wait."""
        self._raise_failure()
        self._waiting.put(rows)

    def _run(self) -> None:
        while (rows := self._waiting.get()) is not None:
            if self._failure is None and not self._abandoned:
                try:
                    self._write(rows)
                except BaseException as failure:  # raised again in the putting thread
                    self._failure = failure

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise self._failure

    def finish(self) -> None:
        """Wait until every batch put is written; raise the writer's failure if any."""
        self._waiting.put(None)
        self._thread.join()
        self._raise_failure()

    def abandon(self) -> None:
        """The step failed: skip the batches still waiting, and wait for the one being
        written (the transaction is rolled back after, by this thread)."""
        self._abandoned = True
        self._waiting.put(None)
        self._thread.join()


class WriteNow(Generic[Rows]):
    """Each batch written as it is put, on the putting thread."""

    def __init__(self, write: Callable[[Rows], None]):
        self.put = write


@contextmanager
def write_behind(
    write: Callable[[Rows], None], threaded: bool = True
) -> Iterator[WriteBehind[Rows] | WriteNow[Rows]]:
    """A WriteBehind for the block (a WriteNow unless `threaded`): every batch written when
    it ends, or none more when it raises."""
    if not threaded:
        yield WriteNow(write)
        return
    behind = WriteBehind(write)
    try:
        yield behind
    except BaseException:
        behind.abandon()
        raise
    behind.finish()
