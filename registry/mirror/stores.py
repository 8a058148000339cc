"""Where the copy lives: what every store offers, and the choice of one from TARGET.

A store holds `origins (id, record)`, one row per origin of the generation mirrored, and the
one-row `mirror (url, generation, digest, etag, synced_at)` (docs/mirror.md, "The store").
Everything a step writes goes through one `Writer`, inside one transaction that the step
commits whole or not at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from typing import Protocol
from urllib.parse import urlsplit, urlunsplit

# The TARGET prefixes that name a PostgreSQL database; anything else is a SQLite file.
POSTGRES_PREFIXES = ("postgresql://", "postgres://")


class StoreBusy(Exception):
    """Another `registry mirror` is writing to the same copy."""


class StoreUnusable(Exception):
    """TARGET cannot be opened or holds tables the mirror does not recognise."""


class NamedTwice(Exception):
    """An export's body names one origin on two lines: it is not a generation, and the step
    is rolled back."""

    def __init__(self, detail: object):
        super().__init__(
            f"the export names an origin twice ({detail}): rolled back; the copy keeps its "
            "previous generation"
        )


@dataclass(frozen=True)
class MirrorRow:
    """The `mirror` row: which registry, which generation, its digest, the ETag worth
    sending next, and when the copy was last proven."""

    url: str
    generation: int
    digest: str
    etag: str | None
    synced_at: str


def utc_now() -> str:
    """Now, as synced_at is written: RFC 3339, UTC, whole seconds."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Snapshot:
    """The mirror row and the records beside it, from one snapshot of the store."""

    row: MirrorRow | None
    # Every record held, as JSON text, a batch at a time.
    records: Iterable[list[str]]


class Writer(Protocol):
    """What a step may do to the copy, inside its one transaction."""

    def state(self) -> MirrorRow | None:
        """The mirror row as this transaction sees it, or None for no copy."""

    def clear(self) -> None:
        """Remove every origin (an export replaces the copy, by `insert` then `index`)."""

    def insert(self, ids: list[str], records: list[bytes]) -> None:
        """Add rows the copy does not hold, each id with its record as JSON in UTF-8 (an
        export's lines, batch by batch)."""

    def records(self) -> Iterator[list[str]]:
        """Every record held, as JSON text, a batch at a time, as this transaction sees
        them."""

    def index(self) -> None:
        """After an export's inserts: the copy is indexed by id again, its ids unique
        (NamedTwice when they are not). Every other method, and the step's commit, call it
        first, so a step never reads or commits an export half-indexed."""

    def held(self, ids: list[str]) -> dict[str, str]:
        """The records the copy holds for these ids, as JSON text, by id."""

    def upsert(self, rows: list[tuple[str, str]]) -> None:
        """Add or replace (id, record JSON) rows."""

    def delete(self, ids: list[str]) -> None:
        """Remove these ids (those not held are ignored)."""

    def set_state(self, row: MirrorRow) -> None:
        """Write the mirror row."""


class Store(Protocol):
    """A copy: its state, its steps, its records."""

    target: str

    def state(self) -> MirrorRow | None:
        """The mirror row, or None when the store holds no copy."""

    def step(self) -> AbstractContextManager[Writer]:
        """One transaction for one step: committed when the block ends, rolled back when it
        raises. Raises StoreBusy when another mirror holds the copy."""

    def count(self) -> int:
        """How many origins the copy holds."""

    def snapshot(self) -> AbstractContextManager[Snapshot]:
        """The mirror row and every record held, read from one snapshot."""

    def close(self) -> None:
        """Close the connection."""


def shown(target: str) -> str:
    """TARGET as printed: a PostgreSQL URL without its password."""
    if not is_postgres(target):
        return target
    parts = urlsplit(target)
    if parts.password is None:
        return target
    netloc = parts.netloc.rsplit("@", 1)[-1]
    user = f"{parts.username}@" if parts.username else ""
    return urlunsplit(parts._replace(netloc=user + netloc))


def is_postgres(target: str) -> bool:
    """Whether TARGET names a PostgreSQL database rather than a SQLite file."""
    return target.startswith(POSTGRES_PREFIXES)


def open_store(target: str, create: bool) -> Store | None:
    """The store TARGET names, its tables made when `create`; None when it does not exist
    (a missing file, or a database without the mirror's schema) and `create` is false."""
    if is_postgres(target):
        from registry.mirror.postgres_store import PostgresStore

        return PostgresStore.open(target, create)
    from registry.mirror.sqlite_store import SqliteStore

    return SqliteStore.open(target, create)


def statements(dialect: str) -> dict[str, str]:
    """The store's SQL, `sql/mirror/<dialect>/*.sql`, by file name without `.sql`."""
    folder = resources.files("sql") / "mirror" / dialect
    return {
        entry.name.removesuffix(".sql"): entry.read_text(encoding="utf-8")
        for entry in folder.iterdir()
        if entry.name.endswith(".sql")
    }


def batched(items: Iterator[tuple[str]], size: int) -> Iterator[list[str]]:
    """The first column of rows, `size` at a time."""
    batch: list[str] = []
    for (item,) in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
