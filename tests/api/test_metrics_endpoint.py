"""GET /metrics in one process (the Flask test client): labels, causes and reasons."""

from __future__ import annotations

import io
import time
from collections.abc import Callable

import psycopg
import pytest
from flask import Flask
from flask.testing import FlaskClient
from prometheus_client.parser import text_string_to_metric_families
from psycopg_pool import PoolTimeout

from registry.api.errors import unavailable_cause
from registry.api.metrics import REJECTION_REASONS, UNAVAILABLE_CAUSES
from registry.loader.demo import write_demo_document
from registry.loader.demo_twin import write_twin_document
from registry.loader.loading import load_document
from tests.api.conftest import AUTH_AUDIENCE, AUTH_ISSUER
from tests.conftest import FIXTURES, dead_port, load_records, make_token

UNKNOWN_ORIGIN = "/registry/origins/svc:origin:00000000-0000-4000-8000-999999999999"


def samples(client: FlaskClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of one scrape, by name and sorted labels."""
    answer = client.get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    found = {}
    for family in text_string_to_metric_families(answer.get_data(as_text=True)):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def requests_of(scrape: dict, route: str, method: str, status: str) -> float:
    """registry_http_requests_total of one route, method and status."""
    labels = (("method", method), ("route", route), ("status", status))
    return scrape.get(("registry_http_requests_total", labels), 0.0)


def get(client: FlaskClient, path: str, **kwargs) -> int:
    """One request, its body read (the body's end is when a request is counted)."""
    answer = client.open(path, **kwargs)
    answer.get_data()
    answer.close()
    return answer.status_code


def test_requests_are_counted_by_route_template(auth_app: Flask):
    """Ids never reach a label; unrouted paths and odd methods share one label each."""
    client = auth_app.test_client()
    before = samples(client)
    token = make_token(aud=AUTH_AUDIENCE, iss=AUTH_ISSUER)
    assert get(client, "/summary") == 200
    assert get(client, UNKNOWN_ORIGIN, headers={"Authorization": f"Bearer {token}"}) == 404
    assert get(client, UNKNOWN_ORIGIN + "x", headers={"Authorization": f"Bearer {token}"}) == 404
    history = UNKNOWN_ORIGIN + "/history"
    assert get(client, history, headers={"Authorization": f"Bearer {token}"}) == 404
    assert get(client, "/nothing/here/123") == 404
    assert get(client, "/summary", method="BREW") == 405
    assert get(client, "/summary", method="DELETE") == 405
    after = samples(client)

    def delta(route: str, method: str, status: str) -> float:
        return requests_of(after, route, method, status) - requests_of(
            before, route, method, status
        )

    assert delta("/summary", "GET", "200") == 1
    assert delta("/registry/origins/<origin_id>", "GET", "404") == 2
    assert delta("/registry/origins/<origin_id>/history", "GET", "404") == 1
    assert delta("unmatched", "GET", "404") == 1
    assert delta("unmatched", "other", "405") == 1
    assert delta("unmatched", "DELETE", "405") == 1
    routes = {
        dict(labels).get("route") for name, labels in after if name.startswith("registry_http")
    }
    assert "/metrics" not in routes
    assert not any(route and "svc:origin" in route for route in routes)
    assert ("registry_build_info", ()) not in after  # build info has labels
    assert any(name == "registry_build_info" for name, _ in after)
    assert after[("registry_database_reachable", ())] == 1
    assert after[("registry_generation_loaded_timestamp_seconds", ())] <= time.time()


def test_metrics_takes_no_query(auth_app: Flask):
    """Like the probes: a query parameter is a 400 in the API's JSON."""
    answer = auth_app.test_client().get("/metrics?name[]=x")
    assert answer.status_code == 400
    assert answer.get_json()["success"] is False


@pytest.mark.parametrize(
    ("claims", "header", "reason"),
    [
        (None, None, "missing"),
        (None, "Bearer not-a-token", "malformed"),
        (None, "Basic dXNlcjpwYXNz", "malformed"),
        ({"secret": "another-secret-that-is-long-enough-for-hs256-xyz"}, None, "bad_signature"),
        ({"exp": int(time.time()) - 3600}, None, "expired"),
        ({"nbf": int(time.time()) + 3600}, None, "not_yet_valid"),
        ({"aud": "someone-else"}, None, "wrong_audience"),
        ({"iss": "https://elsewhere.test"}, None, "wrong_issuer"),
        ({"roles": ["viewer"]}, None, "forbidden_role"),
    ],
)
def test_token_rejections_are_counted_by_reason(auth_app: Flask, claims, header, reason):
    """Each refusal under /registry counts once, under its reason, and under no other."""
    client = auth_app.test_client()
    headers = {}
    if header is not None:
        headers["Authorization"] = header
    elif claims is not None:
        claims = {"aud": AUTH_AUDIENCE, "iss": AUTH_ISSUER, **claims}
        roles = claims.pop("roles", ("domain_admin",))
        headers["Authorization"] = f"Bearer {make_token(roles, **claims)}"
    before = samples(client)
    assert get(client, "/registry/summary", headers=headers) in (401, 403)
    after = samples(client)
    for each in REJECTION_REASONS:
        key = ("registry_token_rejections_total", (("reason", each),))
        assert after[key] - before[key] == (1 if each == reason else 0), each


def test_unavailable_answers_are_counted_by_cause(
    api_app_factory: Callable[..., Flask],
    database_factory: Callable[[], str],
    request: pytest.FixtureRequest,
):
    """503s by cause: a database that is down, and one with no graph loaded."""
    down = api_app_factory(f"postgresql://postgres@127.0.0.1:{dead_port()}/registry")
    request.addfinalizer(down.extensions["registry_db"].close)
    client = down.test_client()
    before = samples(client)
    for _ in range(3):
        assert get(client, "/summary") == 503
    after = samples(client)
    assert after[("registry_database_reachable", ())] == 0

    def delta(scrape_after: dict, scrape_before: dict, cause: str) -> float:
        key = ("registry_unavailable_total", (("cause", cause),))
        return scrape_after[key] - scrape_before[key]

    assert delta(after, before, "database_down") == 3
    assert sum(delta(after, before, cause) for cause in UNAVAILABLE_CAUSES) == 3

    empty = api_app_factory(database_factory()).test_client()
    before = samples(empty)
    assert get(empty, "/summary") == 503
    after = samples(empty)
    assert delta(after, before, "no_graph") == 1
    assert sum(delta(after, before, cause) for cause in UNAVAILABLE_CAUSES) == 1


@pytest.mark.parametrize(
    ("error", "down", "cause"),
    [
        (
            psycopg.errors.QueryCanceled("canceling statement due to statement timeout"),
            False,
            "statement_timeout",
        ),
        (PoolTimeout("couldn't get a connection after 1.50 sec"), False, "pool_timeout"),
        (PoolTimeout("the database could not be reached a moment ago"), True, "database_down"),
        (psycopg.OperationalError("connection refused"), False, "database_down"),
        (psycopg.errors.UndefinedTable("relation graph.feed does not exist"), False, "no_graph"),
        (
            psycopg.errors.UndefinedColumn("column r.address_station does not exist"),
            False,
            "graph_layout",
        ),
    ],
)
def test_each_database_failure_has_its_cause(error: Exception, down: bool, cause: str):
    """The classification behind registry_unavailable_total{cause}."""
    assert unavailable_cause(error, down) == cause


def test_generation_changes_count_what_the_live_generation_changed(
    api_app_factory: Callable[..., Flask], database_factory: Callable[[], str]
):
    """registry_generation_changes{kind}: the first load of a database adds every origin; the
    demo's twin loaded over it adds, removes and changes what it was written to; a
    generation loaded before change sets were recorded has no such series."""
    conninfo = database_factory()
    demo = io.BytesIO()
    write_demo_document(demo, origins=300, seed=5)
    load_records(conninfo, demo.getvalue())
    client = api_app_factory(conninfo).test_client()

    def changes() -> dict[str, float]:
        scrape = samples(client)
        assert scrape[("registry_database_reachable", ())] == 1
        return {
            dict(labels)["kind"]: value
            for (name, labels), value in scrape.items()
            if name == "registry_generation_changes"
        }

    assert changes() == {"added": 300, "removed": 0, "changed": 0}
    twin = io.BytesIO()
    # 10 % of 300 origins: a quarter of 30 removed, a quarter added, the other 16 changed
    assert write_twin_document(twin, 300, seed=5, fraction=0.1).changes == {
        "added": 7,
        "removed": 7,
        "changed": 16,
    }
    load_records(conninfo, twin.getvalue())
    assert samples(client)[("registry_generation", ())] == 2
    assert changes() == {"added": 7, "removed": 7, "changed": 16}
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(
            "UPDATE registry_meta.generations SET added = NULL, removed = NULL, changed = NULL"
            " WHERE generation = 2"
        )
    assert changes() == {}
    assert samples(client)[("registry_generation", ())] == 2


def test_kept_change_sets_are_counted_with_their_bytes(
    api_app_factory: Callable[..., Flask], database_factory: Callable[[], str]
):
    """registry_change_sets_kept, _oldest_since and _bytes (docs/api.md, Changes since any
    generation): the first load keeps its own change set (every origin added, since the first
    generation itself); four loads with two change sets kept keep the last two, since the generation
    before them, and their bytes follow their changes (30 origins each), not the graph (300)."""
    conninfo = database_factory()
    demo, twin = io.BytesIO(), io.BytesIO()
    write_demo_document(demo, origins=300, seed=5)
    write_twin_document(twin, 300, seed=5, fraction=0.1)
    client = api_app_factory(conninfo).test_client()

    def kept() -> dict[str, float]:
        scrape = samples(client)
        return {
            name.removeprefix("registry_change_sets_"): value
            for (name, _), value in scrape.items()
            if name.startswith("registry_change_sets_")
        }

    def load(payload: bytes) -> None:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            load_document(conn, io.BytesIO(payload), keep_changes=2)

    load(demo.getvalue())
    first = kept()
    assert (first["kept"], first["oldest_since"]) == (1, 1)
    assert first["bytes"] > 0
    for payload in (twin, demo, twin):
        load(payload.getvalue())
    last = kept()
    assert (last["kept"], last["oldest_since"]) == (2, 2)
    assert 0 < last["bytes"] < first["bytes"]


def test_a_generation_without_a_column_the_code_reads_is_a_503(
    api_app_factory: Callable[..., Flask],
    database_factory: Callable[[], str],
    admin_headers: dict[str, str],
    caplog: pytest.LogCaptureFixture,
):
    """A filter on a column of its own, read in a generation built before the column existed
    (here: origin_rows without address_station), is a 503 counted as graph_layout and logged
    as an error naming the column, never a listing that ignores the filter nor a bare 500;
    what does not read the column still answers (ARCHITECTURE.md, "Adding a filter or a
    facet")."""
    conninfo = database_factory()
    load_records(conninfo, (FIXTURES / "small-graph.jsonl").read_bytes())
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("ALTER TABLE graph.origin_rows DROP COLUMN address_station")
    client = api_app_factory(conninfo).test_client()
    before = samples(client)
    with caplog.at_level("ERROR", logger="registry.errors"):
        answer = client.get("/registry/origins?station_id=1", headers=admin_headers)
    assert answer.status_code == 503
    assert answer.headers["Retry-After"] and answer.get_json() == {
        "success": False,
        "error": "Service Unavailable",
    }
    after = samples(client)
    key = ("registry_unavailable_total", (("cause", "graph_layout"),))
    assert after[key] - before[key] == 1
    errors = [r.getMessage() for r in caplog.records if r.name == "registry.errors"]
    assert len(errors) == 1 and "address_station" in errors[0], errors
    assert client.get("/registry/origins", headers=admin_headers).status_code == 200
