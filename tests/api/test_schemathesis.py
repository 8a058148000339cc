"""Clients this project did not write, against the real service: gunicorn on a loopback port
serving its own /openapi.json, used as published (no patching), with an admin token.
Schemathesis runs every check on positive and negative data; openapi-core validates real
answers of every kind. Neither may find anything."""

from __future__ import annotations

import io
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import psycopg
import pytest
import requests
from openapi_core import Config, OpenAPI
from openapi_core.contrib.requests import RequestsOpenAPIRequest, RequestsOpenAPIResponse

from devtools.production_stack import Gunicorn, start_gunicorn
from registry.loader.demo import write_demo_document
from registry.loader.demo_twin import write_twin_document
from registry.loader.loading import load_document
from tests.conftest import TEST_SECRET, make_token
from tests.e2e.slow_client import SlowClient

pytestmark = pytest.mark.e2e

# Enough to reach every operation, parameter and status many times, in seconds, not minutes.
MAX_EXAMPLES = 100
RUN_TIMEOUT_S = 240
HARBOUR_NEWS = "3b2f1e0d-9c8b-4a7f-8e6d-5c4b3a291807"
ADMIN = {"Authorization": f"Bearer {make_token()}"}
VIEWER = {"Authorization": f"Bearer {make_token(roles=['viewer'])}"}
NDJSON = {"Accept": "application/x-ndjson"}
CSV = {"Accept": "text/csv"}


@pytest.fixture(scope="module")
def served_example(example_db: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The real app under gunicorn (2 workers) over the worked example; its base URL."""
    log = tmp_path_factory.mktemp("clients") / "gunicorn.log"
    server: Gunicorn = start_gunicorn(
        {"DATABASE_URL": example_db, "REGISTRY_JWT_SECRET": TEST_SECRET}, log, workers=2
    )
    try:
        yield server.base
    finally:
        output = server.stop()
    assert "Traceback" not in output, output


def test_schemathesis_finds_nothing(served_example: str, tmp_path: Path):
    """Every phase and every check, positive and negative data, with an admin token, against
    the served document as it is (its server URL included)."""
    command = [
        sys.executable,
        "-m",
        "schemathesis.cli",
        "run",
        f"{served_example}/openapi.json",
        "--checks",
        "all",
        "--mode",
        "all",
        "--header",
        f"Authorization: Bearer {make_token()}",
        "--max-examples",
        str(MAX_EXAMPLES),
        "--generation-database",
        "none",
        "--request-timeout",
        "10",
        "--no-color",
    ]
    run = subprocess.run(
        command,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    # Schemathesis exits non-zero on any failure. Its one expected warning: it has no
    # deserializer for the NDJSON export, which tests/api/test_export.py checks instead.
    assert "❌" not in output, output
    assert "No issues found" in output or "cannot validate application/x-ndjson" in output, output


# Real requests of every kind the document describes: (target, headers, expected status).
ANSWERS: list[tuple[str, dict[str, str], int]] = [
    ("/summary", {}, 200),
    ("/summary?x=1", {}, 400),
    ("/openapi.json", {}, 200),
    ("/healthz", {}, 200),
    ("/readyz", {}, 200),
    ("/registry/summary", ADMIN, 200),
    ("/registry/summary?generation=1", ADMIN, 200),
    ("/registry/summary?generation=9223372036854775806", ADMIN, 404),
    ("/registry/summary?generation=0", ADMIN, 400),
    ("/registry/summary", {}, 401),
    ("/registry/summary", {"Authorization": "Bearer not-a-token"}, 401),
    ("/registry/summary", VIEWER, 403),
    ("/registry/origins", ADMIN, 200),
    ("/registry/origins?limit=1&page=2", ADMIN, 200),
    ("/registry/origins?page=99&limit=2", ADMIN, 200),
    ("/registry/origins?governance_state=governed&transport=ota", ADMIN, 200),
    ("/registry/origins?search=news&generation=1", ADMIN, 200),
    ("/registry/origins?generation=7", ADMIN, 404),
    ("/registry/origins?limit=0&bogus=1", ADMIN, 400),
    ("/registry/origins", {**ADMIN, **NDJSON}, 200),
    ("/registry/origins?governance_state=governed", {**ADMIN, **CSV}, 200),
    ("/registry/origins?generation=7", {**ADMIN, **CSV}, 404),
    ("/registry/origins", {**ADMIN, "Accept": "image/png"}, 406),
    # docs/api.md, Facets and ids: facets and id lists, their answers and their 400s.
    (
        "/registry/origins?facet=governance_state,allocation_state,publication_status,transport,"
        "has_presentations,network_id,station_id&limit=1",
        ADMIN,
        200,
    ),
    ("/registry/origins?facet=network_id,station_id&facet_size=1&search=a", ADMIN, 200),
    (f"/registry/origins?id={HARBOUR_NEWS},svc:origin:{HARBOUR_NEWS}&facet=transport", ADMIN, 200),
    (f"/registry/origins?id={HARBOUR_NEWS}", {**ADMIN, **CSV}, 200),
    ("/registry/origins?facet=colour", ADMIN, 400),
    ("/registry/origins?facet_size=2", ADMIN, 400),
    ("/registry/origins?id=nope", ADMIN, 400),
    ("/registry/origins?facet=transport", {**ADMIN, **NDJSON}, 400),
    (f"/registry/origins/{HARBOUR_NEWS}", ADMIN, 200),
    (f"/registry/origins/svc:origin:{HARBOUR_NEWS}?generation=1", ADMIN, 200),
    (f"/registry/origins/{HARBOUR_NEWS}?generation=8", ADMIN, 404),
    ("/registry/origins/nope", ADMIN, 404),
    (f"/registry/origins/{HARBOUR_NEWS}/history", ADMIN, 200),
    (f"/registry/origins/svc:origin:{HARBOUR_NEWS}/history?generation=1", ADMIN, 200),
    (f"/registry/origins/{HARBOUR_NEWS}/history?generation=8", ADMIN, 404),
    ("/registry/origins/nope/history", ADMIN, 404),
    ("/registry/origins/nope/history?generation=x", ADMIN, 400),
    (f"/registry/origins/{HARBOUR_NEWS}/history", {}, 401),
    ("/registry/addresses/9.10.3", ADMIN, 200),
    ("/registry/addresses/9.9.9", ADMIN, 404),
    ("/registry/addresses/9.10.3?generation=9223372036854775807", ADMIN, 404),
    ("/registry/changes", ADMIN, 200),
    ("/registry/changes?kind=added&limit=2&page=2&generation=1", ADMIN, 200),
    ("/registry/changes?kind=removed", ADMIN, 200),
    ("/registry/changes?block=bans&kind=added", ADMIN, 400),
    ("/registry/changes?generation=7", ADMIN, 404),
    ("/registry/changes", {**ADMIN, **NDJSON}, 200),
    ("/registry/changes?kind=added", {**ADMIN, **CSV}, 200),
    ("/registry/changes", {**ADMIN, "Accept": "image/png"}, 406),
    ("/registry/generations", ADMIN, 200),
    ("/registry/generations?generation=1", ADMIN, 200),
    ("/registry/generations?generation=7", ADMIN, 404),
]


def csv_text(value: bytes, **parameters: str) -> str:
    """A text/csv body as the text its charset says."""
    return value.decode(parameters.get("charset", "utf-8"))


@pytest.fixture(scope="module")
def published(served_example: str) -> OpenAPI:
    """openapi-core over the document exactly as the service publishes it, told how to read
    the two export media types it has no decoder for (it would hand their raw bytes to the
    schema): CSV is text, and an NDJSON line is JSON."""
    return published_by(served_example)


def published_by(base: str) -> OpenAPI:
    """openapi-core over the document the service at base publishes (naming base)."""
    config = Config(
        extra_media_type_deserializers={"text/csv": csv_text, "application/x-ndjson": orjson.loads}
    )
    document = requests.get(f"{base}/openapi.json", timeout=10).json()
    return OpenAPI.from_dict(document, config=config)


@dataclass
class NdjsonLine:
    """One line of an NDJSON answer, as a response of its own: the document's schema for
    application/x-ndjson is that of each line (one Origin per line)."""

    data: bytes
    status_code: int
    content_type: str
    headers: Any


def validated(openapi: OpenAPI, response: requests.Response) -> requests.Response:
    """response, after openapi-core found it conforms to the published document."""
    request = RequestsOpenAPIRequest(response.request)
    answer = RequestsOpenAPIResponse(response)
    if answer.content_type.startswith("application/x-ndjson"):
        lines = response.content.split(b"\n")
        assert lines[-1] == b"" and len(lines) > 1
        for line in lines[:-1]:
            item = NdjsonLine(line, answer.status_code, answer.content_type, answer.headers)
            openapi.validate_response(request, item)
    else:
        openapi.validate_response(request, answer)
    return response


@pytest.mark.parametrize(("target", "headers", "status"), ANSWERS)
def test_openapi_core_validates_real_answers(
    served_example: str, published: OpenAPI, target: str, headers: dict[str, str], status: int
):
    """Bodies, headers and statuses of real answers, checked by openapi-core."""
    response = requests.get(served_example + target, headers=headers, timeout=10)
    assert response.status_code == status, response.text
    validated(published, response)


def test_openapi_core_validates_a_sweep_and_its_304s(served_example: str, published: OpenAPI):
    """Every page of a sweep by its Link next, then each page again as a 304."""
    url: Any = f"{served_example}/registry/origins?limit=2"
    pages = []
    while url:
        page = validated(published, requests.get(url, headers=ADMIN, timeout=10))
        assert page.status_code == 200
        pages.append(page)
        url = page.links.get("next", {}).get("url")
        if url:
            url = served_example + url
    assert len(pages) > 1
    for page in pages:
        again = {**ADMIN, "If-None-Match": page.headers["ETag"]}
        repeat = requests.get(page.url, headers=again, timeout=10)
        assert repeat.status_code == 304
        validated(published, repeat)


# A demo graph whose export outgrows the buffers between a worker and a client that does not
# read (about 1.8 MB of NDJSON), so that one held export keeps its slot.
HISTORY_ORIGINS = 2_000


@pytest.fixture(scope="module")
def served_history(
    database_factory: Callable[[], str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gunicorn]:
    """The real app (2 workers, one export at a time) over the demo graph (generation 1) and
    then its changed twin (generation 2) with one generation kept: generation 2's changes
    hold every kind and block, and generation 1 is gone."""
    conninfo = database_factory()
    for write in (write_demo_document, write_twin_document):
        spool = io.BytesIO()
        write(spool, HISTORY_ORIGINS, 1)
        spool.seek(0)
        with psycopg.connect(conninfo, autocommit=True) as conn:
            load_document(conn, spool, keep_generations=1)
    log = tmp_path_factory.mktemp("history") / "gunicorn.log"
    server = start_gunicorn(
        {"DATABASE_URL": conninfo, "REGISTRY_JWT_SECRET": TEST_SECRET, "REGISTRY_MAX_EXPORTS": "1"},
        log,
        workers=2,
    )
    try:
        yield server
    finally:
        output = server.stop()
    assert "Traceback" not in output, output


@pytest.fixture(scope="module")
def history_published(served_history: Gunicorn) -> OpenAPI:
    """openapi-core over the document as the instance over the demo's history publishes it."""
    return published_by(served_history.base)


def wait_until_no_export(server: Gunicorn, seconds: float = 30) -> None:
    """Wait until the instance streams no export: a worker gives its slot back just after
    the last chunk, so a client that has read a whole export may be a moment ahead of it."""
    deadline = time.monotonic() + seconds
    while True:
        text = requests.get(f"{server.base}/metrics", timeout=10).text
        flying = [
            line for line in text.splitlines() if line.startswith("registry_exports_in_flight ")
        ]
        if not flying or float(flying[0].split()[-1]) == 0:
            return
        assert time.monotonic() < deadline, flying
        time.sleep(0.05)


# Real answers over a generation with changes of every kind, and one no longer kept.
HISTORY_ANSWERS: list[tuple[str, dict[str, str], int]] = [
    ("/registry/changes", ADMIN, 200),
    ("/registry/changes?kind=changed&block=bans&limit=3", ADMIN, 200),
    ("/registry/changes?kind=changed&block=origin&generation=2", ADMIN, 200),
    ("/registry/changes?kind=removed&limit=2&page=2", ADMIN, 200),
    ("/registry/changes?block=presentations", {**ADMIN, **NDJSON}, 200),
    ("/registry/changes", {**ADMIN, **CSV}, 200),
    ("/registry/changes?generation=1", ADMIN, 410),
    ("/registry/changes?generation=1", {**ADMIN, **NDJSON}, 410),
    ("/registry/changes?generation=3", ADMIN, 404),
    ("/registry/changes?limit=2", {**ADMIN, **NDJSON}, 400),
    ("/registry/generations", ADMIN, 200),
    ("/registry/generations?generation=1", ADMIN, 410),
    ("/registry/generations?generation=3", ADMIN, 404),
    ("/registry/summary?generation=1", ADMIN, 410),
    ("/registry/origins?generation=1", ADMIN, 410),
    ("/registry/origins?generation=1", {**ADMIN, **CSV}, 410),
    ("/registry/addresses/9.10.3?generation=1", ADMIN, 410),
]


@pytest.mark.parametrize(("target", "headers", "status"), HISTORY_ANSWERS)
def test_openapi_core_validates_changes_and_generations_gone(
    served_history: Gunicorn,
    history_published: OpenAPI,
    target: str,
    headers: dict[str, str],
    status: int,
):
    """Changes of every kind, their exports, and the 404s and 410s of a generation never
    produced or no longer kept, checked by openapi-core."""
    wait_until_no_export(served_history)  # the one export slot is free
    response = requests.get(served_history.base + target, headers=headers, timeout=10)
    assert response.status_code == status, response.text
    validated(history_published, response)
    if status == 200:
        # Something to validate: changes or generations, not an empty list.
        if response.headers["Content-Type"].startswith("application/json"):
            body = response.json()
            assert body.get("changes", body.get("generations")), body
        else:
            assert response.content.count(b"\n") > 1, response.text


def test_openapi_core_validates_the_503_past_the_export_limit(
    served_history: Gunicorn, history_published: OpenAPI
):
    """With the instance's one export slot held by a client that does not read, an export of
    origins or of changes is the 503 the document describes; the held export then ends whole."""
    wait_until_no_export(served_history)
    held = SlowClient(served_history.port, "/registry/origins", {**ADMIN, **NDJSON})
    try:
        assert held.status == 200
        for target in ("/registry/origins", "/registry/changes"):
            for accept in (NDJSON, CSV):
                response = requests.get(
                    served_history.base + target, headers={**ADMIN, **accept}, timeout=10
                )
                assert response.status_code == 503, response.text
                assert "REGISTRY_MAX_EXPORTS" in response.json()["message"]
                validated(history_published, response)
        body = held.read_rest()
    finally:
        held.sock.close()
    assert body.complete and len(body.lines()) == int(held.head["registry-total"])
    wait_until_no_export(served_history)
