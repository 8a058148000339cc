"""What an operator asks of a database: `registry status`, and the live generation for /metrics.

Every function takes a connection first and reads only; a database that was never set up or
never loaded is an answer ("none"), not an error.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from registry.database.changes import oldest_since
from registry.database.generations import current_generation
from registry.database.migrations import SCHEMA_VERSION
from registry.database.queries import QUERIES
from registry.database.rows import all_rows, first_row, one_row, scalar


@dataclass(frozen=True)
class LiveGeneration:
    """The graph answering requests that name no generation: its number and load time."""

    generation: int
    loaded_at: datetime
    # Origins added, removed and changed against its previous generation (docs/api.md, Changes
    # between generations); None when the generation was loaded before change sets were recorded.
    changes: dict[str, int] | None = None
    # The change sets kept (docs/api.md, Changes since any generation); None when none is, or not
    # recorded.
    change_sets: KeptChangeSets | None = None


@dataclass(frozen=True)
class GenerationStatus:
    """One generation in the database: number, load time, origins and disk use."""

    generation: int
    loaded_at: datetime
    origins: int
    size_bytes: int | None
    live: bool
    # The change set against the previous generation (docs/api.md, Changes between generations);
    # None: not recorded.
    previous: int | None = None
    changes: dict[str, int] | None = None
    # Its digest (registry.digest); None: loaded before digests, or a database not upgraded.
    digest: str | None = None


@dataclass(frozen=True)
class KeptChangeSets:
    """The change sets kept (docs/api.md, Changes since any generation): how many, the oldest since,
    and their disk use."""

    count: int
    oldest_since: int | None
    size_bytes: int | None


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
    change_sets: KeptChangeSets | None = None
    reader_roles: dict[str, bool] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """A plain dict for --json: date-times as RFC 3339 in UTC."""
        data = asdict(self)
        for item in data["generations"]:
            item["loaded_at"] = item["loaded_at"].astimezone(UTC).isoformat().replace("+00:00", "Z")
        return data


def get_live_generation(conn: psycopg.Connection) -> LiveGeneration | None:
    """The live generation, its commit time and change counts; None when no graph was ever
    loaded."""
    try:
        stamp = current_generation(conn)
    except (psycopg.errors.UndefinedTable, psycopg.errors.InvalidSchemaName):
        return None
    if stamp is None:
        return None
    row = first_row(conn, QUERIES["meta/get_generation_changes"], {"generation": stamp.generation})
    changes = None
    if row is not None and None not in row.values():
        changes = {kind: int(row[kind]) for kind in ("added", "removed", "changed")}
    kept = kept_change_sets(conn, stamp.generation)
    return LiveGeneration(stamp.generation, stamp.committed_at, changes, kept)


def kept_change_sets(conn: psycopg.Connection, live: int | None) -> KeptChangeSets | None:
    """The change sets kept, the oldest since of the live generation and their bytes; None
    when none is kept (or the database predates kept change sets)."""
    row = one_row(conn, QUERIES["meta/get_kept_change_sets"])
    if row["kept"] is None:
        return None
    since = None if live is None else oldest_since(conn, live)
    size = row["change_bytes"]
    return KeptChangeSets(int(row["kept"]), since, None if size is None else int(size))


def get_database_status(conn: psycopg.Connection) -> DatabaseStatus:
    """Server, extensions, schema versions, generations kept and reader roles, read-only."""
    server = one_row(conn, QUERIES["status/get_server"])
    trgm = one_row(conn, QUERIES["status/get_search_extension"])
    tables = one_row(conn, QUERIES["status/get_registry_tables"])
    status = DatabaseStatus(
        database=server["database"],
        user=server["user_name"],
        server_version=server["server_version"],
        pg_trgm=trgm["installed"],
        pg_trgm_available=bool(trgm["available"]),
        expected_schema_version=SCHEMA_VERSION,
        migrations_version=None,
        graph_version=None,
    )
    if tables["migrated"]:
        status.migrations_version = scalar(conn, QUERIES["status/get_migrations_version"])
    live = None
    if tables["loaded"]:
        row = first_row(conn, QUERIES["status/get_live_graph"])
        if row is not None:
            live, status.graph_version = row["generation"], row["schema_version"]
    if tables["has_generations"]:
        status.generations = [
            GenerationStatus(
                int(row["generation"]),
                row["committed_at"],
                int(row["origins"]),
                row["size_bytes"],
                live=(row["generation"] == live),
                previous=row["previous"],
                changes=None
                if row["added"] is None
                else {kind: row[kind] for kind in ("added", "removed", "changed")},
                digest=row["digest"],
            )
            for row in all_rows(conn, QUERIES["meta/list_kept_generations"])
        ]
        status.change_sets = kept_change_sets(conn, live)
    if tables["has_reader_roles"]:
        rows = all_rows(conn, QUERIES["status/list_reader_roles"])
        status.reader_roles = {row["role_name"]: bool(row["role_exists"]) for row in rows}
    return status


def display_conninfo(conninfo: str) -> str:
    """The connection string as it can be shown: the password left out."""
    params = {k: v for k, v in conninfo_to_dict(conninfo).items() if k != "password"}
    return make_conninfo("", **params)


def _megabytes(size: int | None) -> str:
    """A size in MB, or that it was not measured."""
    return "size unknown" if size is None else f"{size / 1_000_000:,.1f} MB"


def status_lines(status: DatabaseStatus, conninfo: str) -> list[str]:
    """`registry status` for people: one fact a line, generations newest first."""
    if status.pg_trgm is not None:
        trgm = f"pg_trgm {status.pg_trgm} (search uses trigram indexes)"
    elif status.pg_trgm_available:
        trgm = "pg_trgm not installed, but available: the next load installs it"
    else:
        trgm = "pg_trgm not available on this server: search scans every origin"
    expected = status.expected_schema_version
    migrations = status.migrations_version
    schema = (
        "not set up: run `registry db upgrade` or `registry load`"
        if migrations is None
        else f"migrations at version {migrations}, this code expects {expected}"
        + ("" if migrations == expected else " (run `registry db upgrade`)")
    )
    lines = [
        f"database     {status.database} as {status.user} ({display_conninfo(conninfo)})",
        f"server       PostgreSQL {status.server_version}",
        f"extensions   {trgm}",
        f"schema       {schema}",
    ]
    if status.graph_version is not None:
        lines.append(f"live graph   built for schema version {status.graph_version}")
    if not status.generations:
        lines.append("generations  none: no graph has been loaded")
    else:
        lines.append(f"generations  {len(status.generations)} kept, newest first")
        for kept in status.generations:
            at = kept.loaded_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            live = "  (live)" if kept.live else ""
            lines.append(
                f"  {kept.generation:>6}  loaded {at}  {kept.origins:,} origins  "
                f"{_megabytes(kept.size_bytes)}{live}"
            )
            if kept.changes is not None:
                against = "first" if kept.previous is None else f"against {kept.previous}"
                counts = ", ".join(f"{kind} {n:,}" for kind, n in kept.changes.items())
                lines.append(f"          changes ({against}): {counts}")
            if kept.digest is not None:
                lines.append(f"          digest {kept.digest}")
    if status.generations:
        lines.append(_change_sets_line(status.change_sets))
    if not status.reader_roles:
        lines.append("reader role  none registered (`registry db create-reader ROLE`)")
    for role, exists in status.reader_roles.items():
        state = "exists" if exists else "MISSING: registered but not a role of this server"
        lines.append(f"reader role  {role}: {state}")
    return lines


def _change_sets_line(kept: KeptChangeSets | None) -> str:
    """How many change sets are kept, since when /registry/changes?since= answers, and their
    size."""
    if kept is None:
        return "change sets  none kept (loaded before change sets were kept)"
    since = "unknown" if kept.oldest_since is None else str(kept.oldest_since)
    return f"change sets  {kept.count} kept, oldest since {since}, {_megabytes(kept.size_bytes)}"
