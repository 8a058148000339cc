"""The copy in a PostgreSQL database, in the schema `registry_mirror` (docs/mirror.md).

A step is one transaction: readers see the previous generation until it commits (an export
deletes the old rows rather than truncating them, so readers are never locked out), and a
mirror killed half-way leaves a transaction the server rolls back.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

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


class PostgresWriter:
    """A step's writes, inside the transaction PostgresStore.step began."""

    # The server inserts in its own process while the mirror parses the next batch.
    inserts_behind = True

    def __init__(self, conn: psycopg.Connection):
        self.conn = conn

    def state(self) -> MirrorRow | None:
        """The mirror row, or None."""
        return _row(self.conn)

    def clear(self) -> None:
        """Remove every origin."""
        self.conn.execute(SQL["clear_origins"])

    def index(self) -> None:
        """Nothing: the primary key stays through an export, since dropping its index would
        lock readers of the copy out until the export commits."""

    def insert(self, rows: list[tuple[str, str]]) -> None:
        """Add rows the copy does not hold, by COPY (an export writes every origin)."""
        try:
            with self.conn.cursor().copy(SQL["copy_origins"]) as copy:
                for row in rows:
                    copy.write_row(row)
        except psycopg.errors.UniqueViolation as error:
            raise NamedTwice(error.diag.message_detail or error.diag.message_primary) from error

    def held(self, ids: list[str]) -> dict[str, str]:
        """The records held for these ids."""
        found = self.conn.execute(SQL["get_held"], {"ids": ids}).fetchall()
        return {origin_id: record for origin_id, record in found}

    def upsert(self, rows: list[tuple[str, str]]) -> None:
        """Add or replace rows."""
        if rows:
            self.conn.cursor().executemany(SQL["upsert_origin"], rows)

    def delete(self, ids: list[str]) -> None:
        """Remove these ids."""
        if ids:
            self.conn.execute(SQL["delete_origins"], {"ids": ids})

    def set_state(self, row: MirrorRow) -> None:
        """Write the mirror row."""
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
            yield PostgresWriter(conn)

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
            with conn.transaction():
                row = _row(conn)
                with conn.cursor(name="registry_mirror_records") as cursor:
                    cursor.itersize = READ_BATCH
                    cursor.execute(SQL["all_records"])
                    yield Snapshot(row, batched(iter(cursor), READ_BATCH))
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
