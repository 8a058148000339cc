"""Contract §11 through real gunicorn and deploy/nginx.conf: slow readers finish, a cut export
never looks complete, the export limit, pages beside exports, loads beside exports, the
nginx limits per client, and the export metrics.

The readers are real sockets with a small receive window reading at 10 KB/s (or not at all),
and the export (about 35 MB of NDJSON) is larger than every buffer between the worker and
them, so the worker really waits on the client. Timeouts are shortened through settings so
that each case takes seconds: the idle-in-transaction limit to 1 s, gunicorn's timeout to
10 s and the export send timeout to 8 s (a 32 KB piece at 10 KB/s takes 3.2 s).
"""

from __future__ import annotations

import os
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import orjson
import psycopg
import pytest

from devtools.production_stack import (
    ClientLimits,
    Gunicorn,
    Nginx,
    PrivatePostgres,
    start_gunicorn,
    start_nginx,
)
from registry.loader.demo import write_demo_document
from tests.conftest import TEST_SECRET, load_records, make_token
from tests.e2e.raw_http import request
from tests.e2e.slow_client import SlowClient

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("nginx_installed")]


# About 35 MB of NDJSON: well past every buffer between the worker and a stalled reader,
# through nginx too (its 4 MB of buffers and the kernel's socket buffers on both sides, about
# 12 MB in all on loopback), so a cut always falls before the export's last rows.
ORIGINS = 40_000
ADMIN = {"Authorization": f"Bearer {make_token()}"}
NDJSON = {**ADMIN, "Accept": "application/x-ndjson"}
WORKERS = 2
SEND_TIMEOUT_S = 8
WORKER_TIMEOUT_S = 10
# Long enough to outlast the idle-in-transaction limit and gunicorn's timeout.
SLOW_SECONDS = WORKER_TIMEOUT_S + 2


@dataclass
class Stack:
    """gunicorn (two workers) over ORIGINS origins; nginx as shipped in front of it, and one
    whose spool to disk is off (so that a stalled client stalls the worker behind it)."""

    conninfo: str
    document: bytes
    gunicorn: Gunicorn
    nginx: Nginx
    unspooled: Nginx

    def port(self, through: str) -> int:
        """The port of gunicorn ("direct"), nginx ("nginx") or the unspooled nginx."""
        if through == "direct":
            return self.gunicorn.port
        return self.nginx.port if through == "nginx" else self.unspooled.port

    def target(self, through: str, path: str = "/registry/origins") -> str:
        """path under the API's prefix on that port."""
        return path if through == "direct" else "/v1" + path


@pytest.fixture(scope="module")
def stack(
    database_factory: Callable[[], str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    """The demo graph loaded, gunicorn with short timeouts, and two nginx in front."""
    conninfo = database_factory()
    with tempfile.TemporaryFile() as file:
        write_demo_document(file, ORIGINS, 3)
        file.seek(0)
        document = file.read()
    load_records(conninfo, document)
    folder = tmp_path_factory.mktemp("capacity")
    server = start_gunicorn(
        {
            "DATABASE_URL": conninfo,
            "REGISTRY_JWT_SECRET": TEST_SECRET,
            "REGISTRY_GUNICORN_TIMEOUT": str(WORKER_TIMEOUT_S),
            "REGISTRY_EXPORT_SEND_TIMEOUT_S": str(SEND_TIMEOUT_S),
            "REGISTRY_IDLE_IN_TRANSACTION_TIMEOUT_MS": "1000",
        },
        folder / "gunicorn.log",
        workers=WORKERS,
    )
    proxies: list[Nginx] = []
    try:
        proxies.append(start_nginx(folder / "nginx", server.port))
        proxies.append(start_nginx(folder / "unspooled", server.port, spool_limit="0"))
        yield Stack(conninfo, document, server, proxies[0], proxies[1])
    finally:
        for proxy in proxies:
            proxy.stop()
        server.stop()


def metric(stack: Stack, name: str) -> float:
    """One sample of gunicorn's /metrics (summed over its workers), 0 when absent."""
    text = request(stack.gunicorn.port, "/metrics").body.decode()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return 0.0


def wait_for(condition: Callable[[], bool], what: str, seconds: float = 30) -> None:
    """Poll until condition holds; fail saying what did not happen."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"within {seconds} s: {what}")
        time.sleep(0.05)


def export_sessions(conninfo: str) -> list[int]:
    """The backends of the database that are inside an export's transaction."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%'"
        ).fetchall()
    return [int(pid) for (pid,) in rows]


def all_workers_answer(stack: Stack) -> None:
    """Wait until gunicorn has its workers again and answers."""
    wait_for(lambda: len(stack.gunicorn.worker_pids()) == WORKERS, "gunicorn's workers back")
    wait_for(lambda: request(stack.gunicorn.port, "/summary").status == 200, "gunicorn answering")


@pytest.mark.parametrize("through", ["direct", "nginx"])
def test_a_slow_reader_gets_the_whole_export(stack: Stack, through: str):
    """Read at 10 KB/s past the idle limit and gunicorn's timeout: the export still ends with
    its last chunk, every row there, as many as Registry-Total said."""
    client = SlowClient(stack.port(through), stack.target(through), NDJSON)
    assert client.status == 200
    assert client.head["registry-total"] == str(ORIGINS)
    client.read_for(SLOW_SECONDS if through == "direct" else 3)
    body = client.read_rest()
    assert body.complete
    ids = [orjson.loads(line)["origin"]["id"] for line in body.lines()]
    assert len(ids) == len(set(ids)) == ORIGINS


def test_a_client_that_stops_reading_loses_its_export_after_the_send_timeout(stack: Stack):
    """Nothing taken for longer than the send timeout: the export ends, cut (no last chunk),
    counted as a send timeout; the worker answers again."""
    before = metric(stack, 'registry_exports_cut_total{cause="send_timeout"}')
    client = SlowClient(stack.port("direct"), stack.target("direct"), NDJSON)
    wait_for(
        lambda: metric(stack, 'registry_exports_cut_total{cause="send_timeout"}') > before,
        "the stalled export counted as cut by the send timeout",
        seconds=SEND_TIMEOUT_S * 4,
    )
    body = client.read_rest()
    assert not body.complete
    assert len(body.lines()) < ORIGINS
    assert wait_until_no_export(stack)
    assert request(stack.gunicorn.port, "/registry/summary", headers=ADMIN).status == 200


def wait_until_no_export(stack: Stack) -> bool:
    """Wait until no export transaction is open."""
    wait_for(lambda: export_sessions(stack.conninfo) == [], "no export transaction left")
    return True


def local_backend(pid: int) -> bool:
    """Whether pid is a PostgreSQL process of this machine that this test may signal."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            if b"postgres" not in cmdline.read():
                return False
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def test_an_export_whose_database_stops_answering_frees_its_worker_and_slot(stack: Stack):
    """The export's backend paused (SIGSTOP) while the client reads as fast as it can: the
    worker waits on a FETCH that moves nothing, so it shows gunicorn no sign of life and is
    ended by the worker timeout; the body is cut, and the slot (the only one) is free for the
    next export while the backend is still paused."""
    assert wait_until_no_export(stack)
    client = SlowClient(stack.port("direct"), stack.target("direct"), NDJSON)
    assert client.status == 200
    wait_for(lambda: len(export_sessions(stack.conninfo)) == 1, "the export's transaction")
    [backend] = export_sessions(stack.conninfo)
    if not local_backend(backend):
        pytest.skip("the test database's server runs elsewhere: its backend cannot be paused")
    workers = stack.gunicorn.worker_pids()
    bodies = []
    reader = threading.Thread(target=lambda: bodies.append(client.read_rest()), daemon=True)
    os.kill(backend, signal.SIGSTOP)
    try:
        reader.start()
        wait_for(
            lambda: not reader.is_alive(),
            "the export stuck on its database ended",
            seconds=WORKER_TIMEOUT_S * 3,
        )
        [body] = bodies
        assert not body.complete
        assert len(body.lines()) < ORIGINS
        # Its worker was ended (the worker timeout), and the slot went with it.
        wait_for(lambda: not workers <= stack.gunicorn.worker_pids(), "the stuck worker ended")
        again = request(stack.gunicorn.port, "/registry/origins", headers=NDJSON)
        assert again.status == 200 and again.body.count(b"\n") == ORIGINS
    finally:
        os.kill(backend, signal.SIGCONT)
    all_workers_answer(stack)
    assert wait_until_no_export(stack)


@pytest.mark.parametrize("cut", ["backend terminated", "worker killed"])
@pytest.mark.parametrize("through", ["direct", "unspooled"])
def test_an_export_cut_half_way_never_looks_complete(stack: Stack, through: str, cut: str):
    """The export's database session is terminated, or its worker killed, while the client is
    mid-way: the client's body ends without its last chunk and short of Registry-Total."""
    # An earlier case's export session (a killed worker's outlives it for a moment on a busy
    # machine) would be counted as this one's, and terminated instead of it.
    assert wait_until_no_export(stack)
    client = SlowClient(stack.port(through), stack.target(through), NDJSON)
    total = int(client.head["registry-total"])
    client.read_for(0.5)
    # The worker now waits on the client, inside the export's transaction.
    wait_for(lambda: len(export_sessions(stack.conninfo)) == 1, "the export's transaction")
    if cut == "backend terminated":
        with psycopg.connect(stack.conninfo, autocommit=True) as conn:
            for pid in export_sessions(stack.conninfo):
                conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
    else:
        for pid in stack.gunicorn.worker_pids():
            os.kill(pid, signal.SIGKILL)
    body = client.read_rest()
    assert not body.complete
    assert len(body.lines()) < total == ORIGINS
    all_workers_answer(stack)


def test_one_export_past_the_limit_is_refused_at_once(stack: Stack):
    """Two workers: at most one export (half of them). A second one is a 503 with the JSON
    body, a message naming the limit and Retry-After, while the first streams on to the end."""
    refused_before = metric(stack, 'registry_exports_refused_total{cause="limit"}')
    held = SlowClient(stack.port("direct"), stack.target("direct"), NDJSON)
    assert held.status == 200
    wait_for(lambda: metric(stack, "registry_exports_in_flight") == 1, "one export in flight")
    # The export holds its worker's pooled connection: the in-use gauge, summed over the
    # workers, counts exactly that one.
    assert metric(stack, "registry_db_pool_connections_in_use") == 1
    second = request(stack.gunicorn.port, "/registry/origins", headers=NDJSON)
    assert second.status == 503
    assert second.header("Content-Type") == "application/json"
    assert second.header("Retry-After") is not None
    answer = second.json()
    assert answer["success"] is False
    assert answer["error"] == "Service Unavailable"
    assert "REGISTRY_MAX_EXPORTS" in answer["message"]
    assert metric(stack, 'registry_exports_refused_total{cause="limit"}') == refused_before + 1
    body = held.read_rest()
    assert body.complete and len(body.lines()) == ORIGINS
    wait_for(lambda: metric(stack, "registry_exports_in_flight") == 0, "the export ended")
    assert metric(stack, "registry_db_pool_connections_in_use") == 0
    # The slot is free again.
    again = request(stack.gunicorn.port, "/registry/origins", headers=NDJSON)
    assert again.status == 200 and again.body.count(b"\n") == ORIGINS


@pytest.mark.parametrize("through", ["direct", "nginx"])
def test_pages_answer_while_exports_stream_to_stalled_clients(stack: Stack, through: str):
    """Two exports whose clients read nothing (one more than the limit, direct): every page,
    lookup and summary asked meanwhile is answered, and the exports then end complete, so
    nothing was waiting for them to finish."""
    held = []
    for _ in range(2):
        held.append(SlowClient(stack.port(through), stack.target(through), NDJSON))
        if through == "nginx":
            # nginx spools the whole export and the worker is free again within a second.
            wait_for(lambda: metric(stack, "registry_exports_in_flight") == 0, "spooled")
    streaming = [client for client in held if client.status == 200]
    # Direct, the second is over the limit; through nginx, both are spooled and stream.
    assert len(streaming) == (1 if through == "direct" else 2)
    for client in held:
        if client not in streaming:
            assert client.status == 503
            client.read_rest()
    port = stack.port(through)
    for _ in range(10):
        for path in ("/registry/origins?limit=2", "/registry/summary"):
            answer = request(port, stack.target(through, path), headers=ADMIN)
            assert answer.status == 200
        assert request(port, stack.target(through, "/summary")).status == 200
    for client in streaming:
        body = client.read_rest()
        assert body.complete and len(body.lines()) == ORIGINS


def export_series(stack: Stack) -> dict[str, float]:
    """Every sample of the export metrics (summed over the workers), by its series."""
    text = request(stack.gunicorn.port, "/metrics").body.decode()
    return {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("registry_exports_")
    }


def test_head_and_304_on_an_export_are_no_export_in_the_metrics(stack: Stack):
    """HEAD on an export's URL takes a slot and reads Registry-Total, but sends no body: it is
    counted as the request it is (registry_http_requests_total, HEAD, 200), never as an export
    streamed or cut; nor is a 304."""
    assert wait_until_no_export(stack)
    before = export_series(stack)
    requests = 'registry_http_requests_total{method="HEAD",route="/registry/origins",status="200"}'
    heads = metric(stack, requests)
    head = request(stack.gunicorn.port, "/registry/origins", method="HEAD", headers=NDJSON)
    assert head.status == 200 and head.body == b""
    assert head.header("Registry-Total") == str(ORIGINS)
    etag = head.header("ETag")
    assert etag is not None
    again = request(
        stack.gunicorn.port, "/registry/origins", headers={**NDJSON, "If-None-Match": etag}
    )
    assert again.status == 304
    wait_for(lambda: metric(stack, requests) == heads + 1, "the HEAD counted as a request")
    assert export_series(stack) == before


def test_nginx_refuses_a_client_over_its_limits_with_429(
    stack: Stack, tmp_path_factory: pytest.TempPathFactory
):
    """deploy/nginx.conf's limits per client address, set low: past the request rate, and a
    second export at once, each a 429 with the JSON body and Retry-After."""
    folder = tmp_path_factory.mktemp("limited")
    limited = start_nginx(
        folder / "rate",
        stack.gunicorn.port,
        limits=ClientLimits(rate_per_s=1, burst=1, exports=1),
    )
    one_export = start_nginx(
        folder / "exports",
        stack.gunicorn.port,
        limits=ClientLimits(rate_per_s=1000, burst=1000, exports=1),
    )
    try:
        statuses = [request(limited.port, "/v1/summary") for _ in range(6)]
        refused = [answer for answer in statuses if answer.status == 429]
        assert refused and statuses[0].status == 200
        for answer in refused:
            assert answer.json() == {"success": False, "error": "Too Many Requests"}
            assert answer.header("Content-Type") == "application/json"
            assert answer.header("Retry-After") is not None
        held = SlowClient(one_export.port, "/v1/registry/origins", NDJSON)
        assert held.status == 200
        second = request(one_export.port, "/v1/registry/origins", headers=NDJSON)
        assert second.status == 429
        assert second.json() == {"success": False, "error": "Too Many Requests"}
        assert second.header("Retry-After") is not None
        # Only exports count against the export limit.
        page = request(one_export.port, "/v1/registry/origins?limit=1", headers=ADMIN)
        assert page.status == 200
        assert held.read_rest().complete
    finally:
        limited.stop()
        one_export.stop()


def test_a_client_that_leaves_is_counted(stack: Stack):
    """A reset mid-export: counted as cut by a client gone, and the connection freed."""
    before = metric(stack, 'registry_exports_cut_total{cause="client_gone"}')
    assert wait_until_no_export(stack)  # so that the one session counted below is this one's
    client = SlowClient(stack.port("direct"), stack.target("direct"), NDJSON)
    wait_for(lambda: len(export_sessions(stack.conninfo)) == 1, "the export's transaction")
    client.reset()
    wait_for(
        lambda: metric(stack, 'registry_exports_cut_total{cause="client_gone"}') == before + 1,
        "the export counted as cut by a client gone",
    )
    assert wait_until_no_export(stack)


def test_two_loads_during_a_slow_export_do_not_cut_it(stack: Stack):
    """Two loads commit while the export waits on its client: the generation it reads is
    past retention (two kept) but not dropped under it, and it ends complete on it."""
    client = SlowClient(stack.port("direct"), stack.target("direct"), NDJSON)
    generation = int(client.head["registry-generation"])
    client.read_for(0.5)
    # /metrics names the generation unpinned answers come from, and follows each load.
    assert metric(stack, "registry_generation") == generation
    # The client goes on reading slowly while the loads run, however long they take: one
    # that took nothing for the send timeout would be cut, by design, and prove nothing.
    loads = threading.Thread(
        target=lambda: [load_records(stack.conninfo, stack.document) for _ in range(2)]
    )
    loads.start()
    while loads.is_alive():
        client.read_for(0.5)
    loads.join()
    assert metric(stack, "registry_generation") == generation + 2
    with psycopg.connect(stack.conninfo, autocommit=True) as conn:
        newest = conn.execute("SELECT max(generation) FROM registry_meta.generations").fetchone()
    assert newest is not None and newest[0] == generation + 2
    body = client.read_rest()
    assert body.complete and len(body.lines()) == ORIGINS


def test_an_export_cut_by_a_database_restart_never_looks_complete(
    tmp_path_factory: pytest.TempPathFactory,
):
    """The database restarts while an export waits on its reader: direct and through nginx
    (its spool off, so the worker is mid-export), the body ends without its last chunk and
    short of Registry-Total, and the service answers again once the database is back."""
    folder = tmp_path_factory.mktemp("restart")
    postgres = PrivatePostgres(folder / "state")
    postgres.start()
    try:
        with tempfile.TemporaryFile() as file:
            write_demo_document(file, ORIGINS, 3)
            file.seek(0)
            load_records(postgres.url, file.read())
        server = start_gunicorn(
            {"DATABASE_URL": postgres.url, "REGISTRY_JWT_SECRET": TEST_SECRET},
            folder / "gunicorn.log",
            workers=WORKERS,
        )
        try:
            proxy = start_nginx(folder / "nginx", server.port, spool_limit="0")
            try:
                for port, target in (
                    (server.port, "/registry/origins"),
                    (proxy.port, "/v1/registry/origins"),
                ):
                    client = SlowClient(port, target, NDJSON)
                    for _ in range(WORKERS):
                        # A worker that has not served since the restart finds its pooled
                        # connection gone: one JSON 503 (contract 5), then it answers.
                        if client.status != 503:
                            break
                        client.read_rest()
                        client = SlowClient(port, target, NDJSON)
                    assert client.status == 200
                    total = int(client.head["registry-total"])
                    client.read_for(0.5)
                    postgres.stop(mode="fast")
                    postgres.start()
                    body = client.read_rest()
                    assert not body.complete
                    assert len(body.lines()) < total == ORIGINS
                    wait_for(
                        lambda: (
                            request(server.port, "/registry/summary", headers=ADMIN).status == 200
                        ),
                        "the service answering after the restart",
                    )
            finally:
                proxy.stop()
        finally:
            server.stop()
    finally:
        postgres.stop(mode="immediate")
