"""Generations (docs/api.md, Generations and conditional requests): which schema holds generation n,
and reads pinned to one.

The newest generation lives in schema `graph`, so an unpinned read is one statement on
`graph.` exactly as before generations; a load renames the graph it replaces `graph_g<n>`
(n its generation) and drops generations older than the newest REGISTRY_KEEP_GENERATIONS
after its commit. Every read query returns the generation and commit time of the schema it
read, in the same statement, so an answer's headers always describe the rows in its body.

A read pinned to n tries `graph` first when n may be the newest, else `graph_g<n>`; when the
schema is missing (dropped, even while the request ran, or renamed by a load that just
committed) registry_meta.generations says what became of n: kept somewhere else (retry),
dropped (GenerationDropped) or never produced (GenerationNotProduced).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import TypeVar

import psycopg
from psycopg import sql

from registry.database.queries import QUERIES
from registry.database.rows import Row, first_row, one_row

LIVE_SCHEMA = "graph"
# The largest generation a request may name: the sequence is a PostgreSQL bigint.
MAX_GENERATION = 2**63 - 1

_CURRENT = QUERIES["meta/get_current_generation"]
_STATE = QUERIES["meta/get_generation_state"]
_MISSING = (psycopg.errors.UndefinedTable, psycopg.errors.InvalidSchemaName)
# A pinned read retries at most this often when loads keep renaming schemas under it.
_ATTEMPTS = 4

T = TypeVar("T")


@dataclass(frozen=True)
class Stamp:
    """The generation an answer came from, the moment that generation was committed, and its
    digest (registry.digest; None for a generation loaded before digests that no upgrade
    reached)."""

    generation: int
    committed_at: datetime
    digest: str | None


class GenerationNotProduced(Exception):
    """A pinned generation that this registry never produced (404)."""

    def __init__(self, generation: int, current: int | None):
        super().__init__(f"generation {generation} was never produced")
        self.generation = generation
        self.current = current


class GenerationDropped(Exception):
    """A pinned generation that was produced but is no longer kept (410)."""

    def __init__(self, generation: int, current: int | None):
        super().__init__(f"generation {generation} is no longer kept")
        self.generation = generation
        self.current = current


@dataclass(frozen=True)
class GenerationState:
    """What registry_meta.generations says about one generation, and the newest one."""

    generation: int
    produced: bool
    committed_at: datetime | None
    digest: str | None
    dropped: bool
    current: int | None

    def require_kept(self) -> Stamp:
        """Its stamp when kept; GenerationNotProduced or GenerationDropped otherwise."""
        if not self.produced or self.committed_at is None:
            raise GenerationNotProduced(self.generation, self.current)
        if self.dropped:
            raise GenerationDropped(self.generation, self.current)
        return Stamp(self.generation, self.committed_at, self.digest)


def schema_name(generation: int | None, live: int | None = None) -> str:
    """The schema holding generation (None, or the live one: `graph`; else `graph_g<n>`)."""
    if generation is None or generation == live:
        return LIVE_SCHEMA
    return f"graph_g{generation}"


@cache
def graph_statement(name: str, schema: str = LIVE_SCHEMA) -> str:
    """The SQL file `name` with its {graph} placeholders naming schema (composed once)."""
    composed = sql.SQL(QUERIES[name]).format(graph=sql.Identifier(schema))
    return composed.as_string(None)


def current_generation(conn: psycopg.Connection) -> Stamp | None:
    """The newest generation and its commit time; None if no graph was ever loaded."""
    row = first_row(conn, _CURRENT)
    if row is None or row["generation"] is None:
        return None
    stamp = row_stamp(row)
    _note_live(stamp.generation)
    return stamp


def generation_state(conn: psycopg.Connection, generation: int) -> GenerationState:
    """What became of generation: produced or not, kept or dropped, and the newest one."""
    row = one_row(conn, _STATE, {"generation": generation})  # a LEFT JOIN from one row
    current = row["current"]
    if current is not None:
        _note_live(int(current))
    return GenerationState(
        generation,
        bool(row["produced"]),
        row["committed_at"],
        row["digest"],
        row["dropped_at"] is not None,
        current,
    )


def pinned_stamp(conn: psycopg.Connection, generation: int | None) -> Stamp | None:
    """The stamp a request pinned to generation (or not pinned) would be answered with.

    Raises GenerationNotProduced or GenerationDropped for a generation that is not kept; None
    when nothing was ever loaded. One tiny query: this is the 304 path.
    """
    if generation is None:
        return current_generation(conn)
    return generation_state(conn, generation).require_kept()


def read_generation(
    conn: psycopg.Connection,
    generation: int | None,
    read: Callable[[psycopg.Connection, str], tuple[Stamp, T]],
) -> tuple[Stamp, T]:
    """Run read(conn, schema) on the schema holding generation (None: the newest).

    read returns the stamp its statement saw in that schema's graph_info with its result;
    a pinned read checks it and reruns on the right schema after a load renamed them.
    """
    if generation is None:
        newest = read(conn, LIVE_SCHEMA)
        _note_live(newest[0].generation)
        return newest
    # The newest generation lives in `graph`; an older one in its own schema.
    schema = LIVE_SCHEMA if generation >= _live_seen else schema_name(generation)
    for _ in range(_ATTEMPTS):
        answer: tuple[Stamp, T] | None = None
        with contextlib.suppress(*_MISSING):
            answer = read(conn, schema)
        if answer is not None and answer[0].generation == generation:
            return answer
        if answer is not None and schema == LIVE_SCHEMA:
            _note_live(answer[0].generation)
        # Not where we looked: ask where it went (this also raises for 404 and 410).
        state = generation_state(conn, generation)
        state.require_kept()
        schema = schema_name(generation, state.current)
    # Loads renamed schemas under us every time: rare enough to ask the caller to retry.
    raise psycopg.errors.QueryCanceled("generation moved on every attempt")


_live_seen = 0


def _note_live(generation: int) -> None:
    """Remember the newest generation this process has seen (a hint: every read checks it)."""
    global _live_seen
    if generation > _live_seen:
        _live_seen = generation


def row_stamp(row: Row) -> Stamp:
    """The stamp of a read query's row: its columns generation, committed_at and digest."""
    return Stamp(int(row["generation"]), row["committed_at"], row["digest"])
