"""The listing's other representations (contract 8): NDJSON and CSV, streamed.

Content negotiation picks JSON (the spec's listing), NDJSON or CSV from `Accept`. An export
reads every match through one server-side cursor in one REPEATABLE READ transaction
(registry.database.exports) and writes each batch as soon as it is fetched: memory holds one
batch, the first bytes leave after the first small batch, and every row comes from the
snapshot the export started on. Both formats send what the load stored: the records for
NDJSON, the CSV rows of origin_csv for CSV (registry.api.origin_csv), nothing decoded.

The connection outlives the request: Flask's teardown runs before a streamed body is
written, so the body takes the request's connection over and gives it back itself when the
last batch is out, when the client goes away (the server closes the body: the transaction is
rolled back, which drops the cursor) or when anything fails on the way. A failure after the
first bytes cuts the answer short (the server closes the connection without ending the
chunked body), so a client never mistakes a partial export for a whole one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import psycopg
from flask import Response, current_app, request

from registry.api.connection import take_connection
from registry.api.errors import error_response
from registry.api.generations import not_modified_early, stamped
from registry.api.origin_csv import OriginCsvWriter, stored_rows
from registry.database.exports import close_origin_export, fetch_export_batch, open_origin_export
from registry.database.generations import Stamp

JSON = "application/json"
NDJSON = "application/x-ndjson"
CSV = "text/csv"
# In order of preference when Accept ranks several the same (`*/*`, `application/*`).
OFFERED = (JSON, NDJSON, CSV)
CONTENT_TYPES = {NDJSON: NDJSON, CSV: "text/csv; charset=utf-8; header=present"}
FILE_NAMES = {NDJSON: "origins.ndjson", CSV: "origins.csv"}

# A small first batch gets the first bytes out at once; later ones are big enough that the
# round trips cost little and small enough that a worker's memory stays flat.
FIRST_BATCH = 100
BATCH = 2000
# A batch is written in pieces of at most this many bytes, with a heartbeat after each: a
# client reading slowly but steadily keeps the export alive, one that stopped does not.
PIECE = 256 * 1024


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


def _ndjson(docs: list[bytes]) -> bytes:
    """One record per line."""
    return b"\n".join(docs) + b"\n"


class ExportBody:
    """The streamed body: batches written as fetched; the connection given back on close."""

    def __init__(self, representation: str, filters: dict[str, Any], generation: int | None):
        """Open the export now, so that a database failure is still a plain 503."""
        self._conn, self._give_back = take_connection()
        self._cursor: psycopg.ServerCursor | None = None
        self._open = True
        # gunicorn's sync worker is declared dead when it shows no sign of life for its
        # timeout; an export shows one after each batch written (gunicorn.conf.py wires it).
        self._heartbeat: Callable[[], None] | None = current_app.extensions.get(
            "registry_heartbeat"
        )
        self.stamp: Stamp
        try:
            opened = open_origin_export(
                self._conn, filters, generation, FIRST_BATCH, csv_rows=representation == CSV
            )
        except BaseException:
            self.close()
            raise
        self.stamp, self._cursor, self._first = opened.stamp, opened.cursor, opened.first
        self._render: Callable[[list[bytes]], bytes]
        if representation == CSV:
            writer = OriginCsvWriter()
            self._head = writer.header()
            # A graph loaded before origin_csv existed: rows written from its records.
            self._render = stored_rows if opened.csv_rows else writer.rows
        else:
            self._head = b""
            self._render = _ndjson

    def __iter__(self) -> Iterator[bytes]:
        """The header (CSV), then each batch as soon as it is fetched."""
        try:
            batch, self._first = self._first, []
            if self._head or batch:
                yield from self._pieces(self._head + (self._render(batch) if batch else b""))
            while batch and self._cursor is not None:
                batch = fetch_export_batch(self._cursor, BATCH)
                if batch:
                    yield from self._pieces(self._render(batch))
        finally:
            self.close()

    def _pieces(self, data: bytes) -> Iterator[bytes]:
        """data in pieces of at most PIECE bytes, a heartbeat after each one is written."""
        for start in range(0, len(data), PIECE):
            yield data if len(data) <= PIECE else data[start : start + PIECE]
            if self._heartbeat is not None:
                self._heartbeat()

    def close(self) -> None:
        """End the export and give the connection back (once; the server calls this too)."""
        if not self._open:
            return
        self._open = False
        try:
            close_origin_export(self._conn, self._cursor)
        finally:
            self._give_back()


def export_origins(representation: str, filters: dict[str, Any]) -> Response:
    """200 with every origin the filters match, streamed as NDJSON or CSV; or 304.

    The generation headers and conditional requests are the JSON listing's (contract 7),
    with an ETag of its own for each representation.
    """
    generation = filters.pop("generation", None)
    early = not_modified_early(generation, representation=representation)
    if early is not None:
        early.vary.add("Accept")
        return early
    body = ExportBody(representation, filters, generation)
    response = Response(body, mimetype=None, content_type=CONTENT_TYPES[representation])
    response.headers["Content-Disposition"] = f'attachment; filename="{FILE_NAMES[representation]}"'
    # nginx passes this answer on as it comes instead of buffering it (deploy/nginx.conf).
    response.headers["X-Accel-Buffering"] = "no"
    response.vary.add("Accept")
    answer = stamped(response, body.stamp, representation)
    if answer is not response:
        # 304 after all (decided on the answer's own generation): nothing will be streamed.
        body.close()
        answer.vary.add("Accept")
    return answer
