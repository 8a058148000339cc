"""Origins as CSV rows (docs/export.md): RFC 4180, UTF-8, CRLF, a header row, safe in spreadsheets.

The rows are built once per load, in SQL (sql/load/build_origin_csv.sql, table origin_csv),
from the tables each Origin record is assembled from; an export streams them as stored, as
the NDJSON export streams the records. csv_row below is the definition they follow: the
fields of one stored record, written by Python's csv module. It still writes the CSV of a
graph loaded before origin_csv existed, and the tests hold the stored rows to it byte for
byte.

Spreadsheet safety: a text field taken from the graph (name, registry id, network id and
name, held reason) that begins with `=`, `+`, `-`, `@`, a tab or a carriage return is
written with a single quote `'` in front, so that Excel, LibreOffice and Google Sheets show
it as text instead of running it as a formula (OWASP's "CSV injection" advice). No other
field can begin so: ids are `svc:origin:<uuid>`, numbers are never negative, the rest are
fixed words or dates.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from typing import Any

import orjson

COLUMNS = (
    "id",
    "name",
    "registry_id",
    "network_id",
    "network_name",
    "governance_state",
    "active_edges",
    "allocated",
    "address",
    "network",
    "station",
    "channel",
    "publication_status",
    "held_at",
    "held_reason",
    "transports",
    "presentations",
)
TRANSPORT_ORDER = ("iptv", "ovp", "ota", "fast")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(text: str | None) -> str | None:
    """text, with a quote in front when a spreadsheet would take it for a formula."""
    if text and text.startswith(FORMULA_STARTS):
        return "'" + text
    return text


def csv_row(record: dict[str, Any]) -> list[Any]:
    """The CSV fields of one Origin record; None is an empty field."""
    origin = record["origin"]
    network = origin["network"]
    governance = record["governance"]
    bans = record["bans"]
    held = bans["held"] or {}
    presentations = record["presentations"]
    present = {presentation["transport"] for presentation in presentations}
    return [
        origin["id"],
        spreadsheet_safe(origin["name"]),
        spreadsheet_safe(origin["registry_id"]),
        spreadsheet_safe(network["id"]),
        spreadsheet_safe(network["name"]),
        governance["state"],
        governance["active_edges"],
        "true" if bans["allocated"] else "false",
        bans["address"],
        bans["network"],
        bans["station"],
        bans["channel"],
        bans["publication_status"],
        held.get("at"),
        spreadsheet_safe(held.get("reason")),
        ";".join(transport for transport in TRANSPORT_ORDER if transport in present),
        len(presentations),
    ]


def stored_rows(lines: list[bytes]) -> bytes:
    """CSV rows as origin_csv stores them (each ending in CRLF), sent as they are."""
    return b"".join(lines)


class OriginCsvWriter:
    """Turns batches of stored records (JSON text) into CSV bytes, one batch at a time."""

    def __init__(self) -> None:
        """A writer over a buffer that each batch empties."""
        self._buffer = io.StringIO()
        self._writer = csv.writer(self._buffer, lineterminator="\r\n")

    def _take(self) -> bytes:
        """What was written since the last call, as UTF-8."""
        text = self._buffer.getvalue()
        self._buffer.seek(0)
        self._buffer.truncate()
        return text.encode("utf-8")

    def header(self) -> bytes:
        """The header row."""
        self._writer.writerow(COLUMNS)
        return self._take()

    def rows(self, docs: Iterable[bytes]) -> bytes:
        """One row per record."""
        self._writer.writerows(csv_row(orjson.loads(doc)) for doc in docs)
        return self._take()
