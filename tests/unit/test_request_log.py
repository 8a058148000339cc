"""The request log and X-Request-ID, without a database: one JSON line per request on standard
error, the id taken or made and returned, no token or cookie ever, tracebacks server-side."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from flask import Flask

from registry.api.request_log import loggable_query, request_id_from
from tests.conftest import app_config, make_token

LINE_FIELDS = {
    "time",
    "level",
    "logger",
    "request_id",
    "method",
    "path",
    "query",
    "status",
    "duration_ms",
    "bytes",
}


def dead_database() -> str:
    """A database address with nothing listening: these tests never reach a database."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"postgresql://postgres@127.0.0.1:{port}/none"


@pytest.fixture(scope="module")
def app() -> Iterator[Flask]:
    """The app with a route that fails unexpectedly (the database is never used)."""
    from app import create_app

    app = create_app(app_config(dead_database()))

    def explode() -> Any:
        """Fail with something only the server log may show."""
        raise RuntimeError("internal detail hunter2")

    app.add_url_rule("/explode", view_func=explode)
    yield app
    app.extensions["registry_db"].close()


def log_lines(text: str) -> list[dict[str, Any]]:
    """The JSON lines among what was written to standard error."""
    return [orjson.loads(line) for line in text.splitlines() if line.startswith("{")]


def request_lines(text: str) -> list[dict[str, Any]]:
    """The per-request lines among them."""
    return [line for line in log_lines(text) if line["logger"] == "registry.requests"]


def test_one_json_line_per_request(app: Flask, capsys: pytest.CaptureFixture[str]):
    """Every field, with the status and the bytes really sent."""
    client = app.test_client()
    answers = [client.get("/healthz"), client.get("/openapi.json"), client.get("/nope")]
    for answer in answers:
        answer.get_data()
        answer.close()
    lines = request_lines(capsys.readouterr().err)
    assert [line["path"] for line in lines] == ["/healthz", "/openapi.json", "/nope"]
    for line, answer in zip(lines, answers, strict=True):
        assert set(line) == LINE_FIELDS
        assert line["level"] == "info"
        assert line["method"] == "GET"
        assert line["status"] == answer.status_code
        assert line["bytes"] == len(answer.get_data())
        assert line["request_id"] == answer.headers["X-Request-ID"]
        assert isinstance(line["duration_ms"], int | float) and line["duration_ms"] >= 0
        assert line["time"].endswith("Z")


def test_head_is_logged_with_no_bytes(app: Flask, capsys: pytest.CaptureFixture[str]):
    """HEAD: the same status as GET, nothing sent."""
    app.test_client().head("/healthz").close()
    (line,) = request_lines(capsys.readouterr().err)
    assert (line["method"], line["status"], line["bytes"]) == ("HEAD", 200, 0)


@pytest.mark.parametrize(
    "given",
    ["abc-123", "7c9e6679-7425-40de-944b-e07fc1f90ae7", "a" * 128, "req:1/2@x=y+z_z.q"],
)
def test_a_good_request_id_is_kept(app: Flask, capsys: pytest.CaptureFixture[str], given: str):
    """The caller's X-Request-ID comes back and is the one logged."""
    answer = app.test_client().get("/healthz", headers={"X-Request-ID": given})
    answer.close()
    assert answer.headers["X-Request-ID"] == given
    assert request_lines(capsys.readouterr().err)[0]["request_id"] == given


@pytest.mark.parametrize(
    "given", ["", "a" * 129, "two words", "-leading-dash", "eyJhbGciOiJIUzI1NiJ9", "é", "a\tb"]
)
def test_a_bad_request_id_is_replaced(app: Flask, given: str):
    """Anything else: a new random id (32 hex digits), never the caller's text."""
    answer = app.test_client().get("/healthz", headers={"X-Request-ID": given})
    answer.close()
    made = answer.headers["X-Request-ID"]
    assert made != given
    assert len(made) == 32
    int(made, 16)


def test_every_request_gets_its_own_id(app: Flask):
    """No X-Request-ID: a fresh one each time, returned in the answer."""
    client = app.test_client()
    ids = {client.get("/healthz").headers["X-Request-ID"] for _ in range(5)}
    assert len(ids) == 5


def test_no_token_or_cookie_is_ever_logged(app: Flask, capsys: pytest.CaptureFixture[str]):
    """Tokens in the header, the cookie, the query and even the path stay out of the log."""
    token = make_token()
    client = app.test_client()
    for path, headers in [
        ("/registry/nope", {"Authorization": f"Bearer {token}"}),
        ("/registry/nope", {"Cookie": f"access_token={token}; session=s3cr3t"}),
        (f"/registry/origins?access_token={token}&limit=5", {}),
        (f"/summary?{token}", {}),
        (f"/registry/origins/{token}", {"Authorization": "Bearer garbage-token-value"}),
        (f"/{token}", {}),
    ]:
        client.get(path, headers=headers).close()
    err = capsys.readouterr().err
    lines = request_lines(err)
    assert len(lines) == 6
    for secret in (token, *token.split("."), "s3cr3t", "garbage-token-value"):
        assert secret not in err
    assert lines[2]["query"] == "access_token=[redacted]&limit=5"
    assert lines[5]["path"] == "/[jwt]"


def test_query_keeps_the_api_parameters_only():
    """Filters, page and limit with their values; anything else by name only."""
    query = "governance_state=governed&search=t%C3%A9l%C3%A9&page=2&password=hunter2&limit=10"
    assert loggable_query(query) == (
        "governance_state=governed&search=télé&page=2&password=[redacted]&limit=10"
    )
    assert loggable_query("") == ""
    assert len(loggable_query("search=" + "x" * 5000)) < 200


def test_an_unexpected_error_logs_a_traceback_only_server_side(
    app: Flask, capsys: pytest.CaptureFixture[str]
):
    """500 with the documented body; the traceback goes to the log, tagged with the request id."""
    answer = app.test_client().get("/explode", headers={"X-Request-ID": "boom-1"})
    assert answer.status_code == 500
    assert answer.get_json() == {"success": False, "error": "Internal Server Error"}
    assert b"hunter2" not in answer.get_data()
    answer.close()
    lines = log_lines(capsys.readouterr().err)
    (error,) = [line for line in lines if line["logger"] == "registry.errors"]
    assert error["level"] == "error"
    assert error["request_id"] == "boom-1"
    assert "Traceback" in error["exception"]
    assert "hunter2" in error["exception"]
    assert [line["status"] for line in lines if line["logger"] == "registry.requests"] == [500]


def test_request_id_rule():
    """The rule nginx's map applies too."""
    assert request_id_from("abc") == "abc"
    assert request_id_from(None) != request_id_from(None)
    assert request_id_from("eyJ0eXAi") != "eyJ0eXAi"
