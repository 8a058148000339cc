"""A mirror's store as these tests read it, with no help from `registry mirror`: the tables
docs/mirror.md names, `origins (id, record)` and the one-row `mirror (url, generation, digest,
etag, synced_at)`, in a SQLite file or in the schema `registry_mirror` of a PostgreSQL
database. Reads see only what was committed, as the next run of the mirror would."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import orjson
import psycopg
from psycopg.conninfo import conninfo_to_dict

from tests.mirror.registry_stack import identity

MIRROR_COLUMNS = ("url", "generation", "digest", "etag", "synced_at")


def as_url(conninfo: str) -> str:
    """A libpq connection string as the postgresql:// URL `--into` takes."""
    params = conninfo_to_dict(conninfo)
    name = params.pop("dbname")
    return f"postgresql:///{name}?{urlencode(sorted(params.items()))}"


@dataclass
class Store:
    """Where a copy lives: `target` is what `--into` is given."""

    target: str
    kind: str  # "sqlite" or "postgresql"
    conninfo: str = ""  # the database, for "postgresql"

    @property
    def path(self) -> Path:
        """The SQLite file."""
        assert self.kind == "sqlite"
        return Path(self.target)

    def _read(self, statements: list[str], busy_timeout_s: float) -> list[Any] | None:
        """The rows of each query, all from one snapshot of the store; None when the store
        or its tables are not there."""
        if self.kind == "sqlite":
            if not self.path.exists():
                return None
            # A reader rolls back what a killed writer left half done (a hot journal), as the
            # next run of the mirror would; it waits for a writer's lock rather than fail.
            conn = sqlite3.connect(self.path, timeout=busy_timeout_s, isolation_level=None)
            try:
                conn.execute("BEGIN")
                return [conn.execute(statement).fetchall() for statement in statements]
            except sqlite3.OperationalError as error:
                if "no such table" in str(error):
                    return None
                raise
            finally:
                conn.close()
        with psycopg.connect(self.conninfo) as pg:
            pg.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            found = pg.execute("SELECT to_regclass('registry_mirror.mirror')").fetchone()
            if found is None or found[0] is None:
                return None
            pg.execute("SET LOCAL search_path TO registry_mirror")
            return [pg.execute(statement.encode()).fetchall() for statement in statements]

    def state(self, busy_timeout_s: float = 60) -> tuple[dict[str, Any] | None, dict[str, bytes]]:
        """The `mirror` row (None when there is no copy) and identity() of every record held,
        by id, read together; more than one mirror row, or a record under another origin's
        id, is a defect."""
        found = self._read(
            [f"SELECT {', '.join(MIRROR_COLUMNS)} FROM mirror", "SELECT id, record FROM origins"],
            busy_timeout_s,
        )
        if found is None:
            return None, {}
        mirror_rows, origin_rows = found
        assert len(mirror_rows) <= 1, f"the mirror table holds {len(mirror_rows)} rows"
        row = None
        if mirror_rows:
            row = dict(zip(MIRROR_COLUMNS, mirror_rows[0], strict=True))
            row["generation"] = int(row["generation"])
        held = {}
        for origin_id, record in origin_rows:
            parsed = orjson.loads(record) if isinstance(record, str | bytes) else record
            assert parsed["origin"]["id"] == origin_id, f"{origin_id} holds another origin"
            held[origin_id] = identity(parsed)
        assert len(held) == len(origin_rows)
        return row, held

    def row(self) -> dict[str, Any] | None:
        """The `mirror` row, or None when there is no copy."""
        found = self._read([f"SELECT {', '.join(MIRROR_COLUMNS)} FROM mirror"], 60)
        if not found or not found[0]:
            return None
        row = dict(zip(MIRROR_COLUMNS, found[0][0], strict=True))
        row["generation"] = int(row["generation"])
        return row

    def records(self) -> dict[str, Any]:
        """Every record held, parsed, by id."""
        found = self._read(["SELECT id, record FROM origins"], 60)
        rows = found[0] if found else []
        return {
            key: orjson.loads(record) if isinstance(record, str | bytes) else record
            for key, record in rows
        }

    def edit(self, statement: str, *params: Any) -> int:
        """Change the store by hand, as a user might: rows touched."""
        if self.kind == "sqlite":
            conn = sqlite3.connect(self.path, timeout=60)
            try:
                with conn:
                    return conn.execute(statement, params).rowcount
            finally:
                conn.close()
        with psycopg.connect(self.conninfo, autocommit=True) as pg:
            pg.execute("SET search_path TO registry_mirror")
            return pg.execute(statement.replace("?", "%s").encode(), params).rowcount

    def open_transactions(self) -> int:
        """Sessions of the store's database inside a transaction now (PostgreSQL only)."""
        assert self.kind == "postgresql"
        with psycopg.connect(self.conninfo, autocommit=True) as pg:
            row = pg.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND pid <> pg_backend_pid() AND xact_start IS NOT NULL"
            ).fetchone()
        return int(row[0]) if row else 0

    def files_changed(self, since: dict[str, tuple[int, int]]) -> bool:
        """Whether the SQLite file or its journal or write-ahead log changed since `since`
        (from file_marks())."""
        return self.file_marks() != since

    def file_marks(self) -> dict[str, tuple[int, int]]:
        """Size and modification time of the SQLite file and its journal and WAL, where
        they exist."""
        marks = {}
        for suffix in ("", "-journal", "-wal"):
            path = Path(self.target + suffix)
            try:
                status = path.stat()
            except FileNotFoundError:
                continue
            marks[suffix] = (status.st_size, status.st_mtime_ns)
        return marks


def sqlite_store(folder: Path, name: str = "copy.sqlite") -> Store:
    """A copy in a SQLite file (none there yet)."""
    return Store(str(folder / name), "sqlite")


def postgres_store(make_database: Callable[..., str]) -> Store:
    """A copy in a fresh PostgreSQL database, given as a postgresql:// URL."""
    conninfo = make_database()
    return Store(as_url(conninfo), "postgresql", conninfo)


def make_store(kind: str, folder: Path, make_database: Callable[..., str], name: str = "") -> Store:
    """A store of that kind with no copy in it yet."""
    if kind == "sqlite":
        return sqlite_store(folder, f"{name or 'copy'}.sqlite")
    return postgres_store(make_database)


def clone_store(store: Store, folder: Path, name: str) -> Store:
    """Another SQLite store holding what `store` holds now: a copy to start from again."""
    target = folder / f"{name}.sqlite"
    source = sqlite3.connect(store.path, timeout=60)
    copy = sqlite3.connect(target)
    try:
        source.backup(copy)
    finally:
        copy.close()
        source.close()
    return Store(str(target), "sqlite")


SAVED_SCHEMA = "registry_mirror_saved"


def save_copy(store: Store) -> None:
    """Keep what a PostgreSQL store's tables hold now beside them (restore_copy)."""
    with psycopg.connect(store.conninfo, autocommit=True) as pg:
        pg.execute(f"DROP SCHEMA IF EXISTS {SAVED_SCHEMA} CASCADE")
        pg.execute(f"CREATE SCHEMA {SAVED_SCHEMA}")
        for table in ("origins", "mirror"):
            pg.execute(
                f"CREATE TABLE {SAVED_SCHEMA}.{table} AS TABLE registry_mirror.{table}".encode()
            )


def restore_copy(store: Store) -> None:
    """Put back what save_copy kept, in the mirror's own tables, in one transaction."""
    with psycopg.connect(store.conninfo) as pg:
        pg.execute(b"TRUNCATE registry_mirror.origins, registry_mirror.mirror")
        for table in ("origins", "mirror"):
            pg.execute(
                f"INSERT INTO registry_mirror.{table} SELECT * FROM {SAVED_SCHEMA}.{table}".encode()
            )
