"""Loads land while an export of changes is read slowly (docs/api.md, "Changes between
generations"; docs/export.md): the export ends complete and exact, from the snapshot it
started in, although the loads delete the change sets it reads from and number the net
changes it walks again.

Retention keeps 3 graphs and 3 change sets, so each load drops the oldest change set kept, and
with it raises the oldest since of every kept generation (sql/load/drop_change_set.sql): the
rows of net_changes that answered since the old oldest since are raised to the new one and
numbered again (pos), and those that no longer answer anything are deleted. An export since
the oldest since reads exactly those rows. The reader takes the export's first batch, then
stops while loads land, then takes the rest, which the export fetches from the database only
then. The graph it answers (n) stays kept throughout. What it streamed must be what the
origins exported while m and n were current say.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from tests.api.since_support import NDJSON, SinceRegistry, ndjson_objects, new_registry

KEEP_GENERATIONS = KEEP_CHANGES = 3
# An export's first batch (registry/api/export.py FIRST_BATCH): the net changes are more than
# this, so that the rest is fetched from the database after the loads.
FIRST_BATCH = 100
# How long a load may take here before the test calls it stuck (a few seconds are usual).
STUCK_S = 120.0


@pytest.fixture
def registry(database_factory: Callable[[], str]) -> Iterator[SinceRegistry]:
    """Generations 1 to 5 loaded: change sets 3, 4 and 5 kept, so the oldest since is 2."""
    for made in new_registry(database_factory, KEEP_GENERATIONS, KEEP_CHANGES):
        for version in range(1, 6):
            assert made.load(version) == version
        yield made


class Loads:
    """Versions loaded in turn in a thread of their own, as cron's `registry load` runs beside
    the service, while the test holds an export open."""

    def __init__(self, registry: SinceRegistry, versions: range):
        """Start loading."""
        self.made: list[int] = []
        self.failed: list[BaseException] = []
        self._thread = threading.Thread(
            target=self._run, args=(registry, versions), name="loads", daemon=True
        )
        self._thread.start()

    def _run(self, registry: SinceRegistry, versions: range) -> None:
        """Load each version; keep what went wrong for the test to report."""
        try:
            for version in versions:
                self.made.append(registry.load(version))
        except BaseException as error:  # reported by finish(), whatever it was
            self.failed.append(error)

    def wait_for(self, condition: Callable[[], bool], what: str) -> None:
        """Poll condition while the loads run; fail when a load failed, or when they ended
        or got stuck without it ever holding."""
        deadline = time.monotonic() + STUCK_S
        while not condition():
            assert not self.failed, self.failed
            assert self._thread.is_alive() or condition(), f"the loads ended, never {what}"
            assert time.monotonic() < deadline, f"never {what}"
            time.sleep(0.05)

    def finish(self) -> list[int]:
        """Wait for the loads to end; the generations they made."""
        self._thread.join(timeout=STUCK_S)
        assert not self._thread.is_alive(), "a load is stuck"
        assert not self.failed, self.failed
        return self.made


def first_batch(export: Any) -> tuple[Iterator[bytes], list[bytes]]:
    """The export's pieces, and those of its first batch read whole: the next piece asked
    for makes the export fetch its next batch from the database."""
    pieces = iter(export.response)
    received = [next(pieces)]
    while b"".join(received).count(b"\n") < FIRST_BATCH:
        received.append(next(pieces))
    assert b"".join(received).count(b"\n") == FIRST_BATCH
    return pieces, received


def net_change_rows(registry: SinceRegistry, generation: int) -> list[tuple[int, int, bool]]:
    """(lo, rows, numbered) of generation's net changes, per lo, numbered when the rows hold
    the places 1 to their count (migrations 005 and 006): how retention left them."""
    with psycopg.connect(registry.conninfo, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT lo, count(*), count(DISTINCT pos) = count(*) AND min(pos) = 1"
            " AND max(pos) = count(*) FROM registry_meta.net_changes"
            " WHERE generation = %s GROUP BY lo ORDER BY lo",
            (generation,),
        ).fetchall()
    return [(int(lo), int(count), bool(numbered)) for lo, count, numbered in rows]


def test_an_export_since_the_oldest_since_ends_whole_while_loads_renumber_it(
    registry: SinceRegistry,
) -> None:
    """since=2 at 5, 2 being the oldest since: a load drops change set 3 between the export's
    first batch and the rest, so every row the export walks is raised to 3 and numbered
    again; then another drops 4. The export streams exactly the net changes from 2 to 5, as
    many as it said."""
    m, n = 2, 5
    assert registry.oldest_since() == m
    expected = registry.net_changes(m, n)
    assert len(expected) > FIRST_BATCH
    # Every net change since 2 is a row of lo 2, numbered: the rows the loads will touch.
    assert net_change_rows(registry, n)[0] == (m, len(expected), True)

    export = registry.stream(f"/registry/changes?since={m}", NDJSON)
    assert export.status_code == 200, export.get_data()
    assert export.headers["Registry-Generation"] == str(n)
    assert export.headers["Registry-Total"] == str(len(expected))
    pieces, received = first_batch(export)

    loads = Loads(registry, range(6, 8))
    # The reader waits until generation 6 has dropped change set 3 (n's oldest since is then
    # 3, and its rows since 2 are rows since 3, numbered again), not until the loads end: on
    # PostgreSQL 15 a load's VACUUM of net_changes waits for the buffer pin the paused
    # export holds, and would wait for ever for a reader that waits for it.
    loads.wait_for(lambda: registry.oldest_since(n) > m, "a change set dropped")
    assert registry.oldest_since(n) in (3, 4)
    assert all(lo > m for lo, _, _ in net_change_rows(registry, n))
    # Only now does the export fetch the rest: in its snapshot, where nothing was dropped.
    received += list(pieces)
    export.close()
    streamed = ndjson_objects(b"".join(received))
    assert len(streamed) == len(expected)  # complete: as many as Registry-Total said
    assert streamed == expected  # exact: the records at 2 against the records at 5

    assert loads.finish() == [6, 7]
    assert registry.oldest_since() == registry.oldest_since(n) == 4
    gone = registry.get(f"/registry/changes?since={m}&generation={n}")
    assert gone.status_code == 410, gone.get_data()
    assert gone.get_json()["details"] == {"since": m, "oldest_since": 4, "current": 7}
    # n's rows are now exactly those since 4, all of lo 4, numbered 1 to their count.
    since_4 = len(registry.net_changes(4, n))
    assert net_change_rows(registry, n) == [(4, since_4, True)]


def test_a_plain_change_export_ends_whole_while_loads_land(registry: SinceRegistry) -> None:
    """The change set of generation 5, exported without since: two loads land between its
    first batch and the rest (they drop change sets 3 and 4 and the graphs of 3 and 4, and
    move 5 to graph_g5); it streams exactly 5's changes."""
    n = 5
    expected = registry.net_changes(n - 1, n)
    assert len(expected) > FIRST_BATCH

    export = registry.stream("/registry/changes", NDJSON)
    assert export.status_code == 200, export.get_data()
    assert export.headers["Registry-Generation"] == str(n)
    assert export.headers["Registry-Total"] == str(len(expected))
    pieces, received = first_batch(export)

    assert Loads(registry, range(6, 8)).finish() == [6, 7]
    listed = registry.get("/registry/generations").get_json()
    assert listed["oldest_since"] == 4
    assert [g["generation"] for g in listed["generations"]] == [7, 6, 5]
    newest = registry.get("/registry/changes?limit=1").get_json()
    assert (newest["generation"], newest["previous"]) == (7, 6)

    received += list(pieces)
    export.close()
    streamed = ndjson_objects(b"".join(received))
    assert len(streamed) == len(expected)
    assert streamed == expected
