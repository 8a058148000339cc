"""Answers of `GET /registry/changes?since=m` (docs/api.md, "Changes between generations")
checked by openapi-core against the OpenAPI document the service serves, as published: a
client library's view of them, not this project's own checker (tests/api/api_support.py).

Every kind of answer since m: a JSON page (since the oldest since, since n - 1, since another
kept generation, since n itself, filtered, pinned), the NDJSON and CSV exports, the 400 of a
malformed since or one newer than the generation answered, the 404 of a since never produced
and the 410 of one older than the oldest since, each as a page and as an export. The request
is checked too: a since the service answers is one the document admits, and a malformed one
is one it refuses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import pytest
from openapi_core import Config, OpenAPI
from openapi_core.contrib.werkzeug import WerkzeugOpenAPIRequest, WerkzeugOpenAPIResponse

from tests.api.since_support import NDJSON, SinceRegistry, new_registry

CSV = {"Accept": "text/csv"}
ORIGINS = 12

# (query, extra headers, status): the generations are 1 to 4, change sets 3 and 4 kept, so
# the oldest since is 2; graphs 3 and 4 are kept.
ANSWERS: list[tuple[str, dict[str, str], int]] = [
    ("since=2", {}, 200),  # the oldest since: a range of places (pos)
    ("since=3", {}, 200),  # n - 1
    ("since=4", {}, 200),  # n itself: no changes
    ("since=2&generation=3", {}, 200),
    ("since=3&kind=changed&block=origin&limit=2&page=2", {}, 200),
    ("since=2&kind=removed", {}, 200),
    ("since=2&page=99", {}, 200),  # past the last page
    ("since=2", NDJSON, 200),
    ("since=3&kind=added", NDJSON, 200),
    ("since=2", CSV, 200),
    ("since=4&generation=3", {}, 400),  # newer than the generation answered
    ("since=4&generation=3", NDJSON, 400),
    ("since=99", {}, 404),
    ("since=9223372036854775807", {}, 404),
    ("since=99", NDJSON, 404),
    ("since=99", CSV, 404),
    ("since=1", {}, 410),
    ("since=1&generation=3", {}, 410),
    ("since=1", NDJSON, 410),
    ("since=1", CSV, 410),
]
# Malformed: the service's 400, and a request the document does not admit either.
MALFORMED = ["since=0", "since=-1", "since=x", "since=1.0", "since=9223372036854775808"]


def csv_text(value: bytes, **parameters: str) -> str:
    """A text/csv body as the text its charset says."""
    return value.decode(parameters.get("charset", "utf-8"))


@pytest.fixture(scope="module")
def registry(database_factory: Callable[[], str]) -> Iterator[SinceRegistry]:
    """Four generations, 2 graphs and 2 change sets kept: the oldest since is 2."""
    for made in new_registry(database_factory, keep_generations=2, keep_changes=2):
        for version in range(1, 5):
            assert made.load(version, ORIGINS) == version
        assert made.oldest_since() == 2
        yield made


@pytest.fixture(scope="module")
def published(registry: SinceRegistry) -> OpenAPI:
    """openapi-core over the document exactly as the service serves it (its server the root
    the request reached), told how to read the two export media types it has no decoder for:
    CSV is text, and an NDJSON line is JSON."""
    response = registry.get("/openapi.json")
    assert response.status_code == 200
    config = Config(
        extra_media_type_deserializers={"text/csv": csv_text, "application/x-ndjson": orjson.loads}
    )
    return OpenAPI.from_dict(response.get_json(), config=config)


@dataclass
class NdjsonLine:
    """One line of an NDJSON answer as a response of its own: the document's schema for
    application/x-ndjson is that of each line (one change per line)."""

    data: bytes
    status_code: int
    content_type: str
    headers: Any


def validate(openapi: OpenAPI, response: Any) -> None:
    """Raise unless openapi-core finds the response conforms to the document."""
    request = WerkzeugOpenAPIRequest(response.request)
    answer = WerkzeugOpenAPIResponse(response)
    if answer.content_type == "application/x-ndjson":
        lines = response.get_data().split(b"\n")
        assert lines[-1] == b""
        for line in lines[:-1]:
            openapi.validate_response(
                request, NdjsonLine(line, answer.status_code, answer.content_type, answer.headers)
            )
    else:
        openapi.validate_response(request, answer)


@pytest.mark.parametrize(("query", "headers", "status"), ANSWERS)
def test_openapi_core_validates_the_answers_since_m(
    registry: SinceRegistry,
    published: OpenAPI,
    query: str,
    headers: dict[str, str],
    status: int,
) -> None:
    """Body, headers and status of each answer, and the request that got it."""
    response = registry.get(f"/registry/changes?{query}", headers)
    assert response.status_code == status, response.get_data()
    validate(published, response)
    published.validate_request(WerkzeugOpenAPIRequest(response.request))
    if status != 200:
        return
    # Something to validate: changes in the answer, but where none are asked for.
    if response.mimetype == "application/json":
        body = response.get_json()
        assert body["since"] == int(query.split("&")[0].removeprefix("since="))
        assert body["changes"] or query in ("since=4", "since=2&page=99"), body
    else:  # a line at least, under the header in CSV
        assert response.get_data().count(b"\n") >= (2 if response.mimetype == "text/csv" else 1)


def test_the_answers_cover_each_since_error(registry: SinceRegistry) -> None:
    """The 400, 404 and 410 above are the ones docs/api.md names, with their details."""
    newer = registry.get("/registry/changes?since=4&generation=3").get_json()
    assert list(newer["details"]) == ["since"]
    assert registry.get("/registry/changes?since=99").get_json()["details"] == {
        "since": 99,
        "current": 4,
    }
    assert registry.get("/registry/changes?since=1").get_json() == {
        "success": False,
        "error": "Changes no longer available",
        "details": {"since": 1, "oldest_since": 2, "current": 4},
    }


@pytest.mark.parametrize("query", MALFORMED)
def test_a_malformed_since_is_refused_by_the_service_and_by_the_document(
    registry: SinceRegistry, published: OpenAPI, query: str
) -> None:
    """The service's 400 conforms to the document, which refuses the request as well."""
    response = registry.get(f"/registry/changes?{query}")
    assert response.status_code == 400, response.get_data()
    assert list(response.get_json()["details"]) == ["since"]
    validate(published, response)
    with pytest.raises(Exception) as refused:
        published.validate_request(WerkzeugOpenAPIRequest(response.request))
    assert "since" in repr(refused.value) + repr(refused.value.__cause__), refused.value
