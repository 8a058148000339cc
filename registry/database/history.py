"""An origin's history through the kept change sets (docs/api.md, An origin's history).

One statement (sql/origins/get_origin_history.sql) reads, for one origin id, every kept change
set up to the generation asked for that names it, and its record in that generation's graph.
The versions are the spans between those change sets: the record each one left, passed on as
the JSON text the change set stored, never decoded.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import psycopg

from registry.database.generations import LIVE_SCHEMA, Stamp, graph_statement, row_stamp
from registry.database.rows import all_rows

_HISTORY = "origins/get_origin_history"
_NULL = "null"


@dataclass(frozen=True, slots=True)
class Version:
    """A span of generations [start, until) over which the record was `origin` (JSON text;
    None: absent). start None: no kept change set shows when it began; until None: still so."""

    start: int | None
    until: int | None
    origin: str | None

    def json(self) -> str:
        """The version as the API sends it, the record passed through as stored."""
        start = _NULL if self.start is None else str(self.start)
        until = _NULL if self.until is None else str(self.until)
        origin = _NULL if self.origin is None else self.origin
        return f'{{"from":{start},"until":{until},"origin":{origin}}}'


@dataclass(frozen=True, slots=True)
class History:
    """What the history of one origin says at one generation.

    The change sets it reads are those after oldest_since up to the generation, so the answer
    changes without a new generation only when a change set is dropped: changed_at is when
    the newest one up to the generation was (None: none was).
    """

    oldest_since: int | None
    changed_at: datetime | None
    versions: list[Version]

    def versions_json(self) -> str:
        """versions[] as one JSON array text, newest first."""
        return "[" + ",".join(version.json() for version in self.versions) + "]"


def versions(doc: str | None, changes: list[tuple[int, str | None, str | None]]) -> list[Version]:
    """The versions of an origin, newest first, from its record at the generation answered
    (doc) and its kept change sets up to it, newest first: (generation, before, after).

    Each change set begins a span that lasts until the next one; the record before the oldest
    change set, when there was one, is a span whose beginning no kept change set shows.
    """
    if not changes:
        return [] if doc is None else [Version(None, None, doc)]
    spans = []
    until: int | None = None
    for generation, _before, after in changes:
        spans.append(Version(generation, until, after))
        until = generation
    oldest_before = changes[-1][1]
    if oldest_before is not None:
        spans.append(Version(None, until, oldest_before))
    return spans


def get_origin_history(
    conn: psycopg.Connection, origin_uuid: str | None, schema: str = LIVE_SCHEMA
) -> tuple[Stamp, History | None]:
    """(stamp, history) of the origin with this uuid (lower-case; None: no uuid) up to the
    generation in schema; history None when it is absent there and in every kept change set."""
    rows = all_rows(conn, graph_statement(_HISTORY, schema), {"origin_uuid": origin_uuid})
    assert rows  # graph_info's one row, joined with the change sets or with nulls
    first = rows[0]
    changes = [
        (int(row["changed_in"]), row["before"], row["after"])
        for row in rows
        if row["changed_in"] is not None
    ]
    found = versions(first["doc"], changes)
    if not found:
        return row_stamp(first), None
    oldest = first["oldest_since"]
    oldest_since = None if oldest is None else int(oldest)
    return row_stamp(first), History(oldest_since, first["changes_dropped_at"], found)
