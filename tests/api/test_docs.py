"""GET /docs over HTTP: the page and its packaged assets with the page's headers, URLs under the
deployment's prefix, nothing from outside; and around it the API's rules (JSON 404, JSON 405
with Allow, JSON 400 for a query), with no other endpoint's answer changed. The page itself,
driven in a real browser, is tested in tests/e2e/test_docs_page.py."""

from __future__ import annotations

import re
from importlib.resources import files
from typing import Any

import pytest

from registry.api.docs import ASSETS
from tests.conftest import make_token

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
NOT_FOUND = {"success": False, "error": "Not Found"}
METHOD_NOT_ALLOWED = {"success": False, "error": "Method Not Allowed"}
PAGE_HEADERS = ("Content-Security-Policy", "X-Content-Type-Options", "Referrer-Policy")


def fetch(client: Any, target: str, method: str = "GET", **kwargs: Any) -> Any:
    """One request, its body read and the response closed (a file stays open until then)."""
    answer = client.open(target, method=method, **kwargs)
    answer.get_data()
    answer.close()
    return answer


def page_urls(html: str) -> list[str]:
    """Every URL the page refers to (src, href and the document's data attribute)."""
    return re.findall(r'(?:src|href|data-openapi-url)="([^"]*)"', html)


def test_docs_is_a_public_html_page_with_a_strict_policy(client: Any):
    """No token needed; HTML; only its own assets allowed; nosniff."""
    answer = fetch(client, "/docs")
    assert answer.status_code == 200
    assert answer.mimetype == "text/html"
    assert answer.headers["Content-Security-Policy"] == CSP
    assert answer.headers["X-Content-Type-Options"] == "nosniff"
    assert answer.headers["Referrer-Policy"] == "no-referrer"
    assert answer.headers["Cache-Control"] == "no-cache"


def test_the_page_refers_only_to_the_service_itself(client: Any):
    """Its assets and the document, by path from the server root; no inline script."""
    html = fetch(client, "/docs").get_data(as_text=True)
    urls = page_urls(html)
    assert "/openapi.json" in urls
    assert "/docs/swagger-ui-bundle.js" in urls
    assert "/docs/init.js" in urls
    assert all(url.startswith("/") and not url.startswith("//") for url in urls), urls
    assert re.findall(r"<script\b[^>]*>", html) == [
        '<script src="/docs/swagger-ui-bundle.js">',
        '<script src="/docs/init.js">',
    ]
    assert "http:" not in html and "https:" not in html


def test_behind_a_prefix_every_url_carries_it(client: Any):
    """nginx serves the API at /v1 (SCRIPT_NAME): the page asks for /v1/openapi.json."""
    html = fetch(client, "/docs", environ_overrides={"SCRIPT_NAME": "/v1"}).get_data(as_text=True)
    urls = page_urls(html)
    assert "/v1/openapi.json" in urls
    assert all(url.startswith("/v1/docs/") or url == "/v1/openapi.json" for url in urls), urls


@pytest.mark.parametrize("name", sorted(ASSETS))
def test_each_asset_is_served_from_the_packages(client: Any, name: str):
    """The exact bytes the packages ship, with the page's headers and a cache lifetime."""
    answer = fetch(client, f"/docs/{name}")
    assert answer.status_code == 200
    assert answer.get_data() == (ASSETS[name] / name).read_bytes()
    assert answer.headers["X-Content-Type-Options"] == "nosniff"
    assert answer.headers["Content-Security-Policy"] == CSP
    assert answer.headers["Cache-Control"] == "public, max-age=3600"
    expected = {".js": "text/javascript", ".css": "text/css", ".png": "image/png"}
    assert answer.mimetype == expected[name[name.rindex(".") :]]


def test_swagger_ui_comes_from_flask_swagger_ui():
    """The bundle is the package's own file, not a copy kept here."""
    bundle = files("flask_swagger_ui") / "dist" / "swagger-ui-bundle.js"
    assert (ASSETS["swagger-ui-bundle.js"] / "swagger-ui-bundle.js").read_bytes() == (
        bundle.read_bytes()
    )


def test_the_start_up_script_keeps_the_token_in_memory_and_calls_nobody():
    """No persisted authorization, no validator badge, no configuration from the URL."""
    script = (ASSETS["init.js"] / "init.js").read_text()
    assert "persistAuthorization: false" in script
    assert "validatorUrl: null" in script
    assert "queryConfigEnabled: false" in script
    assert "http" not in script.replace('getAttribute("data-openapi-url")', "")


def test_head_answers_like_get_without_a_body(client: Any):
    """HEAD /docs and HEAD of an asset: the same status and headers, no body."""
    for target in ("/docs", "/docs/swagger-ui.css"):
        get, head = fetch(client, target), fetch(client, target, "HEAD")
        assert head.status_code == 200
        assert head.get_data() == b""
        assert head.headers["Content-Type"] == get.headers["Content-Type"]
        assert head.headers["Content-Security-Policy"] == CSP


@pytest.mark.parametrize(
    "target",
    [
        "/docs/",
        "/docs/nope.js",
        "/docs/index.html",
        "/docs/oauth2-redirect.html",
        "/docs/swagger-ui.js",
        "/docs/swagger-ui-standalone-preset.js",
        "/docs/LICENSE",
        "/docs/registry_docs.html",
        "/docs/..%2fdocs.py",
        "/docs/%2e%2e/%2e%2e/app.py",
        "/docs/a/init.js",
        "/docs/init.js/",
        "/docsx",
    ],
)
def test_anything_else_under_docs_is_the_json_404(client: Any, target: str):
    """Only the listed assets exist; every other path is the API's JSON 404, unchanged."""
    answer = fetch(client, target)
    assert answer.status_code == 404
    assert answer.mimetype == "application/json"
    assert answer.get_json() == NOT_FOUND
    for name in PAGE_HEADERS:
        assert name not in answer.headers


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
@pytest.mark.parametrize("target", ["/docs", "/docs/init.js"])
def test_only_get_and_head(client: Any, method: str, target: str):
    """Any other method is the JSON 405 with Allow."""
    answer = fetch(client, target, method)
    assert answer.status_code == 405
    assert answer.headers["Allow"] == "GET, HEAD"
    assert answer.get_json() == METHOD_NOT_ALLOWED


@pytest.mark.parametrize(
    "target", ["/docs?url=https://elsewhere.example/x.json", "/docs/init.js?v=1"]
)
def test_a_query_is_refused_as_everywhere(client: Any, target: str):
    """No parameters: the page takes its configuration from nowhere but itself."""
    answer = fetch(client, target)
    assert answer.status_code == 400
    assert answer.get_json()["success"] is False


def test_no_other_answer_gains_the_page_headers(client: Any):
    """The page's headers are the page's: the API's answers are as they were."""
    admin = {"Authorization": f"Bearer {make_token()}"}
    for target, headers in (
        ("/summary", {}),
        ("/openapi.json", {}),
        ("/healthz", {}),
        ("/registry/summary", admin),
        ("/registry/origins?limit=1", admin),
        ("/registry/summary", {}),
        ("/nope", {}),
    ):
        answer = fetch(client, target, headers=headers)
        assert answer.mimetype == "application/json", target
        for name in PAGE_HEADERS:
            assert name not in answer.headers, (target, name)
