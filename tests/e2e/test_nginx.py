"""deploy/nginx.conf in front of gunicorn, as deployed: every answer through nginx under /v1/
equals the direct one (status, JSON body, headers, Link with the /v1 prefix), and what nginx or
gunicorn answer themselves is JSON too."""

from __future__ import annotations

import gzip
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from devtools.production_stack import (
    Gunicorn,
    Nginx,
    free_port,
    start_gunicorn,
    start_nginx,
)
from tests.conftest import TEST_SECRET, dead_port, make_token
from tests.e2e.raw_http import Answer, raw_request, request

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("nginx_installed")]


HARBOUR_NEWS = "3b2f1e0d-9c8b-4a7f-8e6d-5c4b3a291807"
ADMIN = {"Authorization": f"Bearer {make_token()}"}
VIEWER = {"Authorization": f"Bearer {make_token(roles=['viewer'])}"}
COOKIE = {"Cookie": f"access_token={make_token()}"}
BAD_TOKEN = {"Authorization": "Bearer not-a-token"}
# Headers whose values must be the same both ways.
SAME_HEADERS = ("Content-Type", "Allow", "Retry-After", "WWW-Authenticate", "Cache-Control")


@dataclass
class Stack:
    """gunicorn, and nginx in front of it."""

    gunicorn: Gunicorn
    nginx: Nginx

    def direct(self, target: str, **kwargs: Any) -> Answer:
        """Ask gunicorn itself."""
        return request(self.gunicorn.port, target, **kwargs)

    def proxied(self, target: str, **kwargs: Any) -> Answer:
        """Ask through nginx, under /v1."""
        return request(self.nginx.port, "/v1" + target, **kwargs)


@pytest.fixture(scope="module")
def stack(example_db: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """gunicorn over the worked example with nginx (deploy/nginx.conf) in front."""
    folder = tmp_path_factory.mktemp("nginx")
    server = start_gunicorn(
        {"DATABASE_URL": example_db, "REGISTRY_JWT_SECRET": TEST_SECRET},
        folder / "gunicorn.log",
        workers=2,
    )
    try:
        proxy = start_nginx(folder / "nginx", server.port, access_log=True)
    except BaseException:
        server.stop()
        raise
    yield Stack(server, proxy)
    proxy.stop()
    server.stop()


def without_generated_at(answer: Answer) -> Any:
    """The JSON body with its moving parts left out: generated_at, and the server the
    OpenAPI document names (the root each request reached; checked on its own below)."""
    body = answer.json()
    if isinstance(body, dict):
        body.pop("generated_at", None)
        body.pop("servers", None)
    return body


CASES = [
    ("GET", "/summary", {}),
    ("HEAD", "/summary", {}),
    ("GET", "/registry/summary", ADMIN),
    ("GET", "/registry/origins", ADMIN),
    ("GET", "/registry/origins?limit=1&page=2", ADMIN),
    ("GET", "/registry/origins?governance_state=governed&has_presentations=false", ADMIN),
    ("GET", "/registry/origins?search=t%C3%89L%C3%89", ADMIN),
    ("GET", "/registry/origins?search=50%25&limit=1", ADMIN),
    ("GET", "/registry/origins?page=99&limit=2", ADMIN),
    ("GET", f"/registry/origins/{HARBOUR_NEWS}", ADMIN),
    ("GET", f"/registry/origins/svc%3Aorigin%3A{HARBOUR_NEWS}", ADMIN),
    ("GET", f"/registry/origins/svc:origin:{HARBOUR_NEWS}", COOKIE),
    ("GET", "/registry/addresses/9.10.3", ADMIN),
    ("GET", "/registry/addresses/9.9.9", ADMIN),
    ("GET", "/registry/origins/nope", ADMIN),
    ("GET", "/registry/origins?limit=0", ADMIN),
    ("GET", "/registry/origins?bogus=1&limit=x", ADMIN),
    ("GET", "/summary?x=1", {}),
    ("GET", "/registry/summary", {}),
    ("GET", "/registry/summary", BAD_TOKEN),
    ("GET", "/registry/summary", VIEWER),
    ("GET", "/registry/nope", {}),
    ("GET", "/registry/nope", ADMIN),
    ("GET", "/nope", {}),
    ("GET", "/./summary", {}),
    ("GET", "/registry//origins", ADMIN),
    ("GET", "/registry/../summary", {}),
    ("POST", "/summary", {}),
    ("DELETE", "/registry/origins", ADMIN),
    ("OPTIONS", "/summary", {}),
    ("GET", "/openapi.json", {}),
    ("GET", "/healthz", {}),
    ("GET", "/readyz", {}),
]


@pytest.mark.parametrize(("method", "target", "headers"), CASES)
def test_answers_through_nginx_equal_the_direct_ones(
    stack: Stack, method: str, target: str, headers: dict[str, str]
):
    """Status, body (but generated_at), the headers that matter, and Link under /v1."""
    headers = {**headers, "X-Request-ID": "same-for-both"}
    direct = stack.direct(target, method=method, headers=headers)
    proxied = stack.proxied(target, method=method, headers=headers)
    assert proxied.status == direct.status
    if method == "HEAD":
        assert proxied.body == direct.body == b""
    else:
        assert without_generated_at(proxied) == without_generated_at(direct)
    for name in SAME_HEADERS:
        assert proxied.header(name) == direct.header(name), name
    assert proxied.header("X-Request-ID") == direct.header("X-Request-ID") == "same-for-both"
    link = direct.header("Link")
    if link is None:
        assert proxied.header("Link") is None
    else:
        assert "</registry/origins?" in link
        assert proxied.header("Link") == link.replace("</registry/", "</v1/registry/")


def test_the_openapi_server_is_the_root_each_client_reached(stack: Stack):
    """Through nginx, the document names the /v1 root with nginx's port and the forwarded
    scheme; direct, gunicorn's own root."""
    proxied = stack.proxied("/openapi.json").json()["servers"]
    assert [server["url"] for server in proxied] == [stack.nginx.base]
    direct = stack.direct("/openapi.json").json()["servers"]
    assert [server["url"] for server in direct] == [stack.gunicorn.base]
    # nginx says which scheme the client used; gunicorn trusts it from nginx's address
    https = stack.direct("/openapi.json", headers={"X-Forwarded-Proto": "https"}).json()
    assert https["servers"][0]["url"] == f"https://127.0.0.1:{stack.gunicorn.port}"


def test_the_openapi_server_ignores_forwarding_from_untrusted_peers(
    example_db: str, tmp_path: Path
):
    """A peer outside forwarded_allow_ips cannot choose the scheme or the prefix."""
    server = start_gunicorn(
        {
            "DATABASE_URL": example_db,
            "REGISTRY_JWT_SECRET": TEST_SECRET,
            "REGISTRY_FORWARDED_ALLOW_IPS": "192.0.2.1",
        },
        tmp_path / "gunicorn.log",
        workers=1,
    )
    try:
        forged = {"X-Forwarded-Proto": "https", "SCRIPT_NAME": "/v1"}
        answer = request(server.port, "/openapi.json", headers=forged)
        assert answer.status == 200
        assert [entry["url"] for entry in answer.json()["servers"]] == [server.base]
    finally:
        server.stop()


def test_links_through_nginx_lead_to_the_next_page(stack: Stack):
    """Following rel=next through nginx walks the listing like the direct sweep does."""
    seen = []
    target = "/v1/registry/origins?limit=1"
    while target:
        answer = request(stack.nginx.port, target, headers=ADMIN)
        assert answer.status == 200
        seen += [item["origin"]["id"] for item in answer.json()["origins"]]
        links = dict(
            (part.split(";")[1].strip(), part.split(";")[0].strip(" <>"))
            for part in (answer.header("Link") or "").split(", ")
        )
        target = links.get('rel="next"', "")
    direct = stack.direct("/registry/origins", headers=ADMIN).json()["origins"]
    assert seen == [item["origin"]["id"] for item in direct]


def test_json_is_gzipped_for_clients_that_ask(stack: Stack):
    """gzip for JSON when asked (and Vary says so); the same bytes once decompressed."""
    plain = stack.proxied("/openapi.json")
    zipped = stack.proxied("/openapi.json", headers={"Accept-Encoding": "gzip"})
    assert zipped.status == 200
    assert zipped.header("Content-Encoding") == "gzip"
    assert "Accept-Encoding" in (zipped.header("Vary") or "")
    assert gzip.decompress(zipped.body) == plain.body
    assert len(zipped.body) < len(plain.body) / 3


def test_request_id_is_generated_passed_on_and_logged(stack: Stack):
    """No X-Request-ID: nginx makes one; the app returns it and logs it. A bad one is replaced."""
    answer = stack.proxied("/summary")
    request_id = answer.header("X-Request-ID")
    assert request_id and len(request_id) == 32
    # Both logs are written after the answer has gone, so the line may land a moment later.
    assert eventually(lambda: request_id in stack.gunicorn.output())
    assert eventually(lambda: request_id in (stack.nginx.prefix / "access.log").read_text())
    for bad in ("x" * 200, "eyJhbGciOiJIUzI1NiJ9.e30.sig", "two words"):
        replaced = stack.proxied("/summary", headers={"X-Request-ID": bad}).header("X-Request-ID")
        assert replaced and replaced != bad


def eventually(condition: Callable[[], bool], patience_s: float = 30.0) -> bool:
    """Whether condition holds now or within a generous while (for lines logged after answers)."""
    deadline = time.monotonic() + patience_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def assert_json_error(answer: Answer, status: int, error: str) -> None:
    """nginx's (or gunicorn's) own refusal, as the API's JSON error body."""
    assert answer.status == status
    assert answer.header("Content-Type") == "application/json"
    assert answer.json() == {"success": False, "error": error}
    assert answer.header("X-Request-ID")


def test_outside_v1_is_a_json_404(stack: Stack):
    """The API lives under /v1/ only; nginx answers everything else itself, as JSON."""
    for target in ("/", "/summary", "/v1", "/v2/summary", "/index.html"):
        assert_json_error(request(stack.nginx.port, target), 404, "Not Found")


def test_a_path_that_only_normalises_into_v1_is_refused(stack: Stack):
    """/x/../v1/summary reaches /v1/ after normalising, but not as sent: 400, not gunicorn's 500."""
    answer = request(stack.nginx.port, "/x/../v1/summary")
    assert_json_error(answer, 400, "Bad Request")


def test_a_request_line_over_16_kb_is_a_json_414(stack: Stack):
    """nginx refuses it before gunicorn would (limit_request_line 16384), with JSON."""
    answer = request(stack.nginx.port, "/v1/registry/origins?search=" + "a" * 17000, headers=ADMIN)
    assert_json_error(answer, 414, "URI Too Long")
    direct = request(stack.gunicorn.port, "/registry/origins?search=" + "a" * 17000)
    assert direct.status == 414
    assert direct.json() == {"success": False, "error": "URI Too Long"}


def test_a_hundred_prefixed_ids_fit_in_one_request_line(stack: Stack):
    """docs/api.md, Requests: request lines past 8 KiB, direct and through nginx: 100
    prefixed ids percent-encoded as a client may send them, padded past 8 KiB with a repeat."""
    ids = [HARBOUR_NEWS, *(f"{number:08x}-0000-4000-8000-000000000000" for number in range(99))]
    value = "%2C".join(f"svc%3Aorigin%3A{uuid}" for uuid in ids)
    # The same ids again, written bare: duplicates count once, and the line passes 8 KiB.
    value += "%2C" + "%2C".join(ids)
    for port, target in (
        (stack.gunicorn.port, "/registry/origins?id=" + value),
        (stack.nginx.port, "/v1/registry/origins?id=" + value),
    ):
        assert len(f"GET {target} HTTP/1.1") > 8192
        answer = request(port, target, headers=ADMIN)
        assert answer.status == 200, (port, answer.status, answer.body[:200])
        body = answer.json()
        assert body["page"]["total"] == 1
        assert body["origins"][0]["origin"]["id"] == f"svc:origin:{HARBOUR_NEWS}"
        assert len(body["filters_applied"]["id"]) == 100


def test_a_header_field_over_16_kb_is_a_json_400(stack: Stack):
    """A huge cookie: nginx's own 400, as JSON."""
    answer = stack.proxied("/summary", headers={"Cookie": "c=" + "x" * 17000})
    assert_json_error(answer, 400, "Bad Request")


def test_too_many_header_fields_is_a_json_431(stack: Stack):
    """More fields than gunicorn's limit_request_fields: gunicorn's HTML 431 becomes JSON."""
    headers = {f"X-Filler-{number}": "1" for number in range(120)}
    direct = stack.direct("/summary", headers=headers)
    assert direct.status == 431
    assert direct.header("Content-Type") == "application/json"
    assert_json_error(
        stack.proxied("/summary", headers=headers), 431, "Request Header Fields Too Large"
    )


@pytest.mark.parametrize(
    "target",
    [b"/summary?x=\xc3\xa9", b"/registry/origins?search=t\xc3\xa9l\xc3\xa9", b"/summ\xffary"],
)
def test_a_raw_non_ascii_request_target_is_a_json_400(stack: Stack, target: bytes):
    """Raw bytes past ASCII in the target: JSON through nginx and direct, nothing echoed."""
    proxied = raw_request(stack.nginx.port, b"GET /v1" + target + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert_json_error(proxied, 400, "Bad Request")
    direct = raw_request(stack.gunicorn.port, b"GET " + target + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert direct.status == 400
    assert direct.header("Content-Type") == "application/json"
    assert direct.json() == {"success": False, "error": "Bad Request"}


def test_gunicorn_refusals_are_json_direct(stack: Stack):
    """What gunicorn refuses before the app sees it is the API's JSON, with no echo."""
    answer = raw_request(stack.gunicorn.port, b"GET /summary HTTP/9.9\r\nHost: x\r\n\r\n")
    assert answer.status == 400
    assert answer.json() == {"success": False, "error": "Bad Request"}
    assert b"9.9" not in answer.body


def test_the_largest_valid_listing_passes_through_nginx(stack: Stack):
    """Every filter at its longest (search and network_id at 256 four-byte characters, 100
    prefixed ids) and every facet: a request line near 12 KB and a Link header of over 32 KB,
    which nginx must pass on rather than answer 502."""
    longest = "%F0%9F%93%BA" * 256
    ids = ",".join(f"svc:origin:{number:08x}-0000-4000-8000-000000000000" for number in range(100))
    facets = "governance_state,allocation_state,publication_status,transport,has_presentations"
    query = (
        f"governance_state=ungoverned&allocation_state=unallocated&publication_status=published"
        f"&transport=iptv&has_presentations=false&station_id=2147483647&network_id={longest}"
        f"&search={longest}&id={ids}&facet={facets},network_id,station_id&facet_size=100"
        f"&page=2147483647&limit=200"
    )
    proxied = stack.proxied(f"/registry/origins?{query}", headers=ADMIN)
    direct = stack.direct(f"/registry/origins?{query}", headers=ADMIN)
    assert direct.status == 200
    assert len(direct.header("Link") or "") > 32 * 1024
    assert proxied.status == 200, proxied.body[:200]
    assert proxied.header("Link") == (direct.header("Link") or "").replace(
        "</registry/", "</v1/registry/"
    )


def test_a_request_body_over_16_kb_is_a_json_413(stack: Stack):
    """The API takes no bodies; a big one stops at nginx."""
    answer = stack.proxied("/summary", method="POST", body=b"x" * 20000)
    assert_json_error(answer, 413, "Content Too Large")


def test_gunicorn_down_is_a_json_503_with_retry_after(tmp_path: Path):
    """Nothing listens upstream: no host can answer, so the API's 503, as JSON, to retry."""
    proxy = start_nginx(tmp_path / "nginx", free_port())
    try:
        for path in ("/v1/summary", "/v1/registry/origins"):
            answer = request(proxy.port, path)
            assert_json_error(answer, 503, "Service Unavailable")
            assert answer.header("Retry-After") == "2"
            assert answer.header("Cache-Control") == "no-store"
            assert answer.header("X-Request-ID")
    finally:
        proxy.stop()


def test_the_app_503_passes_through_with_retry_after(tmp_path: Path):
    """Database unreachable: the app's 503 (body, Retry-After) reaches the client unchanged."""
    dead = f"postgresql://postgres@127.0.0.1:{dead_port()}/registry"
    server = start_gunicorn(
        {"DATABASE_URL": dead, "REGISTRY_JWT_SECRET": TEST_SECRET}, tmp_path / "g.log", workers=1
    )
    try:
        proxy = start_nginx(tmp_path / "nginx", server.port)
        try:
            stack = Stack(server, proxy)
            for target in ("/summary", "/readyz"):
                direct, proxied = stack.direct(target), stack.proxied(target)
                assert proxied.status == direct.status == 503
                assert proxied.json() == direct.json()
                assert proxied.header("Retry-After") == direct.header("Retry-After") == "2"
        finally:
            proxy.stop()
    finally:
        server.stop()


@pytest.mark.parametrize("accept", ["application/x-ndjson", "text/csv"])
def test_exports_through_nginx_equal_the_direct_ones(stack: Stack, accept: str):
    """Streamed exports pass through nginx unchanged (gzipped only when asked), and a 406 is
    the app's JSON body, not one of nginx's pages."""
    headers = {**ADMIN, "Accept": accept}
    direct = stack.direct("/registry/origins?transport=iptv", headers=headers)
    proxied = stack.proxied("/registry/origins?transport=iptv", headers=headers)
    assert direct.status == proxied.status == 200
    assert proxied.body == direct.body
    assert direct.body.count(b"\n") == 2 + (accept == "text/csv")
    names = ("Content-Type", "Registry-Generation", "Registry-Total", "ETag", "Vary")
    for name in (*names, "Cache-Control"):
        assert proxied.header(name) == direct.header(name), name
    assert direct.header("Registry-Total") == "2"
    zipped = stack.proxied(
        "/registry/origins?transport=iptv", headers={**headers, "Accept-Encoding": "gzip"}
    )
    assert zipped.header("Content-Encoding") == "gzip"
    assert gzip.decompress(zipped.body) == direct.body
    refused = stack.proxied("/registry/origins", headers={**ADMIN, "Accept": "text/html"})
    assert refused.status == 406
    assert refused.json() == {"success": False, "error": "Not Acceptable"}


@pytest.mark.parametrize(
    "target", ["/registry/origins?limit=2", f"/registry/origins/svc:origin:{HARBOUR_NEWS}"]
)
def test_if_none_match_gets_304_over_real_http_direct_and_through_nginx(stack: Stack, target: str):
    """A listing and a lookup revalidated with their ETag: 304 with no body and the same
    generation headers, from gunicorn and through nginx; a stale tag gets the 200."""
    for fetch in (stack.direct, stack.proxied):
        first = fetch(target, headers=ADMIN)
        assert first.status == 200
        tag = first.header("ETag")
        assert tag is not None and tag.startswith('W/"')
        again = fetch(target, headers={**ADMIN, "If-None-Match": tag})
        assert again.status == 304
        assert again.body == b""
        assert again.header("ETag") == tag
        assert again.header("Registry-Generation") == first.header("Registry-Generation")
        stale = fetch(target, headers={**ADMIN, "If-None-Match": 'W/"0-stale"'})
        assert stale.status == 200


def test_nginx_is_never_taken_for_a_foreign_server_on_its_port(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The port found free is taken by another listener before nginx binds it: nginx fails
    to bind, another port is tried, and the nginx returned is one that nginx itself holds."""
    import socket

    from devtools import production_stack

    foreign = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    foreign.bind(("127.0.0.1", 0))
    foreign.listen(8)
    taken = foreign.getsockname()[1]
    ports = iter([taken])
    real_free_port = production_stack.free_port
    monkeypatch.setattr(
        production_stack, "free_port", lambda: next(ports, None) or real_free_port()
    )
    try:
        proxy = production_stack.start_nginx(tmp_path / "nginx", dead_port())
        try:
            assert proxy.port != taken
            assert production_stack._holds_listener(proxy.process.pid, proxy.port)
            assert request(proxy.port, "/elsewhere").json() == {
                "success": False,
                "error": "Not Found",
            }
        finally:
            proxy.stop()
    finally:
        foreign.close()
