"""After a load commits: its read model made all-visible, so that index-only scans skip the heap.

VACUUM marks a page all-visible only when every row on it is visible to every snapshot. A
snapshot taken before the load committed (an export's, which lasts as long as its client
reads) keeps the load's rows from that, and VACUUM leaves the pages as they were; autovacuum
would not come back either, since that VACUUM reset the table's insert counter. So the load
vacuums, and while pages are left it waits, a bounded time, for the snapshots older than its
commit to end (settle), then vacuums again. Past that bound `registry db vacuum` finishes the
job: the load starts it detached (registry.load_command), and it waits as long as it takes.
docs/loading.md ("All-visible after every load") says why this and not COPY ... FREEZE.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import psycopg
from psycopg import sql

from registry.database.generations import schema_name
from registry.database.queries import QUERIES
from registry.database.rows import first_row, scalar, scalars

# Between two looks at the snapshots still open; a VACUUM that found nothing to hold it back
# yet left pages (a page pinned by a reader, say) is tried again less and less often.
POLL_S = 1.0
MAX_RETRY_S = 60.0


@dataclass(frozen=True)
class Visibility:
    """The read model of one generation after a vacuum: pages, all-visible ones, and what
    still holds the horizon behind the load (sessions, slots, prepared transactions)."""

    generation: int
    pages: int
    all_visible: int
    holders: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Every page all-visible: index-only scans fetch nothing from the heap."""
        return self.all_visible >= self.pages

    def line(self) -> str:
        """One line for the operator."""
        if self.complete:
            return f"generation {self.generation}: read model all-visible ({self.pages} pages)"
        held = ", ".join(self.holders[:5]) or "nothing seen"
        more = f" and {len(self.holders) - 5} more" if len(self.holders) > 5 else ""
        return (
            f"generation {self.generation}: {self.all_visible} of {self.pages} read-model pages"
            f" all-visible; held back by snapshots older than the load: {held}{more}"
        )


def horizon(conn: psycopg.Connection) -> str:
    """Right after the commit: the transaction id that every row of the load precedes."""
    return str(scalar(conn, QUERIES["load/get_visibility_horizon"]))


def older_snapshots(conn: psycopg.Connection, after: str) -> list[str]:
    """What still holds the horizon behind after: sessions, slots, prepared transactions."""
    holders = scalars(conn, QUERIES["load/list_older_snapshots"], {"horizon": after})
    return [str(holder) for holder in holders]


def generation_schema(conn: psycopg.Connection, generation: int) -> str | None:
    """The schema holding generation now (`graph` while it is live), None once dropped."""
    row = first_row(conn, QUERIES["meta/get_current_generation"])
    live = int(row["generation"]) if row is not None and row["generation"] is not None else None
    schema = schema_name(generation, live)
    found = first_row(conn, QUERIES["load/get_read_model_visibility"], {"schema": schema})
    return None if found is None else schema


def vacuum(conn: psycopg.Connection, generation: int, schema: str) -> Visibility:
    """VACUUM the read model in schema (outside any transaction), and count its pages."""
    autocommit = conn.autocommit
    conn.autocommit = True
    try:
        statement = sql.SQL(QUERIES["load/vacuum_read_model"]).format(graph=sql.Identifier(schema))
        conn.execute(statement)
        row = first_row(conn, QUERIES["load/get_read_model_visibility"], {"schema": schema})
    finally:
        conn.autocommit = autocommit
    if row is None:
        return Visibility(generation, 0, 0)
    return Visibility(generation, int(row["pages"]), int(row["all_visible"]))


def settle(
    conn: psycopg.Connection,
    generation: int,
    after: str,
    wait_s: float,
    schema: Callable[[], str | None] | None = None,
) -> Visibility | None:
    """Vacuum generation's read model until every page is all-visible or wait_s has passed.

    Between vacuums it waits for the snapshots older than after (horizon) to end, looking
    every POLL_S. schema says where the generation is now (None: dropped, nothing to do);
    by default `graph`, the live one, right after its load. Returns the last count, with
    what held it back if pages are left; None if the generation was dropped meanwhile.
    """
    where = schema or (lambda: "graph")
    deadline = time.monotonic() + wait_s
    retry_s = POLL_S
    counted: Visibility | None = None
    next_vacuum = time.monotonic()
    holders: list[str] = []
    while True:
        now = time.monotonic()
        if counted is None or (now >= next_vacuum and not holders):
            place = where()
            if place is None:
                return None
            counted = vacuum(conn, generation, place)
            if counted.complete:
                return counted
            # Nothing seen held it back, yet pages are left: try again, less and less often.
            next_vacuum = now + retry_s
            retry_s = min(retry_s * 2, MAX_RETRY_S)
        holders = older_snapshots(conn, after)
        if time.monotonic() >= deadline:
            return Visibility(generation, counted.pages, counted.all_visible, holders)
        if holders:
            # Once they have ended, vacuum at once.
            next_vacuum = time.monotonic()
            retry_s = POLL_S
        time.sleep(POLL_S)


def lock_generation(conn: psycopg.Connection, generation: int) -> bool:
    """Whether this session may finish generation (no other `registry db vacuum` does)."""
    return bool(scalar(conn, QUERIES["meta/try_lock_vacuum"], {"generation": generation}))
