"""What the mirror's own tests share: a TARGET of each kind, small graph documents, and
the copy read or changed behind the mirror's back."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import psycopg
import pytest

from registry.database.conninfo import as_url
from registry.mirror.stores import open_store


def make_target(request: pytest.FixtureRequest, folder: Path, kind: str) -> str:
    """A TARGET of this kind: a SQLite file not yet made, or a fresh PostgreSQL database."""
    if kind == "sqlite":
        return str(folder / "copy.sqlite")
    factory: Callable[[], str] = request.getfixturevalue("database_factory")
    return as_url(factory())


Record = dict[str, Any]


def origin(number: int, name: str, station: int | None = None) -> list[Record]:
    """The records of one origin of a graph document, allocated at 1.<station>.0 when a
    station is given."""
    origin_id = f"svc:origin:00000000-0000-4000-8000-{number:012d}"
    records: list[Record] = [
        {
            "type": "origin",
            "id": origin_id,
            "name": name,
            "network_id": None,
            "registry_id": None,
            "reviewed": True,
        }
    ]
    if station is not None:
        records.append(
            {
                "type": "allocation",
                "origin_id": origin_id,
                "network": 1,
                "station": station,
                "channel": 0,
                "publication_status": "published",
                "held_at": None,
            }
        )
    return records


def graph(*origins: list[Record]) -> list[Record]:
    """A graph document of these origins."""
    return [record for records in origins for record in records]


def origin_id(number: int) -> str:
    """The id origin(number) has."""
    return f"svc:origin:00000000-0000-4000-8000-{number:012d}"


def held_records(target: str) -> dict[str, Record]:
    """Every record the copy at TARGET holds, decoded, by id."""
    store = open_store(target, create=False)
    assert store is not None
    try:
        with store.snapshot() as snapshot:
            found = [orjson.loads(text) for batch in snapshot.records for text in batch]
    finally:
        store.close()
    return {record["origin"]["id"]: record for record in found}


def tamper(target: str, statement: str, *params: Any) -> None:
    """Change the copy behind the mirror's back: one statement on its store, committed.
    (`?` placeholders; written for PostgreSQL with `%s` and the schema named.)"""
    if target.startswith("postgresql://"):
        statement = statement.replace("?", "%s")
        for table in ("origins", "mirror"):
            statement = statement.replace(f" {table} ", f" registry_mirror.{table} ")
        with psycopg.connect(target, autocommit=True) as conn:
            conn.execute(statement.replace("record = %s", "record = %s::jsonb"), params)
        return
    with sqlite3.connect(target) as conn:
        conn.execute(statement, params)
