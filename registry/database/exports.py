"""Exports: every origin a listing's filters match, read in batches from one snapshot.

An export is one read-only REPEATABLE READ transaction holding one server-side cursor over
the same access paths as the listing (one SQL file each, without page and total). The
caller fetches batches as it writes them and ends the export when it is done or the client
has gone; nothing is held in memory beyond one batch. The number of rows it will send
(docs/export.md, Capacity, `Registry-Total`) is the listing's total, read in the same snapshot.

The transaction may wait on a slow client for as long as the client keeps reading, so it
is exempt from idle_in_transaction_session_timeout (exports/set_export_settings.sql); the
caller bounds it instead, by its send timeout. While it is open, the tables it reads are
locked against a load's drop of their generation (the load leaves that drop to a later load,
registry.loader.loading), so a load never cuts an export on the server it reads.

Each access path reads either the stored records (JSON text, for NDJSON) or the CSV rows
the load built beside them (origin_csv, load/build_origin_csv.sql; one `*_as_csv` file per
path), so that neither format decodes anything per row. A graph loaded before origin_csv
existed has only its records: a CSV export of it reads those, and the caller writes the rows.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import psycopg
from psycopg.adapt import Buffer, Loader
from psycopg.rows import dict_row

from registry.database.generations import Stamp, graph_statement, read_generation, row_stamp
from registry.database.queries import QUERIES
from registry.database.repository import filter_params, list_origins
from registry.database.rows import first_row, scalar

_BEGIN = QUERIES["exports/begin_export"]
_SETTINGS = QUERIES["exports/set_export_settings"]
_EXPORT_ALL = "origins/export_all_origins"
_EXPORT_BY_FLAGS = "origins/export_origins_by_flags"
_EXPORT_BY_NETWORK = "origins/export_origins_by_network"
_EXPORT_BY_STATION = "origins/export_origins_by_station"
_EXPORT_SEARCH = "origins/export_search_origins"
_EXPORT_BY_IDS = "origins/export_origins_by_ids"
_STAMP = "exports/get_export_stamp"
_HAS_CSV_ROWS = QUERIES["origins/origin_csv_exists"]
# The stamp of an attempt that found the schemas renamed under it; never a real generation.
MOVED = Stamp(0, datetime.min.replace(tzinfo=UTC), None)
_ATTEMPTS = 4

CURSOR_NAME = "registry_export"
# The largest uuid: nothing comes after it.
_LAST_UUID = (1 << 128) - 1


class _RawText(Loader):
    """text as the bytes the server sent (UTF-8): records and CSV lines go out as stored."""

    def load(self, data: Buffer) -> bytes:
        """The bytes themselves, not decoded."""
        return bytes(data)


class Rows(Protocol):
    """Where an export's rows come from: a server-side cursor, or KeysetRows."""

    def fetchmany(self, size: int) -> list[Any]:
        """The next rows, at most size (each a one-item sequence: the line)."""

    def close(self) -> None:
        """Release it (after the transaction ended)."""


class KeysetRows:
    """An export's rows read batch by batch, each batch a statement of its own that starts at
    the origin id after the last one read (keyset), in the export's one snapshot.

    A server-side cursor keeps a buffer pin on the index page it stands on between FETCHes
    (an index-only scan does, up to PostgreSQL 17), and a VACUUM of that index waits for
    every pin on its leaf pages: a load's VACUUM of net_changes, right after its commit,
    waited for as long as a since export's client paused. A statement that has ended holds
    none. The statement takes %(from)s (a uuid) and %(batch)s and returns (id, line) in id
    order.
    """

    def __init__(self, conn: psycopg.Connection, statement: str, params: dict[str, Any]):
        # The simple query protocol: the server drops each batch's portal as its statement
        # ends. The extended protocol's unnamed portal would stay open until the next batch,
        # its index scan (stopped at the batch's LIMIT) pinning the page it stands on.
        self._cursor = psycopg.ClientCursor(conn, row_factory=dict_row)
        self._cursor.adapters.register_loader("text", _RawText)
        self._statement = statement
        self._params = params
        self._from: uuid.UUID | None = uuid.UUID(int=0)

    def fetchmany(self, size: int) -> list[tuple[bytes]]:
        """The next rows, at most size; [] at the end."""
        if self._from is None or size <= 0:
            return []
        params = {**self._params, "from": self._from, "batch": size}
        rows = self._cursor.execute(self._statement, params).fetchall()
        last = rows[-1]["id"].int if rows else None
        ended = len(rows) < size or last == _LAST_UUID
        self._from = None if ended or last is None else uuid.UUID(int=last + 1)
        return [(row["line"],) for row in rows]

    def close(self) -> None:
        """Close the client-side cursor."""
        self._cursor.close()


@dataclass(frozen=True)
class ExportRead:
    """What an export reads, worked out inside its snapshot: how many rows, the statement and
    its parameters, whether the rows are CSV lines (else stored records), and whether the
    statement is read by keyset batches (KeysetRows) instead of a server-side cursor."""

    total: int
    statement: str
    params: dict[str, Any]
    csv_rows: bool
    keyset: bool = False


@dataclass(frozen=True)
class OpenedExport:
    """An export under way: its stamp, where its rows come from, the first rows, what the
    rows are, and how many there will be."""

    stamp: Stamp
    cursor: Rows
    first: list[bytes]
    # The rows are CSV lines (origin_csv); else stored records (JSON text).
    csv_rows: bool
    total: int = 0


def _export_query(filters: dict[str, Any], csv_rows: bool = False) -> tuple[str, dict[str, Any]]:
    """The query (SQL file name) serving these filters and its parameters (as the listing);
    its `_as_csv` variant, reading origin_csv instead of origin_docs, when csv_rows."""
    params = filter_params(filters)
    combos, network_id, station = params["combos"], params["network_id"], params["station"]
    if params["ids"] is not None:
        name = _EXPORT_BY_IDS
    elif params["pattern"] is not None:
        name = _EXPORT_SEARCH
    elif network_id is not None:
        name = _EXPORT_BY_NETWORK
    elif station is not None:
        name = _EXPORT_BY_STATION
    elif combos is not None:
        name = _EXPORT_BY_FLAGS
    else:
        name, params = _EXPORT_ALL, {}
    return (name + "_as_csv" if csv_rows else name), params


# What an export reads in the schema of its generation, worked out inside its snapshot.
ExportPlan = Callable[[psycopg.Connection, str], ExportRead]


def open_origin_export(
    conn: psycopg.Connection,
    filters: dict[str, Any],
    generation: int | None,
    first: int,
    csv_rows: bool = False,
) -> OpenedExport:
    """Begin the export of the origins the filters match (open_export).

    The rows are stored records, or CSV lines when csv_rows is asked for and the graph has
    them (OpenedExport.csv_rows says which).
    """

    def plan(conn: psycopg.Connection, schema: str) -> ExportRead:
        """The listing's total and the export statement, in the export's snapshot."""
        stored_csv = csv_rows and _has_csv_rows(conn, schema)
        total = list_origins(conn, filters, 0, 0, schema)[1].total
        name, params = _export_query(filters, stored_csv)
        return ExportRead(total, graph_statement(name, schema), params, stored_csv)

    return open_export(conn, generation, first, plan)


def open_export(
    conn: psycopg.Connection, generation: int | None, first: int, plan: ExportPlan
) -> OpenedExport:
    """Begin an export on generation (None: the newest): its stamp, cursor and first rows.

    plan(conn, schema) says what to read. The connection must be in autocommit mode (the
    service's sessions are) and idle; at most `first` rows come with the stamp, the rest
    through fetch_export_batch. Always end the export with close_export, whatever
    happened. A generation not kept raises as any pinned read does
    (registry.database.generations).
    """
    opened: list[Rows] = []

    def attempt(conn: psycopg.Connection, schema: str) -> tuple[Stamp, OpenedExport]:
        """Declare the cursor on schema (or read the first keyset batch) between two reads of
        its stamp, and read the first rows. When a load renamed the schemas meanwhile, the
        second read does not see the first one's row (it reads a newer graph, invisible to
        this snapshot) and the stamp returned is MOVED, so that the caller tries again."""
        # A pinned read may try another schema after a load renamed them: start afresh.
        close_export(conn, opened.pop() if opened else None)
        conn.execute(_BEGIN)
        conn.execute(_SETTINGS)
        stamp_query = graph_statement(_STAMP, schema)
        try:
            before = first_row(conn, stamp_query)
            read = plan(conn, schema)
            cursor: Rows
            if read.keyset:
                cursor = KeysetRows(conn, read.statement, read.params)
            else:
                server_cursor = conn.cursor(CURSOR_NAME)
                server_cursor.adapters.register_loader("text", _RawText)
                cursor = server_cursor
            opened.append(cursor)
            if not read.keyset:
                server_cursor.execute(read.statement, read.params)
            after = first_row(conn, stamp_query)
            rows = fetch_export_batch(cursor, first)
        except BaseException:
            close_export(conn, opened.pop() if opened else None)
            raise
        if before is None or after != before:
            return MOVED, OpenedExport(MOVED, cursor, [], read.csv_rows)
        stamp = row_stamp(before)
        return stamp, OpenedExport(stamp, cursor, rows, read.csv_rows, read.total)

    try:
        for _ in range(_ATTEMPTS):
            stamp, export = read_generation(conn, generation, attempt)
            if stamp is not MOVED:
                return export
        # Loads renamed the schemas under every attempt: rare enough to ask for a retry (503).
        raise psycopg.errors.QueryCanceled("the graph moved on every attempt")
    except BaseException:
        close_export(conn, opened.pop() if opened else None)
        raise


def _has_csv_rows(conn: psycopg.Connection, schema: str) -> bool:
    """Whether the graph in schema has origin_csv (graphs loaded by earlier code have not)."""
    return bool(scalar(conn, _HAS_CSV_ROWS, {"schema": schema}))


def fetch_export_batch(cursor: Rows, size: int) -> list[bytes]:
    """The next rows (records as JSON text, or CSV lines; UTF-8 bytes) of the export, at most
    size; [] at the end."""
    return [line for (line,) in cursor.fetchmany(size)]


def close_export(conn: psycopg.Connection, cursor: Rows | None) -> None:
    """End the export: its transaction and its cursor, so the connection is idle again.

    Safe after an error and when the connection is broken (then there is nothing to end).
    The rollback drops the cursor on the server; closing it afterwards sends nothing.
    """
    if not (conn.broken or conn.closed):
        conn.rollback()
    if cursor is not None:
        cursor.close()
