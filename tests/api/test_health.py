"""GET /healthz and GET /readyz: public JSON probes; readiness follows the database and the
schema version, liveness follows nothing but the process."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from flask import Flask
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from registry.database.migrations import SCHEMA_VERSION
from registry.database.queries import QUERIES
from registry.database.roles import create_reader_role
from tests.conftest import dead_port, load_records, make_token

JSON = "application/json"


FAST_FAILURE = {"REGISTRY_POOL_TIMEOUT_S": 0.5, "REGISTRY_CONNECT_TIMEOUT_S": 1}


def assert_not_ready(response: Any, reason_part: str) -> None:
    """503 with Retry-After, the documented error fields, and why."""
    assert response.status_code == 503
    assert response.headers["Content-Type"] == JSON
    assert response.headers["Retry-After"] == "2"
    assert response.headers["Cache-Control"] == "no-store"
    body = response.get_json()
    assert body["success"] is False
    assert body["error"] == "Service Unavailable"
    assert body["ready"] is False
    assert reason_part in body["reason"]


@pytest.fixture(scope="module")
def unreachable_app(api_app_factory: Callable[..., Flask]) -> Iterator[Flask]:
    """An app whose database address has nothing listening (its pool closed after the module:
    no connection attempt of it outlives the tests that use it)."""
    app = api_app_factory(f"postgresql://postgres@127.0.0.1:{dead_port()}/x", **FAST_FAILURE)
    yield app
    app.extensions["registry_db"].close()


def test_healthz_is_public_json(client: Any):
    """200, JSON, no credentials, never cached."""
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == JSON
    assert response.headers["Cache-Control"] == "no-store"
    assert response.get_json() == {"success": True, "status": "ok"}


def test_healthz_needs_no_database(unreachable_app: Flask):
    """The process is up: 200 even while the database cannot be reached, and no connection."""
    pool = unreachable_app.extensions["registry_db"].pool
    before = pool.get_stats().get("requests_num", 0)
    response = unreachable_app.test_client().get("/healthz")
    assert response.status_code == 200
    assert pool.get_stats().get("requests_num", 0) == before


def test_readyz_with_the_expected_schema(client: Any):
    """The worked example's database: ready, at this code's schema version."""
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == JSON
    assert response.headers["Cache-Control"] == "no-store"
    body = response.get_json()
    assert body["success"] is True
    assert body["ready"] is True
    assert body["schema_version"] == SCHEMA_VERSION
    assert body["loaded_at"].endswith("+00:00")


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_probes_answer_head_and_refuse_other_methods(client: Any, path: str):
    """HEAD like GET with no body; POST is the JSON 405 with Allow."""
    head = client.head(path)
    assert head.status_code == 200
    assert head.get_data() == b""
    post = client.post(path)
    assert post.status_code == 405
    assert post.get_json() == {"success": False, "error": "Method Not Allowed"}
    assert post.headers["Allow"] == "GET, HEAD"


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_probes_take_no_parameters(client: Any, path: str):
    """Like every endpoint: an unknown parameter is a 400 naming it."""
    response = client.get(path + "?verbose=1")
    assert response.status_code == 400
    assert response.get_json()["details"] == {"verbose": ["unknown parameter"]}


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_probes_need_no_token(client: Any, path: str):
    """Public: a bad token does not matter."""
    response = client.get(path, headers={"Authorization": "Bearer nonsense"})
    assert response.status_code == 200


def test_readyz_database_unreachable(unreachable_app: Flask):
    """Nothing listens at the database address: 503 saying so, within the pool timeout."""
    response = unreachable_app.test_client().get("/readyz")
    assert_not_ready(response, "cannot be reached")


def test_readyz_database_never_set_up(
    database_factory: Callable[[], str], api_app_factory: Callable[..., Flask]
):
    """An empty database (no migrations, no graph): 503, telling the operator what to run."""
    app = api_app_factory(database_factory())
    assert_not_ready(app.test_client().get("/readyz"), "registry db upgrade")


def test_readyz_schema_of_another_version(
    database_factory: Callable[[], str],
    api_app_factory: Callable[..., Flask],
    example_document: bytes,
):
    """A database migrated by newer code than this: not ready, naming both versions."""
    conninfo = database_factory()
    load_records(conninfo, example_document)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(
            QUERIES["meta/record_migration"], {"version": SCHEMA_VERSION + 1, "name": "future"}
        )
    app = api_app_factory(conninfo)
    response = app.test_client().get("/readyz")
    assert_not_ready(response, f"migrations_version is {SCHEMA_VERSION + 1}")
    assert f"expects {SCHEMA_VERSION}" in response.get_json()["reason"]


def test_readyz_over_the_time_budget(
    database_factory: Callable[[], str],
    api_app_factory: Callable[..., Flask],
    example_document: bytes,
):
    """The probe's query waits on a lock past statement_timeout: 503 saying it was too slow."""
    conninfo = database_factory()
    load_records(conninfo, example_document)
    app = api_app_factory(conninfo, REGISTRY_STATEMENT_TIMEOUT_MS=200)
    with psycopg.connect(conninfo) as locker:
        locker.execute("LOCK TABLE graph.graph_info IN ACCESS EXCLUSIVE MODE")
        assert_not_ready(app.test_client().get("/readyz"), "time budget")
        locker.rollback()
    assert app.test_client().get("/readyz").status_code == 200


@pytest.fixture
def reader_conninfo(database_factory: Callable[[], str], example_document: bytes) -> Iterator[str]:
    """The worked example, and a conninfo of a SELECT-only role made by create-reader."""
    conninfo = database_factory()
    load_records(conninfo, example_document)
    role = f"registry_reader_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(conninfo, autocommit=True) as conn:
        create_reader_role(conn, role, password=None)
    params = conninfo_to_dict(conninfo)
    params.update(user=role, password="")
    reader = make_conninfo("", **params)
    # Both test servers (trust authentication) let the new role log in: a failure here is a
    # broken create-reader, never a reason to skip.
    try:
        yield reader
    finally:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def test_readyz_as_the_read_only_role(reader_conninfo: str, api_app_factory: Callable[..., Flask]):
    """The role operators are told to use can answer the probe, a listing and a lookup, and
    its sessions really are that role's."""
    with psycopg.connect(reader_conninfo, connect_timeout=5) as conn:
        row = conn.execute("SELECT current_user, current_setting('transaction_read_only')")
        role, read_only = row.fetchone()  # type: ignore[misc]
    assert role.startswith("registry_reader_") and read_only == "on"
    app = api_app_factory(reader_conninfo)
    client = app.test_client()
    admin = {"Authorization": f"Bearer {make_token()}"}
    assert client.get("/readyz").status_code == 200
    assert client.get("/summary").status_code == 200
    listing = client.get("/registry/origins", headers=admin)
    assert listing.status_code == 200
    origins = listing.get_json()["origins"]
    assert len(origins) == 4
    origin_id = origins[0]["origin"]["id"]
    lookup = client.get(f"/registry/origins/{origin_id}", headers=admin)
    assert lookup.status_code == 200
    assert lookup.get_json()["origin"]["origin"]["id"] == origin_id
    app.extensions["registry_db"].close()
