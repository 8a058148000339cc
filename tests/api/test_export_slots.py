"""An export's slot (docs/export.md, Capacity, registry/api/export_slots.py) is given back however
the export ends, even when giving its connection back fails."""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable

import pytest
from flask import Flask

from registry.api.export import FIRST_BATCH
from registry.api.export_slots import ExportSlots
from tests.api.test_export import many_origins
from tests.conftest import load_records

NDJSON = {"Accept": "application/x-ndjson"}


@pytest.fixture(scope="module")
def one_slot_app(
    database_factory: Callable[[], str], api_app_factory: Callable[..., Flask]
) -> Flask:
    """An app with one export slot over a graph of several batches."""
    conninfo = database_factory()
    load_records(conninfo, many_origins(FIRST_BATCH * 3, "slot"))
    return api_app_factory(conninfo, REGISTRY_MAX_EXPORTS=1)


def test_the_slot_is_freed_when_giving_the_connection_back_fails(
    one_slot_app: Flask, admin_headers: dict[str, str], monkeypatch: pytest.MonkeyPatch
):
    """The worker's pool is closed under a streaming export (as a worker's exit closes it):
    giving the export's connection back then fails (psycopg_pool refuses a connection that
    is not its own); the export's slot is free all the same, and the next export streams
    instead of a 503."""
    slots: ExportSlots = one_slot_app.extensions["registry_export_slots"]
    client = one_slot_app.test_client()
    response = client.get("/registry/origins", headers={**admin_headers, **NDJSON}, buffered=False)
    assert response.status_code == 200
    chunks = iter(response.response)
    assert next(chunks).count(b"\n") == FIRST_BATCH
    # The one slot is taken while it streams.
    assert client.get("/registry/origins", headers={**admin_headers, **NDJSON}).status_code == 503
    one_slot_app.extensions["registry_db"].close()
    # The server closes the body half-way (the client went away). The body's generator ends
    # as it is dropped, so what it raises is reported to sys.unraisablehook, as under gunicorn.
    failures: list[BaseException | None] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda report: failures.append(report.exc_value))
    response.close()
    del chunks
    gc.collect()
    assert any("can't return connection to pool" in str(failure) for failure in failures)
    slot = slots.acquire()
    assert slot is not None, "the export's slot was never given back"
    slots.release(slot)
    again = client.get("/registry/origins", headers={**admin_headers, **NDJSON})
    assert again.status_code == 200
    assert again.get_data().count(b"\n") == FIRST_BATCH * 3
