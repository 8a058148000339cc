"""The service as operators run it: gunicorn wsgi:app, real HTTP, real tokens, live reloads."""

from __future__ import annotations

import io

import orjson
import psycopg
import pytest

from registry.loader.loading import load_document
from tests.conftest import TEST_SECRET, document, make_token

pytestmark = pytest.mark.e2e


def origin_record(number: int, name: str) -> dict:
    """A reviewed origin with a predictable id."""
    return {
        "type": "origin",
        "id": f"svc:origin:00000000-0000-4000-8000-{number:012d}",
        "name": name,
        "network_id": None,
        "registry_id": None,
        "reviewed": True,
    }


def test_serves_the_example_over_http(gunicorn_factory, example_db, example_expected):
    """The worked example's answers, over real HTTP through gunicorn."""
    server = gunicorn_factory({"DATABASE_URL": example_db, "REGISTRY_JWT_SECRET": TEST_SECRET})
    from tests.e2e.conftest import fetch

    summary = fetch(server.base + "/summary")
    assert summary.status == 200
    assert summary.headers["Content-Type"] == "application/json"
    body = orjson.loads(summary.body)
    body.pop("generated_at")
    assert body == example_expected["GET /summary"]

    auth = {"Authorization": f"Bearer {make_token()}"}
    listing = fetch(server.base + "/registry/origins", auth)
    assert listing.status == 200
    ids = [item["origin"]["id"] for item in orjson.loads(listing.body)["origins"]]
    assert ids == example_expected["GET /registry/origins (origin ids in order)"]

    denied = fetch(server.base + "/registry/origins")
    assert denied.status == 401
    assert orjson.loads(denied.body) == {"error": "Unauthorized"}


def test_a_committed_load_is_served_without_a_restart(gunicorn_factory, database_factory):
    """Every worker answers from the new graph as soon as a load commits."""
    from tests.e2e.conftest import fetch

    conninfo = database_factory()
    with psycopg.connect(conninfo, autocommit=True) as conn:
        load_document(conn, io.BytesIO(document([origin_record(1, "Before")])))
    server = gunicorn_factory({"DATABASE_URL": conninfo, "REGISTRY_JWT_SECRET": TEST_SECRET})
    auth = {"Authorization": f"Bearer {make_token()}"}

    def names() -> set[str]:
        """Origin names seen over several requests (so several workers answer)."""
        seen = set()
        for _ in range(8):
            answer = fetch(server.base + "/registry/origins", auth)
            assert answer.status == 200
            seen |= {item["origin"]["name"] for item in orjson.loads(answer.body)["origins"]}
        return seen

    assert names() == {"Before"}
    with psycopg.connect(conninfo, autocommit=True) as conn:
        load_document(
            conn, io.BytesIO(document([origin_record(2, "After"), origin_record(3, "After")]))
        )
    assert names() == {"After"}


def test_secret_and_cookie_are_not_logged(gunicorn_factory, example_db):
    """Tokens in headers or cookies never reach the server's output."""
    from tests.e2e.conftest import fetch

    server = gunicorn_factory({"DATABASE_URL": example_db, "REGISTRY_JWT_SECRET": TEST_SECRET})
    good, bad = make_token(), make_token(secret="x" * 40)
    fetch(server.base + "/registry/summary", {"Authorization": f"Bearer {good}"})
    fetch(server.base + "/registry/summary", {"Authorization": f"Bearer {bad}"})
    fetch(server.base + "/registry/summary", {"Cookie": f"access_token={bad}"})
    output = server.stop()
    assert good not in output and bad not in output
    assert TEST_SECRET not in output
