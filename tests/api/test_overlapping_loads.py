"""Two loads that overlap publish exact net changes (docs/api.md, "Changes between
generations"; docs/loading.md, "Change sets kept longer than graphs").

A load drops retired change sets after its commit, and each drop raises the oldest since of
every kept generation and fixes their net changes. The next load builds its own net changes
from the oldest since. If that build could run while a drop was still uncommitted, it would
read the oldest since from before the drop, and the drop, which cannot see the new rows,
would leave them built for a since that is gone: since=<oldest> would then answer with rows
missing until another drop. Every post-commit drop holds the load lock, so a build runs
either before a drop begins or after it has committed.

The test holds that window open on purpose: a session of its own locks the row that load A's
drop updates last, so the drop waits inside its transaction; load B starts meanwhile; once A
has finished, a second session holds B's net-change rows so that B's own drop (which would
repair them) waits too; then since=<oldest> is read, as pages and as an export, and checked
against the difference of two origin exports saved when those generations were current.
"""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import psycopg
import pytest

from registry.loader.loading import load_document
from tests.conftest import document
from tests.properties.catchup_support import CatchupGraph, changes_url, ndjson, sweep_changes

NDJSON = "application/x-ndjson"
KEEP_GENERATIONS = 2
KEEP_CHANGES = 3
ORIGINS = 40
BLOCKS = ("origin", "governance", "bans", "presentations")
# The row waits and the load lock wait, as pg_stat_activity names them.
ROW_WAITS = ("transactionid", "tuple")


def origin_id(number: int) -> str:
    """The id of origin number."""
    return f"svc:origin:00000000-0000-4000-8000-{number:012d}"


def graph(load: int) -> list[dict[str, Any]]:
    """The document of the load-th load: each origin renamed at a pace of its own (every 1 to
    5 loads), absent from some loads, its allocation moved every third load, so that the net
    changes since any generation mix every kind and rows that began at every generation."""
    records: list[dict[str, Any]] = []
    for number in range(1, ORIGINS + 1):
        if (load + number) % 7 == 0:
            continue
        records.append(
            {
                "type": "origin",
                "id": origin_id(number),
                "name": f"origin {number} v{load // (1 + number % 5)}",
                "network_id": None,
                "registry_id": None,
                "reviewed": True,
            }
        )
        if number % 3 == 0:
            records.append(
                {
                    "type": "allocation",
                    "origin_id": origin_id(number),
                    "network": 1,
                    "station": number,
                    "channel": 1 + (load // 3 + number) % 4,
                    "publication_status": "published",
                    "held_at": None,
                    "held_reason": None,
                }
            )
    return records


def load(conninfo: str, number: int, name: str) -> None:
    """The load-th document through the loader, on a connection named name, with this file's
    retention settings."""
    with psycopg.connect(conninfo, autocommit=True, application_name=name) as conn:
        load_document(
            conn,
            io.BytesIO(document(graph(number))),
            keep_generations=KEEP_GENERATIONS,
            keep_changes=KEEP_CHANGES,
        )


def waiting(watcher: psycopg.Connection, name: str, events: tuple[str, ...] | None = None) -> bool:
    """Whether the session named name waits for a lock (of one of events, when given)."""
    row = watcher.execute(
        "SELECT wait_event_type, wait_event FROM pg_stat_activity WHERE application_name = %s",
        (name,),
    ).fetchone()
    if row is None or row[0] != "Lock":
        return False
    return events is None or row[1] in events


def until(condition: Callable[[], bool], what: str) -> None:
    """Wait for condition, polling; fail naming what did not happen within a minute."""
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.05)


def origins_export(graph_app: CatchupGraph) -> dict[str, Any]:
    """Every origin of the current generation, by id, from the NDJSON export."""
    records = ndjson(graph_app.get("/registry/origins", NDJSON))
    return {record["origin"]["id"]: record for record in records}


def net_changes(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """The net changes from one saved export to another, as the API states them."""
    changes = []
    for identifier in sorted(before.keys() | after.keys()):
        old, new = before.get(identifier), after.get(identifier)
        if old == new:
            continue
        kind = "added" if old is None else "removed" if new is None else "changed"
        blocks = (
            [block for block in BLOCKS if old[block] != new[block]] if kind == "changed" else []
        )
        changes.append(
            {"id": identifier, "kind": kind, "blocks": blocks, "before": old, "after": new}
        )
    return changes


class Thread(threading.Thread):
    """A thread that keeps what its target raised, for the test to raise again."""

    def __init__(self, target: Callable[[], None]):
        super().__init__(target=self._run, daemon=True)
        self._target_call = target
        self.error: BaseException | None = None

    def _run(self) -> None:
        try:
            self._target_call()
        except BaseException as error:  # raised again by finish()
            self.error = error

    def finish(self) -> None:
        """Join, and raise what the target raised."""
        self.join(timeout=120)
        assert not self.is_alive()
        if self.error is not None:
            raise self.error


@pytest.fixture
def catchup(database_factory: Callable[[], str]) -> Iterator[CatchupGraph]:
    """A fresh database and the app over it."""
    graph_app = CatchupGraph(database_factory(), KEEP_GENERATIONS, KEEP_CHANGES)
    yield graph_app
    graph_app.close()


def check_since(graph_app: CatchupGraph, since: int, expected: list[dict[str, Any]]) -> None:
    """since as pages followed by Link and as an NDJSON export: exactly expected."""
    generation = graph_app.get("/registry/generations").get_json()["current"]
    paged, bodies = sweep_changes(
        graph_app, changes_url(since, generation, limit="7"), since, generation
    )
    assert [change["id"] for change in paged] == [change["id"] for change in expected]
    assert paged == expected
    assert bodies[0]["page"]["total"] == len(expected)
    assert ndjson(graph_app.get(changes_url(since), NDJSON)) == expected


def test_a_load_that_overlaps_a_change_set_drop_publishes_exact_net_changes(
    catchup: CatchupGraph,
):
    conninfo = catchup.conninfo
    saved: dict[int, dict[str, Any]] = {}
    for number in range(1, 5):
        load(conninfo, number, f"load-{number}")
        saved[number] = origins_export(catchup)
    # Load 4 dropped change set 1; load 5 (A) drops change set 2, after which the oldest
    # since is 2; load 6 (B) builds its net changes meanwhile, then drops change set 3.
    assert catchup.get("/registry/generations").get_json()["oldest_since"] == 1
    watcher = psycopg.connect(conninfo, autocommit=True)
    holds_a = psycopg.connect(conninfo)
    holds_b = psycopg.connect(conninfo)
    try:
        holds_a.execute(
            "SELECT FROM registry_meta.generations WHERE generation = 2 FOR UPDATE"
        ).fetchall()
        a = Thread(lambda: load(conninfo, 5, "load-a"))
        a.start()
        until(lambda: waiting(watcher, "load-a"), "load A's drop waits for the held row")
        b = Thread(lambda: load(conninfo, 6, "load-b"))
        b.start()
        until(lambda: waiting(watcher, "load-b"), "load B waits behind load A's drop")
        # B's rows, if it has committed any: its own drop must not repair them yet.
        holds_b.execute(
            "SELECT FROM registry_meta.net_changes WHERE generation = 6 FOR UPDATE"
        ).fetchall()
        holds_a.rollback()
        a.finish()
        until(
            lambda: not b.is_alive() or waiting(watcher, "load-b", ROW_WAITS),
            "load B ends, or its drop waits for its held rows",
        )
        # Whichever drops have committed by now (A's alone, before the fix; B's too, which
        # waited for A's), every since the registry says it keeps is exact.
        body = catchup.get("/registry/generations").get_json()
        assert body["current"] == 6
        now = origins_export(catchup)
        for since in range(body["oldest_since"], 5):
            check_since(catchup, since, net_changes(saved[since], now))
        holds_b.rollback()
        b.finish()
    finally:
        for conn in (holds_a, holds_b, watcher):
            conn.close()
    # Once both drops are done: the oldest since is 3, and every kept since is exact.
    body = catchup.get("/registry/generations").get_json()
    assert (body["current"], body["oldest_since"]) == (6, 3)
    check_since(catchup, 3, net_changes(saved[3], now))
    check_since(catchup, 4, net_changes(saved[4], now))
    assert orjson.dumps(now) == orjson.dumps(origins_export(catchup))
