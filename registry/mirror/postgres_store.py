"""The copy in a PostgreSQL database, in the schema `registry_mirror` (docs/mirror.md).

A step is one transaction: readers see the previous generation until it commits (an export
deletes the old rows rather than truncating them, so readers are never locked out), and a
mirror killed half-way leaves a transaction the server rolls back.
"""

from __future__ import annotations

import struct
from collections.abc import Generator, Iterator
from contextlib import ExitStack, closing, contextmanager, suppress

import psycopg
from psycopg.copy import Copy, QueuedLibpqWriter

from registry.mirror.stores import (
    MirrorRow,
    NamedTwice,
    Snapshot,
    StoreBusy,
    StoreUnusable,
    batched,
    shown,
    statements,
)

SQL = statements("postgresql")
CONNECT_TIMEOUT_S = 10
READ_BATCH = 2000
# Blocks of COPY data (psycopg's, 32 KB each) queued for the writer's thread. psycopg queues
# up to 1024 (32 MB); when the server is slower than the mirror, as in an export, the queue
# stays full, so the whole of it is the mirror's memory. A few megabytes keep the thread
# writing while the mirror makes the next batch.
QUEUED_BLOCKS = 64


class BoundedWriter(QueuedLibpqWriter):
    """psycopg's queued COPY writer (the server inserts while the mirror parses) with a
    queue of QUEUED_BLOCKS instead of psycopg's 1024."""

    def __init__(self, cursor: psycopg.Cursor[object]):
        super().__init__(cursor)
        # psycopg's own queue class (its get() can be interrupted), with a smaller bound.
        self._queue = type(self._queue)(maxsize=QUEUED_BLOCKS)


class PostgresWriter:
    """A step's writes, inside the transaction PostgresStore.step began."""

    def __init__(self, conn: psycopg.Connection):
        self.conn = conn
        # An export's one COPY, from its first insert to `index` (or the step's failure).
        self._copying: ExitStack | None = None
        self._copy: Copy | None = None

    def state(self) -> MirrorRow | None:
        """The mirror row, or None."""
        self.index()
        return _row(self.conn)

    def clear(self) -> None:
        """Remove every origin."""
        self.index()
        self.conn.execute(SQL["clear_origins"])

    def insert(self, ids: list[str], records: list[bytes]) -> None:
        """Add rows the copy does not hold, into the export's one COPY (binary). A batch
        goes as one block framed here (copy_rows), the records as the bytes that came, not
        row by row through psycopg: that, and decoding each line, were a third of the
        mirror's own time in an export. psycopg's queued writer sends the data from a thread
        of its own, so the server inserts while the mirror parses the next batch."""
        try:
            if self._copy is None:
                copying = ExitStack()
                cursor = self.conn.cursor()
                writer = BoundedWriter(cursor)
                self._copy = copying.enter_context(cursor.copy(SQL["copy_origins"], writer=writer))
                self._copying = copying
                self._copy.write(COPY_HEADER)
            self._copy.write(copy_rows(ids, records))
        except psycopg.errors.UniqueViolation as error:
            raise _named_twice(error) from error

    def records(self) -> Iterator[list[str]]:
        """Every record held, a batch at a time, in this transaction."""
        self.index()
        yield from _records(self.conn)

    def index(self) -> None:
        """End the export's COPY: its rows are in, under the primary key kept throughout
        (dropping its index would lock readers of the copy out until the export commits).
        Every other statement of the step ends it first too: the connection serves nothing
        else while a COPY is open."""
        copying, self._copying, copy = self._copying, None, self._copy
        self._copy = None
        if copying is not None:
            try:
                if copy is not None:
                    copy.write(COPY_TRAILER)
                copying.close()
            except psycopg.errors.UniqueViolation as error:
                raise _named_twice(error) from error

    def abandon(self) -> None:
        """The step failed: end a COPY under way, so that the transaction can roll back."""
        copying, self._copying, self._copy = self._copying, None, None
        if copying is not None:
            with suppress(psycopg.Error):
                copying.__exit__(Exception, Exception("the step failed"), None)

    def held(self, ids: list[str]) -> dict[str, str]:
        """The records held for these ids."""
        self.index()
        found = self.conn.execute(SQL["get_held"], {"ids": ids}).fetchall()
        return {origin_id: record for origin_id, record in found}

    def upsert(self, rows: list[tuple[str, str]]) -> None:
        """Add or replace rows."""
        self.index()
        if rows:
            self.conn.cursor().executemany(SQL["upsert_origin"], rows)

    def delete(self, ids: list[str]) -> None:
        """Remove these ids."""
        self.index()
        if ids:
            self.conn.execute(SQL["delete_origins"], {"ids": ids})

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


class PostgresStore:
    """A copy in one PostgreSQL database."""

    def __init__(self, target: str, conn: psycopg.Connection):
        self.target = target
        self.conn = conn

    @classmethod
    def open(cls, target: str, create: bool) -> PostgresStore | None:
        """The database's copy; with `create`, the schema and tables made when missing;
        without, None when they are missing."""
        conn = _connect(target)
        if create:
            with conn.transaction():
                conn.execute(SQL["lock_setup"])
                conn.execute(SQL["create_tables"])
        else:
            exists = conn.execute(SQL["tables_exist"]).fetchone()
            if not (exists and exists[0]):
                conn.close()
                return None
        return cls(target, conn)

    def state(self) -> MirrorRow | None:
        """The mirror row, or None."""
        return _row(self._usable())

    @contextmanager
    def step(self) -> Iterator[PostgresWriter]:
        """One transaction, holding the copy's advisory lock so that a second mirror of
        the same database is told it is busy."""
        conn = self._usable()
        with conn.transaction():
            locked = conn.execute(SQL["try_lock_step"]).fetchone()
            if not (locked and locked[0]):
                raise StoreBusy(f"another registry mirror is writing to {shown(self.target)}")
            writer = PostgresWriter(conn)
            try:
                yield writer
                writer.index()
            except BaseException:
                writer.abandon()
                raise

    def count(self) -> int:
        """How many origins the copy holds."""
        found = self._usable().execute(SQL["count_origins"]).fetchone()
        return int(found[0]) if found else 0

    @contextmanager
    def snapshot(self) -> Iterator[Snapshot]:
        """The row and every record, from one REPEATABLE READ snapshot, read a batch at a
        time through a server-side cursor."""
        conn = self._usable()
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        try:
            # The records' cursor is closed before the transaction ends, however far it was
            # read.
            with conn.transaction(), closing(_records(conn)) as records:
                yield Snapshot(_row(conn), records)
        finally:
            conn.isolation_level = None

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    def _usable(self) -> psycopg.Connection:
        """The connection, opened again when the server dropped it between steps (a
        restart while `--follow` waited)."""
        if self.conn.broken or self.conn.closed:
            self.conn = _connect(self.target)
        return self.conn


def copy_rows(ids: list[str], records: list[bytes]) -> bytes:
    """(id, record) rows in COPY's binary format: per row its field count, then each value's
    length and bytes; a jsonb value is its version (1) and its text. Nothing is escaped, and
    the server does not unescape."""
    return b"".join(
        b"%b%b%b%b" % (_ID.pack(2, len(key)), key, _RECORD.pack(len(record) + 1, 1), record)
        for key, record in zip(map(str.encode, ids), records, strict=True)
    )


# Binary COPY's framing: its header (signature, flags, no extension), a row's field count
# and its id's length, its record's length and jsonb's version, the trailer.
COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + bytes(8)
_ID = struct.Struct(">hi")
_RECORD = struct.Struct(">ib")
COPY_TRAILER = b"\xff\xff"


def _records(conn: psycopg.Connection) -> Generator[list[str]]:
    """Every record as this connection's transaction sees it, a batch at a time, through a
    server-side cursor (closed when the batches end or are dropped)."""
    with conn.cursor(name="registry_mirror_records") as cursor:
        cursor.itersize = READ_BATCH
        cursor.execute(SQL["all_records"])
        yield from batched(iter(cursor), READ_BATCH)


def _connect(target: str) -> psycopg.Connection:
    """An autocommit connection: each step says where its transaction begins and ends."""
    try:
        return psycopg.connect(target, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
    except psycopg.Error as error:
        raise StoreUnusable(f"cannot connect to {shown(target)}: {error}") from error


def _row(conn: psycopg.Connection) -> MirrorRow | None:
    """The mirror row of this connection's view."""
    found = conn.execute(SQL["get_state"]).fetchone()
    return None if found is None else MirrorRow(*found)


def _named_twice(error: psycopg.errors.UniqueViolation) -> NamedTwice:
    """The export's duplicate id, in the server's words."""
    return NamedTwice(error.diag.message_detail or error.diag.message_primary)
