"""What answers instead of an export is decided before the export takes a slot (docs/export.md,
"Capacity"): a 304 for validators that match (a since export included, after its since is
checked), a 404 for a generation never produced, a 410 for one dropped or a since gone. With
every slot taken by a stalled export, each of these still gets its answer, never the export
limit's 503; an export that would stream gets the 503."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from flask import Flask
from flask.testing import FlaskClient

from registry.api.export import FIRST_BATCH
from registry.loader.loading import load_document
from tests.api.test_export import many_origins
from tests.conftest import document

NDJSON = "application/x-ndjson"
CSV = "text/csv"
# Four loads keeping 2 graphs and 2 change sets: graphs 3 and 4, change sets 3 and 4, so the
# oldest since is 2; generation 1's graph and since 1 are gone; 99 was never produced.
EXPORTS = [
    ("/registry/origins", NDJSON),
    ("/registry/origins?generation=3", CSV),
    ("/registry/changes", NDJSON),
    ("/registry/changes?generation=3", CSV),
    ("/registry/changes?since=2", NDJSON),
    ("/registry/changes?since=2", CSV),
    ("/registry/changes?since=3&generation=4&kind=changed", NDJSON),
]
NOT_PRODUCED = ["/registry/origins?generation=99", "/registry/changes?generation=99"]
DROPPED = ["/registry/origins?generation=1", "/registry/changes?generation=1"]


@pytest.fixture(scope="module")
def one_slot(database_factory: Callable[[], str], api_app_factory: Callable[..., Flask]) -> Flask:
    """An app with one export slot over four loads, each of several batches."""
    conninfo = database_factory()
    with psycopg.connect(conninfo, autocommit=True) as conn:
        for load in range(4):
            records = many_origins(FIRST_BATCH * 3, f"load{load}" if load % 2 else "even")
            load_document(conn, io.BytesIO(document(records)), keep_generations=2, keep_changes=2)
    return api_app_factory(conninfo, REGISTRY_MAX_EXPORTS=1)


@pytest.fixture(scope="module")
def validators(one_slot: Flask, admin_headers: dict[str, str]) -> dict[tuple[str, str], Any]:
    """Each export of EXPORTS read whole while a slot is free: its ETag and Last-Modified."""
    client = one_slot.test_client()
    found = {}
    for url, accept in EXPORTS:
        response = client.get(url, headers={**admin_headers, "Accept": accept})
        assert response.status_code == 200, (url, response.data)
        response.get_data()
        found[url, accept] = response.headers
    return found


@pytest.fixture
def stalled(one_slot: Flask, admin_headers: dict[str, str]) -> Iterator[FlaskClient]:
    """A client of the app while its one slot streams an export nobody reads."""
    client = one_slot.test_client()
    held = client.get(
        "/registry/origins", headers={**admin_headers, "Accept": NDJSON}, buffered=False
    )
    assert held.status_code == 200
    assert next(iter(held.response)).count(b"\n") == FIRST_BATCH
    yield client
    held.close()


@pytest.mark.parametrize(("url", "accept"), EXPORTS)
@pytest.mark.parametrize("validator", ["If-None-Match", "If-Modified-Since"])
def test_a_revalidated_export_is_a_304_while_every_slot_is_taken(
    stalled: FlaskClient,
    validators: dict[tuple[str, str], Any],
    admin_headers: dict[str, str],
    url: str,
    accept: str,
    validator: str,
):
    given = validators[url, accept]
    value = given["ETag"] if validator == "If-None-Match" else given["Last-Modified"]
    headers = {**admin_headers, "Accept": accept}

    response = stalled.get(url, headers={**headers, validator: value})

    assert response.status_code == 304, (url, response.data)
    assert response.headers["ETag"] == given["ETag"]
    assert response.headers["Registry-Generation"] == given["Registry-Generation"]
    # The same request without its validator would stream: the one slot is taken.
    refused = stalled.get(url, headers=headers)
    assert refused.status_code == 503
    assert "export limit" in refused.get_json()["message"]


@pytest.mark.parametrize("accept", [NDJSON, CSV])
@pytest.mark.parametrize(
    ("url", "status", "error", "details"),
    [
        *((url, 404, "Generation not found", {"generation": 99, "current": 4})
          for url in NOT_PRODUCED),
        *((url, 410, "Generation no longer available", {"generation": 1, "current": 4})
          for url in DROPPED),
        ("/registry/changes?since=99", 404, "Generation not found",
         {"since": 99, "current": 4}),
        ("/registry/changes?since=1", 410, "Changes no longer available",
         {"since": 1, "oldest_since": 2, "current": 4}),
    ],
)  # fmt: skip
@pytest.mark.parametrize("conditional", [False, True])
def test_an_export_that_cannot_answer_gets_its_404_or_410_while_every_slot_is_taken(
    stalled: FlaskClient,
    admin_headers: dict[str, str],
    accept: str,
    url: str,
    status: int,
    error: str,
    details: dict[str, int],
    conditional: bool,
):
    headers = {**admin_headers, "Accept": accept}
    if conditional:
        headers["If-None-Match"] = 'W/"4-000000000000"'

    response = stalled.get(url, headers=headers)

    assert response.status_code == status, response.data
    assert response.get_json() == {"success": False, "error": error, "details": details}
