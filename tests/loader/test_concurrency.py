"""Readers during a load: every answer is entirely the old graph or entirely the new one,
answers keep coming while the load runs, and a failed load leaves the old graph served."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import psycopg
import pytest

from registry.database import repository
from registry.database.pool import Database
from registry.loader.loading import LoadRejected
from registry.settings import load_settings

from .graphs import Record, document, graph_state, load

A_ORIGINS = 300
# Large enough that the load takes about a second, so many reads overlap it.
B_ORIGINS = 20_000
READERS = 2
READS_AFTER_LOAD = 10  # per reader, once the load has returned


def origin_uuid(letter: str, number: int) -> str:
    """A distinct origin uuid per graph (its first group spells the graph's letter)."""
    return f"{letter.lower() * 8}-0000-4000-8000-{number:012x}"


def graph_records(letter: str, origins: int) -> Iterator[Record]:
    """A graph whose every origin is named after its letter: A-00000, A-00001, ..."""
    yield {"type": "catalog", "transports": ["iptv", "ovp"]}
    yield {
        "type": "feed",
        "connected": True,
        "networks": origins,
        "iptv_networks": None,
        "ovp_networks": None,
        "channels": origins,
        "programs": None,
        "reviews": None,
        "pending_reviews": None,
    }
    for number in range(origins):
        origin_id = f"svc:origin:{origin_uuid(letter, number)}"
        yield {
            "type": "origin",
            "id": origin_id,
            "name": f"{letter}-{number:05d}",
            "network_id": None,
            "registry_id": f"{letter}{number}",
            "reviewed": True,
        }
        yield {
            "type": "carriage",
            "id": f"{letter}-carriage-{number}",
            "transport": ("iptv", "ovp")[number % 2],
            "provider": f"{letter} provider",
            "source": None,
            "availability": None,
            "origin_id": origin_id,
        }
        if number % 2 == 0:
            yield {
                "type": "allocation",
                "origin_id": origin_id,
                "network": 1,
                "station": number // 1000,
                "channel": number % 1000,
                "publication_status": "published",
                "held_at": None,
                "held_reason": None,
            }
        if number % 3 == 0:
            yield {
                "type": "governance_edge",
                "origin_id": origin_id,
                "governor_id": f"svc:domain:{letter}",
                "active": True,
            }


# The reads of the service, each one statement: (name, query on a pooled connection).
READS: list[tuple[str, Callable[[psycopg.Connection], Any]]] = [
    ("first page", lambda conn: repository.list_origins(conn, {}, 50, 0)),
    ("a later page", lambda conn: repository.list_origins(conn, {}, 50, 200)),
    ("transport filter", lambda conn: repository.list_origins(conn, {"transport": "iptv"}, 20, 0)),
    ("search", lambda conn: repository.list_origins(conn, {"search": "-0002"}, 20, 0)),
    ("registry summary", repository.get_registry_summary),
    ("integration status", repository.get_integration_status),
    ("an origin of A", lambda conn: repository.get_origin_by_id(conn, origin_uuid("A", 7))),
    ("an address", lambda conn: repository.get_origin_by_address(conn, 1, 0, 4)),
]


def digest(answer: Any) -> str:
    """A short fingerprint of one answer, so that thousands of them can be kept."""
    return hashlib.sha256(orjson.dumps(answer, option=orjson.OPT_SORT_KEYS)).hexdigest()


@dataclass
class Read:
    """One answered read: which query, when it ran, and the answer's fingerprint."""

    query: int
    started: float
    finished: float
    answer: str


@dataclass
class Reader:
    """A thread that keeps issuing the service's reads through the service's own pool."""

    database: Database
    stop: threading.Event
    reads: list[Read] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def run(self) -> None:
        """Read until told to stop; keep every answer's fingerprint and every failure."""
        query = 0
        while not self.stop.is_set():
            started = time.monotonic()
            try:
                with self.database.pool.connection() as conn:
                    answer = READS[query][1](conn)
            except Exception as error:  # any failed read fails the test, after the load
                self.errors.append(f"{READS[query][0]}: {error!r}")
            else:
                self.reads.append(Read(query, started, time.monotonic(), digest(answer)))
            query = (query + 1) % len(READS)

    def reads_after(self, moment: float) -> int:
        """How many reads started after moment."""
        return sum(1 for read in self.reads if read.started > moment)


def answers(conninfo: str) -> list[str]:
    """The fingerprint of every read's answer on the graph served now, read quietly."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        return [digest(query(conn)) for _, query in READS]


@pytest.fixture(scope="module")
def concurrency_db(database_factory: Callable[[], str]) -> str:
    """A database of its own: every test here starts by loading graph A."""
    return database_factory()


@pytest.fixture(scope="module")
def graph_a() -> bytes:
    """The old graph: a few hundred origins named A-..."""
    return document(list(graph_records("A", A_ORIGINS)))


@pytest.fixture(scope="module")
def graph_b() -> bytes:
    """The new graph: tens of thousands of origins named B-..., with every kind of record."""
    return document(list(graph_records("B", B_ORIGINS)))


@pytest.fixture
def service_database(concurrency_db: str) -> Iterator[Database]:
    """The service's own pool (autocommit, read-only sessions, its timeouts) on the database."""
    settings = load_settings({"DATABASE_URL": concurrency_db, "REGISTRY_POOL_MAX_SIZE": 4})
    database = Database(settings)
    yield database
    database.close()


def read_during(
    database: Database, action: Callable[[], Any]
) -> tuple[list[Reader], float, float, BaseException | None]:
    """Run action while READERS threads read; return them, when it ran and what it raised."""
    stop = threading.Event()
    readers = [Reader(database, stop) for _ in range(READERS)]
    threads = [threading.Thread(target=reader.run, daemon=True) for reader in readers]
    for thread in threads:
        thread.start()
    # every reader has answered from the old graph before the load begins
    deadline = time.monotonic() + 10
    while any(len(reader.reads) < len(READS) for reader in readers):
        assert time.monotonic() < deadline, "the readers never got going"
        time.sleep(0.01)
    raised: BaseException | None = None
    started = time.monotonic()
    try:
        action()
    except Exception as error:
        raised = error
    finished = time.monotonic()
    deadline = time.monotonic() + 10
    while any(reader.reads_after(finished) < READS_AFTER_LOAD for reader in readers):
        if time.monotonic() > deadline:
            break
        time.sleep(0.01)
    stop.set()
    for thread in threads:
        thread.join(timeout=30)
    return readers, started, finished, raised


def labels(reader: Reader, old: list[str], new: list[str]) -> list[str]:
    """Each read's answer as "old" or "new"; anything else is a mix and fails the test."""
    found = []
    for read in reader.reads:
        if read.answer == old[read.query]:
            found.append("old")
        elif read.answer == new[read.query]:
            found.append("new")
        else:
            pytest.fail(f"{READS[read.query][0]}: an answer that is neither graph A nor graph B")
    return found


def test_readers_see_the_old_graph_or_the_new_one_never_a_mix(
    concurrency_db: str, service_database: Database, graph_a: bytes, graph_b: bytes
) -> None:
    """Old answers until the commit, new ones after it, nothing in between, no waiting."""
    load(concurrency_db, graph_a)
    old = answers(concurrency_db)
    readers, started, finished, raised = read_during(
        service_database, lambda: load(concurrency_db, graph_b)
    )
    assert raised is None
    new = answers(concurrency_db)
    assert all(a != b for a, b in zip(old, new, strict=True))  # every read tells them apart
    assert graph_state(concurrency_db)["total"] == B_ORIGINS
    for reader in readers:
        assert reader.errors == []
        seen = labels(reader, old, new)
        # old, then new, and never back: the switch happens once, at the commit
        assert seen[0] == "old" and seen[-1] == "new"
        assert "old" not in seen[seen.index("new") :]
        after = [
            label for label, read in zip(seen, reader.reads, strict=True) if read.started > finished
        ]
        assert len(after) >= READS_AFTER_LOAD and set(after) == {"new"}
        during = [
            label
            for label, read in zip(seen, reader.reads, strict=True)
            if read.started >= started and read.finished <= finished
        ]
        # the old graph kept being served while the new one was built
        assert "old" in during, f"no old answer during the {finished - started:.1f} s load"


def test_a_failed_load_leaves_the_old_graph_served_throughout(
    concurrency_db: str, service_database: Database, graph_a: bytes, graph_b: bytes
) -> None:
    """A load rejected after all of its rows went in changes nothing readers see."""
    load(concurrency_db, graph_a)
    before = graph_state(concurrency_db)
    old = answers(concurrency_db)
    # one dangling reference on the last line: found only once every row is in the database
    dangling = {
        "type": "governance_edge",
        "origin_id": f"svc:origin:{origin_uuid('C', 0)}",
        "governor_id": "svc:domain:C",
        "active": True,
    }
    readers, _, finished, raised = read_during(
        service_database, lambda: load(concurrency_db, graph_b + document([dangling]))
    )
    assert isinstance(raised, LoadRejected)
    assert raised.problems[0].field == "origin_id"
    assert graph_state(concurrency_db) == before
    for reader in readers:
        assert reader.errors == []
        assert {read.answer for read in reader.reads} <= set(old)
        assert all(read.answer == old[read.query] for read in reader.reads)
        assert reader.reads_after(finished) >= READS_AFTER_LOAD
