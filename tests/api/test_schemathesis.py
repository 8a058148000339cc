"""Clients this project did not write, against the real service: gunicorn on a loopback port
serving its own /openapi.json, used as published (no patching), with an admin token.
Schemathesis runs every check on positive and negative data; openapi-core validates real
answers of every kind. Neither may find anything."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
import requests
from openapi_core import Config, OpenAPI
from openapi_core.contrib.requests import RequestsOpenAPIRequest, RequestsOpenAPIResponse

from devtools.production_stack import Gunicorn, start_gunicorn
from tests.conftest import TEST_SECRET, make_token

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
]


def csv_text(value: bytes, **parameters: str) -> str:
    """A text/csv body as the text its charset says."""
    return value.decode(parameters.get("charset", "utf-8"))


@pytest.fixture(scope="module")
def published(served_example: str) -> OpenAPI:
    """openapi-core over the document exactly as the service publishes it, told how to read
    the two export media types it has no decoder for (it would hand their raw bytes to the
    schema): CSV is text, and an NDJSON line is JSON."""
    config = Config(
        extra_media_type_deserializers={"text/csv": csv_text, "application/x-ndjson": orjson.loads}
    )
    document = requests.get(f"{served_example}/openapi.json", timeout=10).json()
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
