"""Exports: every origin a listing's filters match, read in batches from one snapshot.

An export is one read-only REPEATABLE READ transaction holding one server-side cursor over
the same access paths as the listing (one SQL file each, without page and total). The
caller fetches batches as it writes them and ends the export when it is done or the client
has gone; nothing is held in memory beyond one batch.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg.adapt import Buffer, Loader

from registry.database.generations import Stamp, graph_statement, read_generation
from registry.database.queries import QUERIES
from registry.database.repository import like_pattern, matching_combos

_BEGIN = QUERIES["origins/begin_export"]
_EXPORT_ALL = "origins/export_all_origins"
_EXPORT_BY_FLAGS = "origins/export_origins_by_flags"
_EXPORT_BY_NETWORK = "origins/export_origins_by_network"
_EXPORT_BY_STATION = "origins/export_origins_by_station"
_EXPORT_SEARCH = "origins/export_search_origins"
_STAMP = "origins/get_export_stamp"
# The stamp of an attempt that found the schemas renamed under it; never a real generation.
MOVED = Stamp(0, datetime.min.replace(tzinfo=UTC))
_ATTEMPTS = 4

CURSOR_NAME = "registry_export"


class _RawText(Loader):
    """text as the bytes the server sent (UTF-8): the records go out as they are stored."""

    def load(self, data: Buffer) -> bytes:
        """The bytes themselves, not decoded."""
        return bytes(data)


def _export_query(filters: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The query (SQL file name) serving these filters and its parameters (as the listing)."""
    combos = matching_combos(filters)
    network_id = filters.get("network_id")
    station = filters.get("station_id")
    params: dict[str, Any] = {"combos": combos, "network_id": network_id, "station": station}
    if "search" in filters:
        params["pattern"] = like_pattern(filters["search"])
        return _EXPORT_SEARCH, params
    if network_id is not None:
        return _EXPORT_BY_NETWORK, params
    if station is not None:
        return _EXPORT_BY_STATION, params
    if combos is not None:
        return _EXPORT_BY_FLAGS, params
    return _EXPORT_ALL, {}


def open_origin_export(
    conn: psycopg.Connection, filters: dict[str, Any], generation: int | None, first: int
) -> tuple[Stamp, psycopg.ServerCursor, list[bytes]]:
    """Begin the export on generation (None: the newest): its stamp, cursor and first records.

    The connection must be in autocommit mode (the service's sessions are) and idle; at most
    `first` records come with the stamp, the rest through fetch_export_batch. Always end the
    export with close_origin_export, whatever happened. A generation not kept raises as any
    pinned read does (registry.database.generations).
    """
    name, params = _export_query(filters)
    opened: list[psycopg.ServerCursor] = []

    def attempt(
        conn: psycopg.Connection, schema: str
    ) -> tuple[Stamp, tuple[psycopg.ServerCursor, list[bytes]]]:
        """Declare the cursor on schema between two reads of its stamp, and read the first
        records. When a load renamed the schemas meanwhile, the second read does not see the
        first one's row (it reads a newer graph, invisible to this snapshot) and the stamp
        returned is MOVED, so that the caller tries again."""
        # A pinned read may try another schema after a load renamed them: start afresh.
        close_origin_export(conn, opened.pop() if opened else None)
        conn.execute(_BEGIN)
        cursor = conn.cursor(CURSOR_NAME)
        opened.append(cursor)
        stamp_query = graph_statement(_STAMP, schema)
        try:
            before = conn.execute(stamp_query).fetchone()
            cursor.adapters.register_loader("text", _RawText)
            cursor.execute(graph_statement(name, schema), params)
            after = conn.execute(stamp_query).fetchone()
            docs = fetch_export_batch(cursor, first)
        except BaseException:
            close_origin_export(conn, opened.pop())
            raise
        if before is None or after != before:
            return MOVED, (cursor, [])
        return Stamp(int(before[0]), before[1]), (cursor, docs)

    try:
        for _ in range(_ATTEMPTS):
            stamp, (cursor, docs) = read_generation(conn, generation, attempt)
            if stamp is not MOVED:
                return stamp, cursor, docs
        # Loads renamed the schemas under every attempt: rare enough to ask for a retry (503).
        raise psycopg.errors.QueryCanceled("the graph moved on every attempt")
    except BaseException:
        close_origin_export(conn, opened.pop() if opened else None)
        raise


def fetch_export_batch(cursor: psycopg.ServerCursor, size: int) -> list[bytes]:
    """The next records (JSON text as UTF-8 bytes) of the export, at most size; [] at the end."""
    return [row[0] for row in cursor.fetchmany(size)]


def close_origin_export(conn: psycopg.Connection, cursor: psycopg.ServerCursor | None) -> None:
    """End the export: its transaction and its cursor, so the connection is idle again.

    Safe after an error and when the connection is broken (then there is nothing to end).
    The rollback drops the cursor on the server; closing it afterwards sends nothing.
    """
    if not (conn.broken or conn.closed):
        conn.rollback()
    if cursor is not None:
        cursor.close()
