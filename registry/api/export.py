"""The listing's other representations (docs/export.md): NDJSON and CSV, streamed.

Content negotiation picks JSON (the documented listing), NDJSON or CSV from `Accept`. An export
reads every match through one server-side cursor in one REPEATABLE READ transaction
(registry.database.exports) and writes each batch as soon as it is fetched: memory holds one
batch, the first bytes leave after the first small batch, and every row comes from the
snapshot the export started on. Both formats send what the load stored: the records for
NDJSON, the CSV rows of origin_csv for CSV (registry.api.origin_csv), nothing decoded.

Capacity (docs/export.md, Capacity):
- At most REGISTRY_MAX_EXPORTS exports stream at once on one instance (registry.api.
  export_slots); one more is a 503 at once, so the other workers stay free for pages.
- A client may read as slowly as it likes while it keeps reading: the transaction is exempt
  from the idle limit, a thread tells gunicorn the worker is alive while the export moves
  (batches fetched, a write to the client under way), and only a write that moves no data for
  REGISTRY_EXPORT_SEND_TIMEOUT_S (the client stopped reading) ends the export, cut. An export
  that does not move (a database that does not answer) shows no sign of life: its FETCH is
  ended by statement_timeout, or the worker by gunicorn's timeout, and its slot is freed.
- `Registry-Total` says how many rows will follow, from the export's own snapshot.

The connection outlives the request: Flask's teardown runs before a streamed body is
written, so the body takes the request's connection over and gives it back itself when the
last batch is out, when the client goes away (the server closes the body: the transaction is
rolled back, which drops the cursor) or when anything fails on the way. A failure after the
first bytes cuts the answer short (the server closes the connection without ending the
chunked body; through nginx too, which speaks HTTP/1.1 to gunicorn), so a client never
mistakes a partial export for a whole one.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
from flask import Flask, Response, current_app, request

from registry.api.connection import get_connection, take_connection
from registry.api.errors import DATABASE_UNAVAILABLE, error_response
from registry.api.export_slots import ExportSlots
from registry.api.generations import is_conditional, not_modified_on, stamped
from registry.api.metrics import count_export_refused, observe_export_ended, observe_export_started
from registry.api.origin_csv import OriginCsvWriter, stored_rows
from registry.database.exports import (
    OpenedExport,
    Rows,
    close_export,
    fetch_export_batch,
    open_origin_export,
)
from registry.database.generations import Stamp, pinned_stamp

JSON = "application/json"
NDJSON = "application/x-ndjson"
CSV = "text/csv"
# In order of preference when Accept ranks several the same (`*/*`, `application/*`).
OFFERED = (JSON, NDJSON, CSV)
CONTENT_TYPES = {NDJSON: NDJSON, CSV: "text/csv; charset=utf-8; header=present"}
FILE_EXTENSIONS = {NDJSON: "ndjson", CSV: "csv"}

# A small first batch gets the first bytes out at once; later ones are big enough that the
# round trips cost little and small enough that a worker's memory stays flat.
FIRST_BATCH = 100
BATCH = 2000
# A batch is written in pieces of at most this many bytes (a memory bound on what one write
# holds, and the unit by which a cut is told apart from a send timeout).
PIECE = 64 * 1024
# The slowest reader an export serves to the end (docs/export.md, Capacity), in bytes a second.
SLOWEST_RATE = 10 * 1024
# How often an export looks for progress, and tells gunicorn its worker is alive if it moved.
HEARTBEAT_S = 1.0


def send_buffer_size(send_timeout: float) -> int:
    """The export socket's send buffer: small enough that a reader at SLOWEST_RATE frees room
    within a quarter of the send timeout.

    A writer blocked on a full send buffer is woken only once a good part of it is free (about
    half), and the buffer Linux tunes by itself grows to megabytes: at 10 KB/s a write could
    then wait minutes for room, and the send timeout would cut a client that is reading.
    Capped, the wait is bounded by the reader's rate. (Behind nginx the reader is nginx on
    loopback, where a small buffer costs no throughput.)
    """
    return max(16 * 1024, int(SLOWEST_RATE * send_timeout / 4))


def limit_sending(sock: socket.socket, send_timeout: float) -> None:
    """Bound how long a write to this client may take no data (SO_SNDTIMEO) and the send
    buffer. The kernel's timeout runs per call and restarts whenever data moves, so a slow
    but steady reader is never cut, and one that takes nothing for send_timeout is: the
    write fails and the server ends the answer, cut."""
    seconds = int(send_timeout)
    micros = int((send_timeout - seconds) * 1_000_000)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", seconds, micros))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer_size(send_timeout))


def init_exports(app: Flask) -> None:
    """The instance's export slots (docs/export.md, Capacity), shared by its workers through one
    file."""
    app.extensions["registry_export_slots"] = ExportSlots(
        int(app.config["REGISTRY_MAX_EXPORTS"]), app.config.get("REGISTRY_EXPORT_SLOTS_FILE")
    )


def negotiated_type() -> str | None:
    """The listing representation Accept asks for: JSON when absent; None when none fits."""
    if not request.headers.get("Accept", "").strip():
        return JSON
    return request.accept_mimetypes.best_match(OFFERED)


def not_acceptable() -> Response:
    """406: the Accept header admits none of JSON, NDJSON and CSV."""
    response = error_response(406, "Not Acceptable")
    response.vary.add("Accept")
    return response


def export_limit_reached(limit: int) -> Response:
    """503 at once: this instance already streams as many exports as it may (docs/export.md,
    Capacity)."""
    retry = str(current_app.config["REGISTRY_RETRY_AFTER_S"])
    response = error_response(
        503,
        "Service Unavailable",
        {"Retry-After": retry},
        message=f"export limit reached: at most {limit} exports stream at once on this "
        "instance (REGISTRY_MAX_EXPORTS); retry later",
    )
    response.vary.add("Accept")
    return response


def _ndjson(docs: list[bytes]) -> bytes:
    """One record per line."""
    return b"\n".join(docs) + b"\n"


# Opens an export on the request's connection (registry.database.exports.open_export).
Opener = Callable[[psycopg.Connection], OpenedExport]
# What goes before the rows (the CSV header) and how each batch of rows is written.
Layout = Callable[[OpenedExport], tuple[bytes, Callable[[list[bytes]], bytes]]]


def origin_layout(representation: str) -> Layout:
    """Origins: NDJSON of the stored records; CSV of origin_csv's rows under the header."""

    def layout(opened: OpenedExport) -> tuple[bytes, Callable[[list[bytes]], bytes]]:
        if representation != CSV:
            return b"", _ndjson
        writer = OriginCsvWriter()
        # A graph loaded before origin_csv existed: rows written from its records.
        return writer.header(), stored_rows if opened.csv_rows else writer.rows

    return layout


class ExportBody:
    """The streamed body: batches written as fetched; the connection and the export's slot
    given back on close."""

    def __init__(self, opener: Opener, layout: Layout, release: Callable[[], None]):
        """Open the export now, so that a database failure is still a plain 503.

        release gives the export's slot back; it is called exactly once, on close.
        """
        self._release = release
        self._open = True
        self._finished = False
        # What ended the export early, when it failed on its own side (not the client's).
        self._failure: BaseException | None = None
        self._written_at: float | None = None
        # Batches fetched and pieces begun: what the heartbeat counts as progress, with a
        # write to the client under way.
        self._moves = 0
        # The server began sending the body (the export counts in the metrics from then).
        self._streaming = False
        self._ended = threading.Event()
        self._cursor: Rows | None = None
        try:
            self._conn, self._give_back = take_connection()
        except BaseException:
            self._open = False
            release()
            raise
        # The worker's heartbeat for gunicorn (gunicorn.conf.py wires it; None elsewhere).
        self._heartbeat: Callable[[], None] | None = current_app.extensions.get(
            "registry_heartbeat"
        )
        self._send_timeout = float(current_app.config["REGISTRY_EXPORT_SEND_TIMEOUT_S"])
        self._socket = request.environ.get("gunicorn.socket")
        self.stamp: Stamp
        try:
            opened = opener(self._conn)
        except BaseException:
            self.close()
            raise
        self.stamp, self._cursor, self._first = opened.stamp, opened.cursor, opened.first
        self.total = opened.total
        self._head, self._render = layout(opened)

    def __iter__(self) -> Iterator[bytes]:
        """The header (CSV), then each batch as soon as it is fetched.

        The export counts in the metrics (in flight, then whole or cut) from here: an answer
        whose body is never sent (HEAD, a 304 decided on the export's own generation) is
        closed without being iterated, and is no export, whole or cut.
        """
        self._streaming = True
        observe_export_started()
        if self._socket is not None:
            limit_sending(self._socket, self._send_timeout)
        if self._heartbeat is not None:
            # gunicorn kills a sync worker that shows no sign of life for its timeout; a write
            # to a slow reader may block for long, so a thread shows it while the export moves
            # (and only then: a stuck export must not keep its worker and slot for ever).
            threading.Thread(target=self._beat, name="export-heartbeat", daemon=True).start()
        try:
            batch, self._first = self._first, []
            if self._head or batch:
                yield from self._pieces(self._head + (self._render(batch) if batch else b""))
            while batch and self._cursor is not None:
                batch = fetch_export_batch(self._cursor, BATCH)
                self._moves += 1
                if batch:
                    yield from self._pieces(self._render(batch))
            self._finished = True
        except GeneratorExit:
            raise
        except BaseException as error:
            self._failure = error
            raise
        finally:
            self.close()

    def _pieces(self, data: bytes) -> Iterator[bytes]:
        """data in pieces of at most PIECE bytes, noting when each one's write began."""
        for start in range(0, len(data), PIECE):
            self._moves += 1
            self._written_at = time.monotonic()
            yield data if len(data) <= PIECE else data[start : start + PIECE]
            self._written_at = None

    def _beat(self) -> None:
        """Every HEARTBEAT_S until the export ends, show gunicorn the worker is alive if the
        export moves: a batch fetched or a piece begun since the last look, or a write to the
        client under way. A write may wait long on a slow reader that is still reading (from
        its own receive buffer, where the server cannot see it), and only the send timeout
        tells it from one that stopped. A FETCH the database does not answer moves nothing:
        the statement timeout or, where the server cannot even enforce that (paused,
        unreachable), gunicorn's timeout ends it, and the slot goes with the worker."""
        assert self._heartbeat is not None
        seen = -1
        while not self._ended.wait(HEARTBEAT_S):
            moves = self._moves
            if moves != seen or self._written_at is not None:
                self._heartbeat()
            seen = moves

    def close(self) -> None:
        """End the export and give the connection back (once; the server calls this too)."""
        if not self._open:
            return
        self._open = False
        self._ended.set()
        started = self._streaming
        # Each step runs whatever the one before it raised: the slot above all, which would
        # otherwise stay taken until the worker ends.
        try:
            try:
                close_export(self._conn, self._cursor)
            finally:
                self._give_back()
        finally:
            try:
                self._release()
            finally:
                if started:
                    observe_export_ended(None if self._finished else self._cut_cause())

    def _cut_cause(self) -> str:
        """Why the export ends early: the server stopped writing to a client that went away or
        stopped reading, the database failed (lost, or a FETCH past its time budget), or
        anything else (a shutdown)."""
        if isinstance(self._failure, psycopg.Error):
            return "database"
        if self._failure is not None or self._written_at is None:
            return "other"
        waited = time.monotonic() - self._written_at
        # A piece the client did not take within the send timeout; else the client left.
        return "send_timeout" if waited >= self._send_timeout * 0.95 else "client_gone"


def export_origins(representation: str, filters: dict[str, Any]) -> Response:
    """200 with every origin the filters match, streamed as NDJSON or CSV (stream_export)."""
    generation = filters.pop("generation", None)

    def opener(conn: psycopg.Connection) -> OpenedExport:
        return open_origin_export(
            conn, filters, generation, FIRST_BATCH, csv_rows=representation == CSV
        )

    return stream_export(
        representation, generation, opener, origin_layout(representation), "origins"
    )


# Checks what an export answers for, before it takes a slot: raises the error that answers
# instead (a since that answers nothing), else returns the stamp the export would answer with.
Check = Callable[[], Stamp | None]


def _before_a_slot(
    generation: int | None, representation: str, check: Check | None
) -> Response | None:
    """What answers an export request before it takes a slot: the 404 or 410 of a generation
    (or, through check, a since) that does not answer, raised; a 304 when the request's
    validators match the answer's; None when the export goes on. At most one light query:
    check's, or the pinned generation's state (the current one's, for a conditional request)."""
    if check is not None:
        stamp = check()
    elif generation is not None or is_conditional():
        stamp = pinned_stamp(get_connection(), generation)
    else:
        return None
    if stamp is None or not is_conditional():
        return None
    return not_modified_on(stamp, representation)


def stream_export(
    representation: str,
    generation: int | None,
    opener: Opener,
    layout: Layout,
    name: str,
    *,
    check: Check | None = None,
) -> Response:
    """200 with every row opener's export reads, streamed as NDJSON or CSV, as file name.*;
    or 304, 404 or 410; or 503 when the instance's exports are all taken.

    The generation headers and conditional requests are the JSON listing's (docs/api.md, Generations
    and conditional requests), with an ETag of its own for each representation. `Registry-Total` is
    the number of rows that follow (lines of NDJSON, CSV rows after the header). Whatever answers
    instead of the export (a generation or since that does not answer, a 304) is decided before a
    slot is taken (_before_a_slot), so that such a request never gets the limit's 503; check:
    the stamp of an answer that may be an error under the same validators (since=m), its
    errors raised.
    """
    try:
        early = _before_a_slot(generation, representation, check)
    except DATABASE_UNAVAILABLE:
        count_export_refused("unavailable")
        raise
    if early is not None:
        early.vary.add("Accept")
        return early
    slots: ExportSlots = current_app.extensions["registry_export_slots"]
    slot = slots.acquire()
    if slot is None:
        count_export_refused("limit")
        return export_limit_reached(slots.limit)
    try:
        body = ExportBody(opener, layout, lambda: slots.release(slot))
    except DATABASE_UNAVAILABLE:
        count_export_refused("unavailable")
        raise
    response = Response(body, mimetype=None, content_type=CONTENT_TYPES[representation])
    extension = FILE_EXTENSIONS[representation]
    response.headers["Content-Disposition"] = f'attachment; filename="{name}.{extension}"'
    response.headers["Registry-Total"] = str(body.total)
    response.vary.add("Accept")
    answer = stamped(response, body.stamp, representation)
    if answer is not response:
        # 304 after all (decided on the answer's own generation): nothing will be streamed.
        body.close()
        answer.vary.add("Accept")
    return answer
