"""docs/export.md, Capacity through real gunicorn and deploy/nginx.conf, for both exports (the
origins listing and the live generation's changes): slow readers finish, a cut export never looks
complete, the export limit, pages beside exports, loads beside exports, the nginx limits per
client, and the export metrics.

The readers are real sockets with a small receive window reading at 10 KB/s (or not at all),
and each export (about 35 MB of origins, 50 MB of changes, as NDJSON) is larger than every
buffer between the worker and them, so the worker really waits on the client. Timeouts are
shortened through settings so that each case takes seconds: the idle-in-transaction limit to
1 s, gunicorn's timeout to 10 s and the export send timeout to 8 s (a 32 KB piece at 10 KB/s
takes 3.2 s). The stack and its helpers: tests/e2e/capacity_stack.py.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import orjson
import psycopg
import pytest

from devtools.production_stack import ClientLimits, start_nginx
from tests.conftest import load_records
from tests.e2e.capacity_stack import (
    ADMIN,
    EXPORTS,
    NDJSON,
    ORIGINS,
    SEND_TIMEOUT_S,
    SLOW_SECONDS,
    WORKER_TIMEOUT_S,
    Stack,
    all_workers_answer,
    export_series,
    local_backend,
    metric,
    stack,
    the_export_session,
    wait_for,
    wait_until_no_export,
)
from tests.e2e.raw_http import request
from tests.e2e.slow_client import SlowClient

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("nginx_installed")]

__all__ = ["stack"]  # the module's fixture, imported


def row_ids(lines: list[bytes]) -> list[str]:
    """The id of each NDJSON line: an origin's, or the origin a change is about."""
    ids = []
    for line in lines:
        row = orjson.loads(line)
        ids.append(row["origin"]["id"] if "origin" in row else row["id"])
    return ids


@pytest.mark.parametrize("through", ["direct", "nginx"])
@pytest.mark.parametrize("export", EXPORTS)
def test_a_slow_reader_gets_the_whole_export(stack: Stack, export: str, through: str):
    """Read at 10 KB/s past the idle limit and gunicorn's timeout: the export still ends with
    its last chunk, every row there, as many as Registry-Total said."""
    assert wait_until_no_export(stack)  # the one slot is free
    total = stack.total(export)
    client = SlowClient(stack.port(through), stack.target(through, export), NDJSON)
    assert client.status == 200
    assert client.head["registry-total"] == str(total)
    client.read_for(SLOW_SECONDS if through == "direct" else 3)
    body = client.read_rest()
    assert body.complete
    ids = row_ids(body.lines())
    assert len(ids) == len(set(ids)) == total


def test_a_client_that_stops_reading_loses_its_export_after_the_send_timeout(stack: Stack):
    """Nothing taken for longer than the send timeout: the export ends, cut (no last chunk),
    counted as a send timeout; the worker answers again."""
    assert wait_until_no_export(stack)
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


def test_an_export_whose_database_stops_answering_frees_its_worker_and_slot(stack: Stack):
    """The export's backend paused (SIGSTOP) while the client reads as fast as it can: the
    worker waits on a FETCH that moves nothing, so it shows gunicorn no sign of life and is
    ended by the worker timeout; the body is cut, and the slot (the only one) is free for the
    next export while the backend is still paused."""
    assert wait_until_no_export(stack)
    client = SlowClient(stack.port("direct"), stack.target("direct"), NDJSON)
    assert client.status == 200
    backend = the_export_session(stack)
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
@pytest.mark.parametrize("export", EXPORTS)
def test_an_export_cut_half_way_never_looks_complete(
    stack: Stack, export: str, through: str, cut: str
):
    """The export's database session is terminated, or its worker killed, while the client is
    mid-way: the client's body ends without its last chunk and short of Registry-Total, and
    the export is counted as cut by the database, or by its worker lost (which the dead
    worker cannot count: gunicorn's master does)."""
    # An earlier case's export session (a killed worker's outlives it for a moment on a busy
    # machine) would be counted as this one's, and terminated instead of it.
    assert wait_until_no_export(stack)
    expected = stack.total(export)
    cause = "database" if cut == "backend terminated" else "worker_lost"
    cuts = f'registry_exports_cut_total{{cause="{cause}"}}'
    before = export_series(stack)
    client = SlowClient(stack.port(through), stack.target(through, export), NDJSON)
    total = int(client.head["registry-total"])
    client.read_for(0.5)
    # The worker now waits on the client, inside the export's transaction.
    backend = the_export_session(stack)
    if cut == "backend terminated":
        # That backend, whatever it is doing now (through nginx, the export may be fetching
        # again): terminated, and gone before the client reads on (the call waits up to 30 s).
        with psycopg.connect(stack.conninfo, autocommit=True) as conn:
            row = conn.execute("SELECT pg_terminate_backend(%s, 30000)", (backend,)).fetchone()
        assert row == (True,), "the export's backend terminated"
    else:
        for pid in stack.gunicorn.worker_pids():
            os.kill(pid, signal.SIGKILL)
    body = client.read_rest()
    assert not body.complete
    assert len(body.lines()) < total == expected
    all_workers_answer(stack)
    counted = before.get(cuts, 0.0) + 1
    wait_for(lambda: metric(stack, cuts) == counted, f"the export counted in {cuts}")
    after = export_series(stack)
    assert {name: after[name] - before[name] for name in before if after[name] != before[name]} == {
        cuts: 1
    }, "one cut, of that cause, and no export left in flight"


@pytest.mark.parametrize("export", EXPORTS)
def test_one_export_past_the_limit_is_refused_at_once(stack: Stack, export: str):
    """Two workers: at most one export (half of them). A second one, of either kind, is a 503
    with the JSON body, a message naming the limit and Retry-After, while the first streams
    on to the end."""
    assert wait_until_no_export(stack)
    total = stack.total(export)
    other = EXPORTS[1 - EXPORTS.index(export)]
    refused_before = metric(stack, 'registry_exports_refused_total{cause="limit"}')
    held = SlowClient(stack.port("direct"), stack.target("direct", export), NDJSON)
    assert held.status == 200
    wait_for(lambda: metric(stack, "registry_exports_in_flight") == 1, "one export in flight")
    # The export holds its worker's pooled connection: the in-use gauge, summed over the
    # workers, counts exactly that one.
    assert metric(stack, "registry_db_pool_connections_in_use") == 1
    for second in (export, other):
        answer = request(stack.gunicorn.port, second, headers=NDJSON)
        assert answer.status == 503
        assert answer.header("Content-Type") == "application/json"
        assert answer.header("Retry-After") is not None
        refusal = answer.json()
        assert refusal["success"] is False
        assert refusal["error"] == "Service Unavailable"
        assert "REGISTRY_MAX_EXPORTS" in refusal["message"]
    assert metric(stack, 'registry_exports_refused_total{cause="limit"}') == refused_before + 2
    body = held.read_rest()
    assert body.complete and len(body.lines()) == total
    wait_for(lambda: metric(stack, "registry_exports_in_flight") == 0, "the export ended")
    assert metric(stack, "registry_db_pool_connections_in_use") == 0
    # The slot is free again: a HEAD takes one too (and gives it back), or is a 503.
    again = request(stack.gunicorn.port, export, method="HEAD", headers=NDJSON)
    assert again.status == 200 and again.header("Registry-Total") == str(total)


@pytest.mark.parametrize("through", ["direct", "nginx", "unspooled"])
def test_pages_answer_while_exports_stream_to_stalled_clients(stack: Stack, through: str):
    """Two exports whose clients read nothing (one more than the limit, except through the
    shipped nginx, which spools them and frees the workers): every page, lookup and summary
    asked meanwhile is answered while the stalled export still holds its slot, and the
    exports then end complete, so no page waited for an export to finish (docs/export.md,
    Capacity). What is asserted is that order of events, not a time: the slowest wait is
    printed, and `make bench` measures pages beside exports. Direct and through the
    unspooled nginx, the streaming export holds its worker throughout."""
    assert wait_until_no_export(stack)
    port = stack.port(through)
    pages = (
        ("/registry/origins?limit=2", ADMIN),
        ("/registry/summary", ADMIN),
        ("/registry/changes?limit=2", ADMIN),
        ("/summary", {}),
    )
    # Each worker's first answers (its pool, its caches) come before the exports: what is
    # timed is what the exports cost the pages.
    for path, headers in pages * 2:
        assert request(port, stack.target(through, path), headers=headers).status == 200
    held = []
    for _ in range(2):
        held.append(SlowClient(stack.port(through), stack.target(through), NDJSON))
        if through == "nginx":
            # nginx spools the whole export and the worker is free again within a second.
            wait_for(lambda: metric(stack, "registry_exports_in_flight") == 0, "spooled")
    streaming = [client for client in held if client.status == 200]
    # Direct or unspooled, the second is over the limit; spooled, both stream.
    assert len(streaming) == (2 if through == "nginx" else 1)
    for client in held:
        if client not in streaming:
            assert client.status == 503
            client.read_rest()
    if through != "nginx":
        # The export is in its worker's hands, waiting on its stalled client.
        assert metric(stack, "registry_exports_in_flight") == 1
    waits: list[tuple[float, str]] = []
    for _ in range(10):
        for path, headers in pages:
            started = time.monotonic()
            answer = request(port, stack.target(through, path), headers=headers)
            waits.append((time.monotonic() - started, path))
            assert answer.status == 200, path
    if through != "nginx":
        assert metric(stack, "registry_exports_in_flight") == 1, "the export still held"
    slowest = max(waits)
    print(f"{through}: the slowest of {len(waits)} pages, {slowest[1]}, {slowest[0]:.3f} s")
    for client in streaming:
        body = client.read_rest()
        assert body.complete and len(body.lines()) == ORIGINS


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


def test_nginx_refuses_a_client_over_its_request_rate_with_429(
    stack: Stack, tmp_path_factory: pytest.TempPathFactory
):
    """deploy/nginx.conf's request rate per client address, set low: past it, a 429 with the
    JSON body and Retry-After."""
    limited = start_nginx(
        tmp_path_factory.mktemp("rate"),
        stack.gunicorn.port,
        limits=ClientLimits(rate_per_s=1, burst=1, exports=1),
    )
    try:
        statuses = [request(limited.port, "/v1/summary") for _ in range(6)]
        refused = [answer for answer in statuses if answer.status == 429]
        assert refused and statuses[0].status == 200
        for answer in refused:
            assert answer.json() == {"success": False, "error": "Too Many Requests"}
            assert answer.header("Content-Type") == "application/json"
            assert answer.header("Retry-After") is not None
    finally:
        limited.stop()


@pytest.mark.parametrize("export", EXPORTS)
def test_nginx_refuses_a_second_export_from_one_client_with_429(
    stack: Stack, tmp_path_factory: pytest.TempPathFactory, export: str
):
    """deploy/nginx.conf's exports at once per client address, set to one: a second export of
    either kind is a 429 with the JSON body and Retry-After; pages still pass."""
    assert wait_until_no_export(stack)
    one_export = start_nginx(
        tmp_path_factory.mktemp("exports"),
        stack.gunicorn.port,
        limits=ClientLimits(rate_per_s=1000, burst=1000, exports=1),
    )
    held = SlowClient(one_export.port, "/v1" + export, NDJSON)
    try:
        assert held.status == 200
        for second in EXPORTS:
            answer = request(one_export.port, "/v1" + second, headers=NDJSON)
            assert answer.status == 429
            assert answer.json() == {"success": False, "error": "Too Many Requests"}
            assert answer.header("Retry-After") is not None
        # Only exports count against the export limit.
        page = request(one_export.port, "/v1/registry/origins?limit=1", headers=ADMIN)
        assert page.status == 200
    finally:
        held.reset()
        one_export.stop()


def test_a_client_that_leaves_is_counted(stack: Stack):
    """A reset mid-export: counted as cut by a client gone, and the connection freed."""
    # So that the one session and the one cut counted below are this one's.
    assert wait_until_no_export(stack)
    before = metric(stack, 'registry_exports_cut_total{cause="client_gone"}')
    client = SlowClient(stack.port("direct"), stack.target("direct"), NDJSON)
    the_export_session(stack)
    client.reset()
    wait_for(
        lambda: metric(stack, 'registry_exports_cut_total{cause="client_gone"}') == before + 1,
        "the export counted as cut by a client gone",
    )
    assert wait_until_no_export(stack)


def test_two_loads_during_a_slow_export_do_not_cut_it(stack: Stack):
    """Two loads commit while the export waits on its client: the generation it reads is
    past retention (two kept) but not dropped under it, and it ends complete on it."""
    assert wait_until_no_export(stack)
    client = SlowClient(stack.port("direct"), stack.target("direct"), NDJSON)
    generation = int(client.head["registry-generation"])
    client.read_for(0.5)
    # /metrics names the generation unpinned answers come from, and follows each load.
    assert metric(stack, "registry_generation") == generation
    # The client goes on reading slowly while the loads run, however long they take: one
    # that took nothing for the send timeout would be cut, by design, and prove nothing.
    # The earlier graph, then this one again: the live change set stays as large as before.
    documents = (stack.earlier, stack.document)
    loads = threading.Thread(
        target=lambda: [load_records(stack.conninfo, document) for document in documents]
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
