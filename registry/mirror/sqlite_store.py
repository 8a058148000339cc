"""The copy in a SQLite file, the default store (docs/mirror.md, "The store").

WAL journal mode: readers of the copy keep reading the generation committed while a step
writes, and a step's rows reach the file's WAL only as part of a transaction that is either
committed there or ignored when the file is next opened, so a process killed at any instant
(kill -9 included) leaves the previous generation or the new one, never half a step.
`synchronous=FULL` makes a committed step survive a power loss too (one fsync per step).

The first step into a file that does not exist yet is built beside it instead, in
`TARGET.new`, without a journal, and renamed into place once committed, synced and switched to
WAL (`SqliteStore._first_step`). A WAL would write the export's rows twice, into the log and
then into the file at the checkpoint: a million origins are 900 MB, and the second write and
its fsync were a quarter of a first sync. Until the rename there is no copy at all, so a
process killed during the first step leaves none (and a `TARGET.new` the next run starts
over), and nobody can be reading one.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson

from registry.mirror.stores import (
    MirrorRow,
    NamedTwice,
    Snapshot,
    StoreBusy,
    StoreUnusable,
    batched,
    statements,
)

SQL = statements("sqlite")
# How long a step waits for another writer of the file (a user's own, briefly) before it
# reports the copy busy.
BUSY_TIMEOUT_S = 10.0
# The WAL is cut back to this size after a checkpoint: an export writes the whole copy into
# it once, and without a limit the file would keep that size.
JOURNAL_SIZE_LIMIT = 64 * 1024 * 1024
# SQLite's page cache, in KiB (a negative cache_size): room for the id index of a copy of a
# million origins. Changes come in no id order, so each lands on a random leaf of that index;
# with the default 2 MB the leaves are evicted and read again from the log, and an insert
# cost about twice as much (measured at 300,000 rows). The cache is taken as pages are used,
# so a small copy costs no more; it bounds the mirror's memory with the batches
# (docs/mirror.md).
CACHE_KIB = 64 * 1024
# The page cache of an export, which appends rows and then builds the id index by sorting;
# with CACHE_KIB the sort took as much again, and the mirror's peak resident size went from
# 135 to 210 MB (a million origins); with this, 101 MB, in the same time.
EXPORT_CACHE_KIB = 16 * 1024
READ_BATCH = 2000


class SqliteWriter:
    """A step's writes, inside the transaction SqliteStore.step began."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        # An export cleared the copy and its id index: built again by `index`, which every
        # other statement of the step, and its commit, call first.
        self._unindexed = False

    def state(self) -> MirrorRow | None:
        """The mirror row, or None."""
        self.index()
        return _row(self.conn)

    def clear(self) -> None:
        """Remove every origin, and the id index until `index`."""
        # Not executescript: it commits the step's transaction first.
        self.conn.execute(SQL["drop_origins_index"])
        self.conn.execute(SQL["clear_origins"])
        # Rows are appended now and the index is sorted at the end: a small page cache does,
        # and it bounds the sort's memory too (SQLite sorts within cache_size).
        self.conn.execute(f"PRAGMA cache_size = -{EXPORT_CACHE_KIB}")
        self._unindexed = True

    def index(self) -> None:
        """Build the id index again after an export's inserts."""
        if not self._unindexed:
            return
        self._unindexed = False
        try:
            self.conn.execute(SQL["index_origins"])
        except sqlite3.IntegrityError as error:
            raise NamedTwice(error) from error

    def insert(self, ids: list[str], records: list[bytes]) -> None:
        """Add rows the copy does not hold. The records go in as the bytes that came and
        are stored as text (sql/mirror/sqlite/insert_origin.sql): nothing decodes them."""
        try:
            self.conn.executemany(SQL["insert_origin"], zip(ids, records, strict=True))
        except sqlite3.IntegrityError as error:  # a copy made with the id a primary key
            raise NamedTwice(error) from error

    def records(self) -> Iterator[list[str]]:
        """Every record held, a batch at a time, in this transaction."""
        self.index()
        return batched(self.conn.execute(SQL["all_records"]), READ_BATCH)

    def held(self, ids: list[str]) -> dict[str, str]:
        """The records held for these ids."""
        self.index()
        found = self.conn.execute(SQL["get_held"], (orjson.dumps(ids).decode(),))
        return dict(found.fetchall())

    def upsert(self, rows: list[tuple[str, str]]) -> None:
        """Add or replace rows."""
        self.index()
        self.conn.executemany(SQL["upsert_origin"], rows)

    def delete(self, ids: list[str]) -> None:
        """Remove these ids."""
        self.index()
        if ids:
            self.conn.execute(SQL["delete_origins"], (orjson.dumps(ids).decode(),))

    def set_state(self, row: MirrorRow) -> None:
        """Write the mirror row."""
        self.index()
        self.conn.execute(
            SQL["set_state"],
            {
                "url": row.url,
                "generation": row.generation,
                "digest": row.digest,
                "etag": row.etag,
                "synced_at": row.synced_at,
            },
        )


class SqliteStore:
    """A copy in one SQLite file."""

    def __init__(self, target: str, conn: sqlite3.Connection | None, busy_timeout_s: float):
        self.target = target
        # None until the first step has made the file.
        self.conn = conn
        self.busy_timeout_s = busy_timeout_s

    @classmethod
    def open(
        cls, target: str, create: bool, busy_timeout_s: float = BUSY_TIMEOUT_S
    ) -> SqliteStore | None:
        """The file's copy; with `create`, its tables made when missing, and a store with no
        file yet when the file is missing (its first step makes it); without, None when the
        file or its tables are missing."""
        path = Path(target)
        if not path.is_file():
            return cls(target, None, busy_timeout_s) if create else None
        conn = _connect(target, busy_timeout_s)
        try:
            if create:
                conn.executescript("BEGIN IMMEDIATE;\n" + SQL["create_tables"] + "\nCOMMIT;")
            elif conn.execute(SQL["count_tables"]).fetchone()[0] != 2:
                conn.close()
                return None
        except sqlite3.DatabaseError as error:
            conn.close()
            raise StoreUnusable(f"{target}: {error}") from error
        return cls(target, conn, busy_timeout_s)

    def state(self) -> MirrorRow | None:
        """The mirror row, or None."""
        return None if self.conn is None else _row(self.conn)

    @contextmanager
    def step(self) -> Iterator[SqliteWriter]:
        """One write transaction, taken before the step asks the service anything, so that
        a second mirror of the same file waits or is told it is busy."""
        if self.conn is None:
            with self._first_step() as writer:
                yield writer
            return
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            self.conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")  # an export lowers it
        except sqlite3.OperationalError as error:
            raise StoreBusy(
                f"{self.target} is being written by another process: {error}"
            ) from error
        try:
            writer = SqliteWriter(self.conn)
            yield writer
            writer.index()
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    @contextmanager
    def _first_step(self) -> Iterator[SqliteWriter]:
        """The first step, while TARGET does not exist: built in TARGET.new, under a lock
        that tells a second mirror making the same file that it is busy, then renamed into
        place whole. When TARGET appeared meanwhile (another mirror made it), the step is an
        ordinary one in it."""
        path = Path(self.target)
        building = path.with_name(path.name + ".new")
        with open(building, "ab") as lock:  # not truncated before the lock is held
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as error:
                raise StoreBusy(f"{self.target} is being made by another process") from error
            if path.is_file():
                building.unlink()
                self.conn = _connect(self.target, self.busy_timeout_s)
                with self.step() as writer:
                    yield writer
                return
            # What a killed first step left: the file, and the log it was switching to.
            lock.truncate(0)
            for log in ("-wal", "-shm"):
                Path(f"{building}{log}").unlink(missing_ok=True)
            conn = sqlite3.connect(building, isolation_level=None)
            try:
                conn.execute("PRAGMA journal_mode = OFF")
                conn.execute("PRAGMA synchronous = OFF")
                conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
                conn.executescript(SQL["create_tables"])
                conn.execute("BEGIN")
                writer = SqliteWriter(conn)
                yield writer
                writer.index()
                conn.execute("COMMIT")
                if conn.execute("PRAGMA journal_mode = WAL").fetchone()[0] != "wal":
                    raise StoreUnusable(
                        f"{self.target}: SQLite cannot keep a write-ahead log there"
                    )
                conn.close()
                _sync(building)
                building.rename(path)
                _sync(path.parent)
            except BaseException:
                conn.close()
                building.unlink(missing_ok=True)
                raise
        self.conn = _connect(self.target, self.busy_timeout_s)

    def count(self) -> int:
        """How many origins the copy holds."""
        if self.conn is None:
            return 0
        return int(self.conn.execute(SQL["count_origins"]).fetchone()[0])

    @contextmanager
    def snapshot(self) -> Iterator[Snapshot]:
        """The row and every record, in one read transaction (WAL: one snapshot)."""
        if self.conn is None:
            yield Snapshot(None, iter(()))
            return
        self.conn.execute("BEGIN")
        try:
            row = _row(self.conn)
            cursor = self.conn.execute(SQL["all_records"])
            yield Snapshot(row, batched(iter(cursor), READ_BATCH))
        finally:
            self.conn.execute("ROLLBACK")

    def close(self) -> None:
        """Close the file."""
        if self.conn is not None:
            self.conn.close()


def _connect(target: str, busy_timeout_s: float) -> sqlite3.Connection:
    """A connection to the copy's file, in WAL mode, with the store's settings."""
    try:
        # Autocommit: the store says where each transaction begins and ends itself.
        conn = sqlite3.connect(target, timeout=busy_timeout_s, isolation_level=None)
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute(f"PRAGMA journal_size_limit = {JOURNAL_SIZE_LIMIT}")
        conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
    except sqlite3.DatabaseError as error:
        raise StoreUnusable(f"{target}: {error}") from error
    if mode != "wal":
        conn.close()
        raise StoreUnusable(f"{target}: SQLite cannot keep a write-ahead log there")
    return conn


def _sync(path: Path) -> None:
    """fsync a file or a folder: what was written there, or the names it holds."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _row(conn: sqlite3.Connection) -> MirrorRow | None:
    """The mirror row of this connection's view."""
    found = conn.execute(SQL["get_state"]).fetchone()
    return None if found is None else MirrorRow(*found)
