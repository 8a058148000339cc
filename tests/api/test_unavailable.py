"""The pool while the database cannot be reached: 503 with Retry-After for every request, and
not one pool wait each (tests/e2e/test_faults.py stops and starts a real server).

The point is behaviour, so the test counts what the pool was asked, with the worker's clock
held still, instead of timing requests: a busy machine must not decide the outcome."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

import psycopg
import pytest
from flask import Flask
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from registry.database import hosts
from registry.database import pool as pool_module
from tests.conftest import dead_port, make_token

ADMIN = {"Authorization": f"Bearer {make_token()}"}


def test_requests_fail_fast_while_the_database_is_unreachable(
    api_app_factory: Callable[..., Flask],
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
):
    """The first request finds the database gone and the next one probes it; the following
    ones are 503 without asking the pool at all until the probe interval has passed; then
    exactly one request probes again."""
    now = [1000.0]
    monkeypatch.setattr(pool_module, "time", SimpleNamespace(monotonic=lambda: now[0]))
    app = api_app_factory(
        f"postgresql://postgres@127.0.0.1:{dead_port()}/registry", REGISTRY_POOL_TIMEOUT_S=0.5
    )
    client = app.test_client()
    database = app.extensions["registry_db"]
    request.addfinalizer(database.close)

    def unavailable(path: str) -> None:
        response = client.get(path, headers=ADMIN)
        assert response.status_code == 503
        assert response.headers["Retry-After"] == "2"
        assert response.get_json()["error"] == "Service Unavailable"

    unavailable("/summary")
    assert database.unreachable
    unavailable("/summary")  # no probe yet since the database went away: this one probes
    asked = database.pool.get_stats()["requests_num"]
    for path in ["/summary", "/registry/summary", "/registry/origins", "/readyz"] * 5:
        unavailable(path)
    assert database.pool.get_stats()["requests_num"] == asked  # nobody waited on the pool

    now[0] += pool_module.PROBE_INTERVAL_S
    unavailable("/registry/origins")  # this one probes (briefly) ...
    unavailable("/registry/origins")  # ... and this one does not
    assert database.pool.get_stats()["requests_num"] == asked + 1
    assert database.unreachable


def test_a_connection_cut_off_mid_exchange_leaves_its_host_out(
    api_app_factory: Callable[..., Flask], example_db: str, request: pytest.FixtureRequest
):
    """With several hosts, a connection given back busy in the middle of an exchange (how a
    server stopped behind PgBouncer shows: the pooler keeps the socket open) leaves its host
    out of new connections, as a broken one does; one whose statement merely failed does not.
    """
    params = conninfo_to_dict(example_db)
    host, port = str(params.get("host") or "127.0.0.1"), str(params.get("port") or "5432")
    # The test's server, and a second host that refuses: several hosts, one answering.
    params.update(host=f"{host},127.0.0.1", port=f"{port},{dead_port()}")
    params["load_balance_hosts"] = "disable"  # the answering one first, every time
    database = api_app_factory(make_conninfo("", **params)).extensions["registry_db"]
    request.addfinalizer(hosts._suspects.clear)
    request.addfinalizer(database.close)  # its pool would go on trying the refusing host

    failed = database.getconn()
    with pytest.raises(psycopg.errors.DivisionByZero):
        failed.execute("SELECT 1 / 0")
    database.putconn(failed)
    assert not hosts._suspects  # a statement that failed says nothing about the host

    cut_off = database.getconn()
    cut_off.pgconn.send_query(b"SELECT 1")  # sent, its answer never read: the exchange is open
    assert not cut_off.broken
    assert (cut_off.info.host, cut_off.info.port) == (host, int(port))
    database.putconn(cut_off)
    assert list(hosts._suspects) == [(host, port)]
