"""Graph documents for the loader tests: a small valid base, edits of it, and snapshots."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import orjson
import psycopg

from registry.database import repository
from registry.loader.loading import LoadOptions, LoadResult, load_document

Record = dict[str, Any]
# Each migration file as its release shipped it, frozen: a database at an earlier schema
# version is made from these (tests/loader/test_definitions.py).
RELEASED_MIGRATIONS = Path(__file__).resolve().parents[1] / "fixtures" / "released_migrations"

NETWORK_ID = "svc:network:5d0c6a1e-2b3f-4c5d-8e9f-a0b1c2d3e4f5"
ORIGIN_ID = "svc:origin:1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f"
OTHER_ORIGIN_ID = "svc:origin:9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a"
UNKNOWN_ORIGIN_ID = "svc:origin:00000000-0000-4000-8000-000000000000"

# A valid document with one record of every type (line numbers in the comments). The cases
# change one line of it or add one, so each breaks exactly one rule. Kept compact, one
# record per group of lines, by turning the formatter off.
# fmt: off
BASE: list[Record] = [
    {"type": "catalog", "transports": ["iptv", "ovp"]},  # 1
    {
        "type": "feed", "connected": True, "networks": 1, "iptv_networks": 1,
        "ovp_networks": 0, "channels": 2, "programs": 10, "reviews": 1, "pending_reviews": None,
    },  # 2
    {"type": "network", "id": NETWORK_ID, "name": "North"},  # 3
    {
        "type": "origin", "id": ORIGIN_ID, "name": "Alpha", "network_id": NETWORK_ID,
        "registry_id": "7", "reviewed": True,
    },  # 4
    {
        "type": "origin", "id": OTHER_ORIGIN_ID, "name": "Beta", "network_id": None,
        "registry_id": None, "reviewed": False,
    },  # 5
    {
        "type": "governance_edge", "origin_id": ORIGIN_ID, "governor_id": "svc:domain:north",
        "active": True,
    },  # 6
    {
        "type": "allocation", "origin_id": ORIGIN_ID, "network": 1, "station": 2, "channel": 3,
        "publication_status": "published", "held_at": None, "held_reason": None,
    },  # 7
    {
        "type": "allocation", "origin_id": OTHER_ORIGIN_ID, "network": 1, "station": 2,
        "channel": 4, "publication_status": "held", "held_at": "2026-01-02T03:04:05Z",
        "held_reason": "licence review",
    },  # 8
    {
        "type": "carriage", "id": "iptv-alpha", "transport": "iptv", "provider": "Acme",
        "source": "lineup", "availability": "reachable", "origin_id": ORIGIN_ID,
    },  # 9
    {
        "type": "carriage", "id": "ovp-loose", "transport": "ovp", "provider": None,
        "source": None, "availability": None, "origin_id": None,
    },  # 10
]
# The line of BASE that holds a record of each type (the held allocation is HELD_LINE).
LINE = {
    "catalog": 1, "feed": 2, "network": 3, "origin": 4, "governance_edge": 6, "allocation": 7,
    "carriage": 9,
}
HELD_LINE = 8
# fmt: on
APPENDED = len(BASE) + 1  # the line number of a record added at the end

# Stands for "leave this field out" in edited().
DROP: Any = object()


def document(records: list[Record | bytes]) -> bytes:
    """A graph document: each record as one JSON line (bytes are taken as the line itself)."""
    return b"".join(
        (item if isinstance(item, bytes) else orjson.dumps(item)) + b"\n" for item in records
    )


def base_with(line: int, record: Record | bytes) -> bytes:
    """BASE with one line replaced by record (a dict, or the raw bytes of the line)."""
    items: list[Record | bytes] = list(BASE)
    items[line - 1] = record
    return document(items)


def edited(line: int, **changes: Any) -> bytes:
    """BASE with some fields of one line changed (DROP leaves a field out)."""
    record = {**BASE[line - 1], **changes}
    return base_with(line, {name: value for name, value in record.items() if value is not DROP})


def inserted(line: int, record: Record | bytes) -> bytes:
    """BASE with record inserted so that it is on the given line."""
    items: list[Record | bytes] = list(BASE)
    items.insert(line - 1, record)
    return document(items)


def appended(*records: Record | bytes) -> bytes:
    """BASE with records added at the end."""
    return document([*BASE, *records])


def load(conninfo: str, payload: bytes, allow_empty: bool = False) -> LoadResult:
    """Load a document through the real loader, on a connection of its own."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        options = LoadOptions(allow_empty=allow_empty)
        return load_document(conn, io.BytesIO(payload), options=options)


def graph_state(conninfo: str) -> dict[str, Any]:
    """What readers see of the live graph, and traces of any load committed since."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        _, page = repository.list_origins(conn, {}, limit=1000, offset=0)
        return {
            "origin_rows": conn.execute("SELECT count(*) FROM graph.origin_rows").fetchone(),
            "total": page.total,
            "origins": orjson.loads(page.records),
            "summary": repository.get_registry_summary(conn)[1],
            "integration_status": repository.get_integration_status(conn)[1],
            "generation": conn.execute("SELECT generation FROM graph.graph_info").fetchone(),
            "graph_info": conn.execute("SELECT loaded_at, counts FROM graph.graph_info").fetchall(),
            "loads": conn.execute("SELECT count(*) FROM registry_meta.graph_loads").fetchone(),
            # a rejected load leaves no half-built schema behind
            "schemas": conn.execute(
                "SELECT array_agg(nspname::text ORDER BY nspname) FROM pg_namespace"
                " WHERE nspname LIKE 'graph%'"
            ).fetchone(),
        }


def drop_change_log(conn: psycopg.Connection) -> None:
    """Take away what migrations 004 and 005 made (kept change sets, their net changes
    indexed) and every function of registry_meta (none was defined before 004), to replay
    older migrations."""
    conn.execute(
        "DROP TABLE registry_meta.change_log, registry_meta.net_changes, registry_meta.net_counts;"
        " ALTER TABLE registry_meta.generations DROP COLUMN change_bytes,"
        " DROP COLUMN changes_dropped_at"
    )
    for (function,) in conn.execute(
        "SELECT p.oid::regprocedure::text FROM pg_proc AS p"
        " WHERE p.pronamespace = 'registry_meta'::regnamespace"
    ).fetchall():
        conn.execute(f"DROP FUNCTION {function}")


def released_migration(name: str) -> str:
    """Migration name's SQL as its release shipped it (tests/fixtures/released_migrations): the
    functions migrations 004 to 007 defined then are sql/definitions' files now."""
    return (RELEASED_MIGRATIONS / f"{name}.sql").read_text(encoding="utf-8")
