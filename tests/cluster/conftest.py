"""The replicated cluster of devtools.cluster, once per module, and traffic through its nginx.

These tests start two PostgreSQL servers (the machine's binaries, else the embedded server's), two
PgBouncers, two gunicorn instances and nginx, so they run on their own: `make test-cluster`
(REGISTRY_CLUSTER_TESTS=1); `make test` skips them. With that variable set, a missing
pgbouncer or nginx is a failure, not a skip.
"""

from __future__ import annotations

import http.client
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import psycopg
import pytest

from devtools.cluster import READER, SUPERUSER, Cluster, start_cluster
from devtools.cluster_parts import PostgresServer
from tests.conftest import FIXTURES
from tests.e2e.raw_http import Answer, request

ROUTES = [
    "/summary",
    "/registry/summary",
    "/registry/origins?limit=2",
    "/registry/addresses/9.10.3",
    "/registry/origins/3b2f1e0d-9c8b-4a7f-8e6d-5c4b3a291807",
]
UNAVAILABLE = {"success": False, "error": "Service Unavailable"}
# The apps' lag limit here: short, so a paused standby is past it soon.
MAX_LAG_S = 1


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test here gets the cluster marker."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.cluster)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """Primary, standby, PgBouncers, two gunicorn instances and nginx over the worked example."""
    if os.environ.get("REGISTRY_CLUSTER_TESTS") != "1":
        pytest.skip("the cluster tests run with `make test-cluster`")
    # Not pytest's tmp_path: its folders are private to this user, and PostgreSQL and
    # PgBouncer run as another one when the tests run as root.
    folder = Path(tempfile.mkdtemp(prefix="registry-cluster-test-"))
    try:
        started = start_cluster(
            folder, FIXTURES / "small-graph.jsonl", {"REGISTRY_MAX_REPLICA_LAG_S": str(MAX_LAG_S)}
        )
        try:
            yield started
        finally:
            started.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@dataclass
class Seen:
    """One answer through nginx, and when it came (monotonic seconds)."""

    at: float
    route: str
    answer: Answer


def is_unavailable(answer: Answer) -> bool:
    """The documented 503: JSON body, Retry-After."""
    return (
        answer.status == 503
        and answer.header("Content-Type") == "application/json"
        and answer.header("Retry-After") is not None
        and orjson.loads(answer.body) == UNAVAILABLE
    )


class Traffic:
    """A few threads sending GETs over every route through nginx until stopped."""

    def __init__(self, cluster: Cluster, threads: int = 4):
        """Ready to start; the answers are kept in order of arrival."""
        assert cluster.nginx is not None
        self._port = cluster.nginx.port
        self._headers = {"Authorization": f"Bearer {cluster.token()}"}
        self._threads = [threading.Thread(target=self._run, args=(n,)) for n in range(threads)]
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.seen: list[Seen] = []

    def _run(self, number: int) -> None:
        """Send requests one after another, round the routes."""
        turn = number
        while not self._stop.is_set():
            route = ROUTES[turn % len(ROUTES)]
            turn += 1
            try:
                answer = request(self._port, "/v1" + route, headers=self._headers)
            except (OSError, http.client.HTTPException) as error:
                # A socket error or a response cut short is a failure too: status 0.
                answer = Answer(0, {}, f"{type(error).__name__}: {error}".encode())
            with self._lock:
                self.seen.append(Seen(time.monotonic(), route, answer))

    def __enter__(self) -> Traffic:
        """Start the threads."""
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        """Stop the threads and wait for them."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)

    def failures(self) -> list[Seen]:
        """Every answer that was not a 200."""
        return [seen for seen in self.seen if seen.answer.status != 200]

    def ok_between(self, start: float, end: float) -> int:
        """How many 200s arrived between two moments."""
        return sum(1 for s in self.seen if start <= s.at <= end and s.answer.status == 200)


def assert_failures_are_unavailable(traffic: Traffic) -> None:
    """Whatever failed was the documented JSON 503, never another status or a broken socket."""
    wrong = [
        (seen.route, seen.answer.status, seen.answer.body[:200])
        for seen in traffic.failures()
        if not is_unavailable(seen.answer)
    ]
    assert not wrong, wrong


def wait_until_all_ok(cluster: Cluster, limit_s: float = 60) -> None:
    """Wait until a round of every route through nginx, three times over, is all 200s."""
    assert cluster.nginx is not None
    headers = {"Authorization": f"Bearer {cluster.token()}"}
    deadline = time.monotonic() + limit_s
    while True:
        answers = [
            request(cluster.nginx.port, "/v1" + route, headers=headers) for route in ROUTES * 3
        ]
        if all(answer.status == 200 for answer in answers):
            return
        for answer in answers:
            if answer.status != 200:
                assert is_unavailable(answer), (answer.status, answer.body[:200])
        assert time.monotonic() < deadline, "the cluster did not recover"
        time.sleep(0.2)


def readers_on(cluster: Cluster, server: str) -> int:
    """The apps' reader connections (not their deliberate primary reads) that one server's
    PgBouncer serves, from its admin console (SHOW CLIENTS)."""
    bouncer = cluster.primary_bouncer if server == "primary" else cluster.standby_bouncer
    url = f"postgresql://{SUPERUSER}@127.0.0.1:{bouncer.port}/pgbouncer"
    # The admin console speaks only the simple query protocol: a client-side cursor.
    with psycopg.connect(url, autocommit=True, cursor_factory=psycopg.ClientCursor) as admin:
        cursor = admin.execute("SHOW CLIENTS")
        names = [column.name for column in cursor.description or []]
        rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    return sum(
        1
        for row in rows
        if row["user"] == READER and row.get("application_name") == "broadcast-registry"
    )


def wait_until_reads_on_standby(cluster: Cluster, limit_s: float = 60) -> None:
    """Under light traffic, wait until no reader connection of the apps is on the primary."""
    deadline = time.monotonic() + limit_s
    while readers_on(cluster, "primary"):
        assert time.monotonic() < deadline, "reads stayed on the primary"
        wait_until_all_ok(cluster)
        time.sleep(0.5)


def schema_on(server: PostgresServer, schema: str) -> bool:
    """Whether one server's database has this schema (a generation's graph_g<n>)."""
    with server.connect() as conn:
        row = conn.execute("SELECT to_regnamespace(%s) IS NOT NULL", (schema,)).fetchone()
    assert row is not None
    return bool(row[0])


def wait_until_replay_waits_on_a_lock(standby: PostgresServer, limit_s: float = 60) -> None:
    """Wait until the standby's startup process (its WAL replay) waits on a lock that a
    reader holds, as it does on a drop of tables an open transaction reads."""
    deadline = time.monotonic() + limit_s
    while replay_lock_wait_s(standby) is None:
        assert time.monotonic() < deadline, "replay never waited on a lock"
        time.sleep(0.2)


def replay_lock_wait_s(standby: PostgresServer) -> float | None:
    """How long the standby's replay has been waiting for a lock, by the standby's clock;
    None when it is not waiting on one."""
    with standby.connect() as conn:
        row = conn.execute(
            "SELECT extract(epoch FROM now() - min(l.waitstart))::float8"
            " FROM pg_locks l JOIN pg_stat_activity a USING (pid)"
            " WHERE a.backend_type = 'startup' AND a.wait_event_type = 'Lock'"
            " AND NOT l.granted"
        ).fetchone()
    return None if row is None or row[0] is None else float(row[0])
