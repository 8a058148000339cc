"""What an operator asks of a database: `registry status`, and the live generation for /metrics.

Every function takes a connection first and reads only; a database that was never set up or
never loaded is an answer ("none"), not an error.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

import psycopg

from registry.database.migrations import SCHEMA_VERSION
from registry.database.queries import QUERIES

LIVE_SCHEMA = "graph"


@dataclass(frozen=True)
class LiveGeneration:
    """The graph answering requests that name no generation: its number and load time."""

    generation: int | None
    loaded_at: datetime


@dataclass(frozen=True)
class GenerationStatus:
    """One generation in the database: number, load time, origins and disk use."""

    generation: int | None
    loaded_at: datetime
    origins: int | None
    size_bytes: int | None
    live: bool


@dataclass
class DatabaseStatus:
    """Everything `registry status` reports about one database."""

    database: str
    user: str
    server_version: str
    pg_trgm: str | None
    pg_trgm_available: bool
    expected_schema_version: int
    migrations_version: int | None
    graph_version: int | None
    generations: list[GenerationStatus] = field(default_factory=list)
    reader_roles: dict[str, bool] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """A plain dict for --json: date-times as RFC 3339 in UTC."""
        data = asdict(self)
        for item in data["generations"]:
            item["loaded_at"] = item["loaded_at"].astimezone(UTC).isoformat().replace("+00:00", "Z")
        return data


def get_live_generation(conn: psycopg.Connection) -> LiveGeneration | None:
    """The live graph's generation and load time; None when no graph was ever loaded."""
    try:
        row = conn.execute(QUERIES["status/get_live_graph"]).fetchone()
    except (psycopg.errors.UndefinedTable, psycopg.errors.InvalidSchemaName):
        return None
    if row is None:
        return None
    return LiveGeneration(generation=None, loaded_at=row[0])


def get_database_status(conn: psycopg.Connection) -> DatabaseStatus:
    """Server, extensions, schema versions, generations kept and reader roles, read-only."""
    server = conn.execute(QUERIES["status/get_server"]).fetchone()
    trgm = conn.execute(QUERIES["status/get_search_extension"]).fetchone()
    tables = conn.execute(QUERIES["status/get_registry_tables"]).fetchone()
    assert server is not None and trgm is not None and tables is not None  # one row each
    migrated, loaded, has_reader_roles = tables
    status = DatabaseStatus(
        database=server[1],
        user=server[2],
        server_version=server[0],
        pg_trgm=trgm[0],
        pg_trgm_available=bool(trgm[1]),
        expected_schema_version=SCHEMA_VERSION,
        migrations_version=None,
        graph_version=None,
    )
    if migrated:
        version = conn.execute(QUERIES["status/get_migrations_version"]).fetchone()
        status.migrations_version = version[0] if version else None
    if loaded:
        live = conn.execute(QUERIES["status/get_live_graph"]).fetchone()
        status.graph_version = live[2] if live else None
        status.generations = _generations(conn)
    if has_reader_roles:
        rows = conn.execute(QUERIES["status/list_reader_roles"]).fetchall()
        status.reader_roles = {name: bool(exists) for name, exists in rows}
    return status


def _generations(conn: psycopg.Connection) -> list[GenerationStatus]:
    """The generations kept, newest first."""
    row = conn.execute(QUERIES["status/get_live_graph"]).fetchone()
    if row is None:
        return []
    size = conn.execute(QUERIES["status/get_schema_size"], {"schema": LIVE_SCHEMA}).fetchone()
    return [
        GenerationStatus(
            generation=None,
            loaded_at=row[0],
            origins=row[1],
            size_bytes=size[0] if size else None,
            live=True,
        )
    ]
