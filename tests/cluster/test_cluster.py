"""The service in its scaled-out shape (docs/scaling.md), and losing one part at a time.

One cluster per module: a primary and a hot standby, a PgBouncer in transaction mode in front
of each, two gunicorn instances over DATABASE_URL naming both PgBouncers, nginx in front of
both instances. Each fault runs under steady traffic through nginx; the tests assert what
failed (nothing, or only the documented JSON 503) and that everything answers again after,
never how fast.
"""

from __future__ import annotations

import threading
import time

import orjson
import psycopg
import pytest

from devtools.cluster import READER, Cluster
from devtools.cluster_parts import PgBouncer, PostgresServer
from devtools.production_stack import free_port
from registry.database.generations import schema_name
from registry.database.pool import Database
from registry.database.queries import QUERIES
from registry.loader.demo import write_demo_document
from registry.settings import load_settings
from tests.cluster.conftest import (
    MAX_LAG_S,
    Traffic,
    assert_failures_are_unavailable,
    readers_on,
    replay_lock_wait_s,
    schema_on,
    wait_until_all_ok,
    wait_until_reads_on_standby,
    wait_until_replay_waits_on_a_lock,
)
from tests.conftest import FIXTURES, TEST_SECRET, make_token
from tests.e2e.raw_http import request
from tests.e2e.slow_client import SlowClient

pytestmark = pytest.mark.e2e


def cluster_workers(cluster: Cluster) -> int:
    """gunicorn workers over every app instance of the cluster."""
    return sum(len(app.worker_pids()) for app in cluster.apps)


def registry_summary(cluster: Cluster) -> dict:
    """/registry/summary through nginx, without its timestamp."""
    assert cluster.nginx is not None
    headers = {"Authorization": f"Bearer {cluster.token()}"}
    answer = request(cluster.nginx.port, "/v1/registry/summary", headers=headers)
    assert answer.status == 200, answer.body
    body = orjson.loads(answer.body)
    body.pop("generated_at", None)
    return body


def reader_backends(cluster: Cluster, server: str) -> int:
    """Server connections of the app's role on one PostgreSQL server."""
    target = cluster.primary if server == "primary" else cluster.standby
    with target.connect() as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE usename = %s", (READER,)
        ).fetchone()
    assert row is not None
    return int(row[0])


# -- the shape ---------------------------------------------------------------------------------


def test_the_cluster_answers_through_nginx_from_the_standby(cluster: Cluster):
    """Reads prefer the standby: the app's server connections are there."""
    wait_until_all_ok(cluster)
    assert reader_backends(cluster, "standby") >= 1
    with cluster.standby.connect() as conn:
        row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
    assert row == (True,)


def test_a_load_listing_the_standby_first_writes_to_the_primary(cluster: Cluster):
    """registry load forces target_session_attrs=read-write: the standby-first URL works."""
    before = registry_summary(cluster)
    result = cluster.load(FIXTURES / "small-graph.jsonl")
    assert result.returncode == 0, result.stderr
    cluster.wait_for_replay()
    assert registry_summary(cluster) == before


def test_session_settings_hold_per_transaction_through_pgbouncer(cluster: Cluster):
    """Through PgBouncer in transaction mode: read-only and the time budget, every request."""
    url = f"postgresql://{READER}@127.0.0.1:{cluster.primary_bouncer.port}/registry"
    settings = load_settings(
        {"DATABASE_URL": url, "REGISTRY_PGBOUNCER": True, "REGISTRY_STATEMENT_TIMEOUT_MS": 300}
    )
    database = Database(settings)
    try:
        for _ in range(3):  # a new transaction each time, maybe another server connection
            conn = database.getconn()
            try:
                timeout = conn.execute("SHOW statement_timeout").fetchone()
                read_only = conn.execute("SHOW transaction_read_only").fetchone()
                assert timeout == ("300ms",)
                assert read_only == ("on",)
                with pytest.raises(psycopg.errors.QueryCanceled):
                    conn.execute("SELECT pg_sleep(2)")
            finally:
                database.putconn(conn)
        conn = database.getconn()
        try:
            with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
                conn.execute("CREATE TABLE public.should_not_exist (x int)")
        finally:
            database.putconn(conn)
    finally:
        database.close()


def test_transaction_pooling_shares_one_server_backend_between_clients(cluster: Cluster):
    """A PgBouncer with a pool of one server connection: two clients (two pools of the app's
    own code, each with its own time budget) are answered by the same server backend, and
    each request still runs under its own client's settings."""
    primary = cluster.primary_bouncer
    single = PgBouncer(
        "pgbouncer-single", cluster.folder / "pgbouncer-single", free_port(),
        cluster.primary.port, primary.user,
    )  # fmt: skip
    single.folder.mkdir(parents=True, exist_ok=True)
    single.write_config()
    text = single.ini.read_text()
    for old, new in (("default_pool_size = 20", "default_pool_size = 1"),
                     ("reserve_pool_size = 5", "reserve_pool_size = 0")):  # fmt: skip
        assert old in text
        text = text.replace(old, new)
    single.ini.write_text(text)
    single.start()
    url = f"postgresql://{READER}@127.0.0.1:{single.port}/registry"
    databases = [
        Database(
            load_settings(
                {"DATABASE_URL": url, "REGISTRY_PGBOUNCER": True,
                 "REGISTRY_STATEMENT_TIMEOUT_MS": budget}
            )
        )
        for budget in (300, 700)
    ]  # fmt: skip
    try:
        seen = []
        for _ in range(2):
            for database, budget in zip(databases, ("300ms", "700ms"), strict=True):
                conn = database.getconn()
                try:
                    pid = conn.execute("SELECT pg_backend_pid()").fetchone()
                    timeout = conn.execute("SHOW statement_timeout").fetchone()
                    assert timeout == (budget,)
                    assert conn.execute("SHOW transaction_read_only").fetchone() == ("on",)
                    seen.append(pid)
                finally:
                    database.putconn(conn)
        # Both clients stayed connected to PgBouncer throughout; one server backend served all.
        assert len(set(seen)) == 1, seen
    finally:
        for database in databases:
            database.close()
        single.stop()


def test_a_restarted_standby_of_an_idle_primary_is_not_behind(cluster: Cluster):
    """Restarted, a standby reports as received the start of the WAL segment its streaming
    resumes from, behind what it replayed from its own files; with nothing new to receive it
    is as current as it can be, and reads stay on it (not the age of its last transaction)."""
    wait_until_all_ok(cluster)
    cluster.wait_for_replay()
    cluster.standby.stop()
    cluster.standby.start()
    deadline = time.monotonic() + 30
    with cluster.standby.connect() as conn:
        while True:
            received, replayed = conn.execute(
                "SELECT pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn()"
            ).fetchone() or (None, None)
            if received is not None:
                break
            assert time.monotonic() < deadline, "the standby did not resume streaming"
            time.sleep(0.1)
        lag = conn.execute(QUERIES["session/get_replica_lag"]).fetchone()
    assert lag == (0.0,), (received, replayed)
    wait_until_all_ok(cluster)


# -- generations across hosts ------------------------------------------------------------------


def generation_of(cluster: Cluster, target: str = "/v1/registry/summary") -> int:
    """The Registry-Generation of one answer through nginx."""
    assert cluster.nginx is not None
    headers = {"Authorization": f"Bearer {cluster.token()}"}
    answer = request(cluster.nginx.port, target, headers=headers)
    assert answer.status == 200, answer.body
    return int(answer.header("Registry-Generation") or 0)


def test_a_paused_standby_answers_neither_pinned_nor_stale_reads(cluster: Cluster):
    """Replay paused, a load on the primary: a read pinned to the new generation is answered
    (by the primary), and past the lag limit unpinned reads get the new generation too."""
    from app import create_app

    wait_until_all_ok(cluster)
    old = generation_of(cluster)
    # An app of its own with a lag limit nothing reaches, so only the pinned rule acts.
    patient = create_app(
        {
            "TESTING": True,
            "DATABASE_URL": cluster.read_url,
            "REGISTRY_PGBOUNCER": True,
            "REGISTRY_MAX_REPLICA_LAG_S": 3600,
            "REGISTRY_JWT_SECRET": TEST_SECRET,
            "REGISTRY_JWT_ALGORITHMS": "HS256",
        }
    )
    client = patient.test_client()
    admin = {"Authorization": f"Bearer {make_token()}"}
    with cluster.standby.connect() as conn:
        conn.execute("SELECT pg_wal_replay_pause()")
    try:
        result = cluster.load(FIXTURES / "small-graph.jsonl")
        assert result.returncode == 0, result.stderr
        new = old + 1
        unpinned = client.get("/registry/summary", headers=admin)
        assert unpinned.headers["Registry-Generation"] == str(old)  # the paused standby
        pinned = client.get(f"/registry/summary?generation={new}", headers=admin)
        assert pinned.status_code == 200, pinned.get_data()
        assert pinned.headers["Registry-Generation"] == str(new)
        listing = client.get(f"/registry/origins?limit=1&generation={new}", headers=admin)
        assert listing.status_code == 200
        assert listing.headers["Registry-Generation"] == str(new)
        never = client.get(f"/registry/summary?generation={new + 5}", headers=admin)
        assert never.status_code == 404  # what the primary says too
        assert never.get_json()["details"] == {"generation": new + 5, "current": new}

        time.sleep(MAX_LAG_S + 1.5)
        with Traffic(cluster) as traffic:
            time.sleep(2)
        assert traffic.failures() == []
        # Past the lag limit no answer comes from the paused standby's old generation.
        stale = [
            (seen.route, seen.answer.header("Registry-Generation"))
            for seen in traffic.seen
            if seen.answer.header("Registry-Generation") != str(new)
        ]
        assert traffic.seen and stale == []
        assert generation_of(cluster) == new
        assert generation_of(cluster, f"/v1/registry/summary?generation={new}") == new
    finally:
        with cluster.standby.connect() as conn:
            conn.execute("SELECT pg_wal_replay_resume()")
        patient.extensions["registry_db"].close()
    cluster.wait_for_replay()
    wait_until_all_ok(cluster)


# -- faults ------------------------------------------------------------------------------------


def test_one_app_host_killed(cluster: Cluster):
    """SIGKILL one gunicorn instance under traffic: nginx sends its requests to the other
    instance, and not one request fails.

    A request the killed worker had not answered is retried by nginx (proxy_next_upstream);
    one it had answered arrived whole, because the worker writes a small answer's head and
    body in one write (registry/gunicorn_worker.py), so no head reaches nginx without its body.
    """
    wait_until_all_ok(cluster)
    with Traffic(cluster) as traffic:
        time.sleep(1)
        cluster.kill_app(0)
        time.sleep(4)
    assert traffic.seen
    assert traffic.failures() == []
    cluster.start_app(0)
    wait_until_all_ok(cluster)


def test_pgbouncer_restarted(cluster: Cluster):
    """Restart the standby's PgBouncer under traffic: at most one JSON 503 per worker in the
    cluster (each loses its connection through that PgBouncer once), then all 200s."""
    wait_until_all_ok(cluster)
    workers = cluster_workers(cluster)
    with Traffic(cluster) as traffic:
        time.sleep(1)
        cluster.standby_bouncer.restart()
        time.sleep(3)
    assert_failures_are_unavailable(traffic)
    assert len(traffic.failures()) <= workers
    wait_until_all_ok(cluster)


def test_standby_stopped(cluster: Cluster):
    """Stop the standby under traffic: the primary answers meanwhile; only JSON 503s fail.

    A worker whose connection was on the standby waits for PgBouncer's query_wait_timeout
    (5 s in deploy/pgbouncer.ini) before its request fails and it connects to the primary,
    so the standby stays down well past that.
    """
    wait_until_all_ok(cluster)
    wait_until_reads_on_standby(cluster)
    workers = cluster_workers(cluster)
    with Traffic(cluster) as traffic:
        time.sleep(1)
        cluster.standby.stop()
        stopped = time.monotonic()
        time.sleep(9)
        during = traffic.ok_between(stopped + 2, time.monotonic())
        cluster.standby.start()
        time.sleep(2)
    assert during > 0, "nothing answered while the standby was down"
    assert_failures_are_unavailable(traffic)
    # docs/scaling.md: at most one per worker, the request its connection on the standby was
    # serving; its other connections are replaced and the standby is left out of its next
    # ones (registry/database/hosts.py).
    assert len(traffic.failures()) <= workers
    wait_until_all_ok(cluster)
    cluster.wait_for_replay()


def test_reads_move_back_to_the_standby_once_it_answers(cluster: Cluster):
    """Readers that fell back to the primary while the standby was down (previous test, or
    this one's own outage) return to the standby once it answers, not after max_lifetime."""
    wait_until_all_ok(cluster)
    cluster.standby.stop()
    try:
        deadline = time.monotonic() + 60
        while not readers_on(cluster, "primary"):  # the apps notice as requests come
            assert time.monotonic() < deadline, "no reader fell back to the primary"
            with Traffic(cluster) as traffic:
                time.sleep(1)
            assert_failures_are_unavailable(traffic)
    finally:
        cluster.standby.start()
    wait_until_reads_on_standby(cluster)
    assert readers_on(cluster, "standby") >= 1
    wait_until_all_ok(cluster)
    cluster.wait_for_replay()


def test_primary_stopped(cluster: Cluster):
    """Stop the primary: reads continue from the standby; a load fails clearly, changes nothing."""
    wait_until_all_ok(cluster)
    wait_until_reads_on_standby(cluster)  # where reads are meant to be (previous test)
    before = registry_summary(cluster)
    with Traffic(cluster) as traffic:
        time.sleep(1)
        cluster.primary.stop()
        stopped = time.monotonic()
        load = cluster.load(FIXTURES / "small-graph.jsonl")
        time.sleep(3)
        during = traffic.ok_between(stopped + 2, time.monotonic())
    assert during > 0, "nothing answered while the primary was down"
    # docs/scaling.md: reads are on the standby, so a stopped primary costs no request.
    assert traffic.failures() == []
    assert load.returncode == 1
    assert "no primary (read-write) database server could be reached" in load.stderr
    assert "nothing changed" in load.stderr
    assert registry_summary(cluster) == before
    cluster.primary.start()
    wait_until_all_ok(cluster)
    cluster.wait_for_replay()
    assert registry_summary(cluster) == before


# Enough origins (about 13 MB of NDJSON) that the export outgrows every buffer between the
# worker and a slow reader, so its transaction stays open on the standby.
EXPORT_ORIGINS = 15_000
# PostgreSQL's max_standby_streaming_delay unless set: how long replay waits for a read in
# its way before cancelling it.
DEFAULT_STANDBY_DELAY_S = 30


def test_loads_during_an_export_on_the_standby_do_not_cut_it(cluster: Cluster):
    """An export streaming from the standby to a slow reader while two loads commit on the
    primary (its generation leaves retention): the primary drops it, and the standby's
    replay of that drop waits for the export (the schema stays there, the startup process
    waits on a lock), which reads slowly for as long as the loads run and ends complete on
    its generation; once it has ended, the standby replays the drop."""
    document = cluster.folder / "export-demo.jsonl"
    with open(document, "wb") as out:
        write_demo_document(out, EXPORT_ORIGINS, 5)
    client: SlowClient | None = None
    try:
        assert cluster.load(document).returncode == 0
        cluster.wait_for_replay()
        client = export_from_the_standby(cluster)
        assert client.head["registry-total"] == str(EXPORT_ORIGINS)
        exported = schema_name(int(client.head["registry-generation"]))
        loading = threading.Event()
        loading.set()
        reader = threading.Thread(target=client.read_while, args=(loading.is_set,))
        reader.start()
        try:
            for _ in range(2):
                assert cluster.load(document).returncode == 0
            assert not schema_on(cluster.primary, exported)
            wait_until_replay_waits_on_a_lock(cluster.standby)
            assert schema_on(cluster.standby, exported)
            # Past PostgreSQL's default grace before it cancels a read in replay's way: the
            # export is not cut, however long it holds replay back.
            while (waited := replay_lock_wait_s(cluster.standby)) is not None:
                if waited > DEFAULT_STANDBY_DELAY_S + 5 or not reader.is_alive():
                    break
                time.sleep(1)
            assert waited is not None, "replay stopped waiting while the export was open"
            assert schema_on(cluster.standby, exported)
            assert reader.is_alive(), "the export ended while replay waited for it"
        finally:
            loading.clear()
            reader.join()
        body = client.read_rest()
        assert body.complete
        assert len(body.lines()) == EXPORT_ORIGINS
        cluster.wait_for_replay()
        assert not schema_on(cluster.standby, exported)
    finally:
        if client is not None and client.sock.fileno() != -1:
            client.reset()  # a failed run's export ends, so replay can catch up
        assert cluster.load(FIXTURES / "small-graph.jsonl").returncode == 0
        cluster.wait_for_replay()


def export_from_the_standby(cluster: Cluster, attempts: int = 5) -> SlowClient:
    """An NDJSON export of the origins, read for a second, whose transaction is on the standby.

    The apps' lag limit here is 1 s (MAX_LAG_S): on a busy machine a standby a moment behind
    sends a request to the primary, as the limit says it should (seen in a CI run with all
    three suites at once: the export's session was not on the standby). That is the limit's
    test, not this one's: such an export is ended and asked for again, a few times at most.
    """
    headers = {"Authorization": f"Bearer {cluster.token()}", "Accept": "application/x-ndjson"}
    for _ in range(attempts):
        wait_until_reads_on_standby(cluster)
        client = SlowClient(cluster.apps[0].port, "/registry/origins", headers)
        assert client.status == 200
        client.read_for(1)
        # The export's transaction is on the standby, waiting on its reader.
        if exports_waiting_on(cluster.standby) == 1:
            return client
        client.reset()
    raise AssertionError(f"no export of {attempts} stayed on the standby")


def exports_waiting_on(server: PostgresServer) -> int:
    """Sessions of the app's role on one server inside a transaction, waiting."""
    with server.connect() as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE usename = %s"
            " AND state LIKE 'idle in transaction%%'",
            (READER,),
        ).fetchone()
    assert row is not None
    return int(row[0])
