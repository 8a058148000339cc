"""Every error case of the HTTP surface (docs/api.md, Errors): 400, 404, 405, HEAD, 500 and 503.

Every response also goes through the OpenAPI document and must be JSON (api_support).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from flask import Flask

from tests.api.api_support import CheckedClient, GraphBuilder, OpenApiConformance
from tests.conftest import dead_port, load_records

NEWS = "3b2f1e0d-9c8b-4a7f-8e6d-5c4b3a291807"
INVALID = "Invalid request parameters"

# -- 400: bad query parameters -------------------------------------------------------------------

NOT_ONE_OF = "must be one of"
NOT_DECIMAL = "must be a whole number written with the digits 0-9"
OUT_OF_RANGE = "must be between"
EMPTY = "must not be empty"
REPEATED = "given more than once; give it once"
NUL = "must not contain NUL characters"
UNKNOWN = "unknown parameter"
NOT_FLAG = "must be true or false"
TOO_LONG = "must be at most 256 characters"

BAD_PARAMETERS = [
    # unknown names, names are case-sensitive
    ("foo=1", "foo", UNKNOWN),
    ("Limit=5", "Limit", UNKNOWN),
    ("offset=0", "offset", UNKNOWN),
    ("=x", "", UNKNOWN),
    ("se%00arch=a", "se\x00arch", UNKNOWN),
    # repeated names, even with the same value
    ("limit=1&limit=2", "limit", REPEATED),
    ("transport=iptv&transport=iptv", "transport", REPEATED),
    ("search=a&search=", "search", REPEATED),
    # empty values
    ("search=", "search", EMPTY),
    ("governance_state=", "governance_state", EMPTY),
    ("page=", "page", EMPTY),
    ("network_id", "network_id", EMPTY),
    # values outside the allowed sets
    ("governance_state=Governed", "governance_state", NOT_ONE_OF),
    ("allocation_state=yes", "allocation_state", NOT_ONE_OF),
    ("publication_status=null", "publication_status", NOT_ONE_OF),
    ("publication_status=unpublished", "publication_status", NOT_ONE_OF),
    ("transport=IPTV", "transport", NOT_ONE_OF),
    ("transport=satellite", "transport", NOT_ONE_OF),
    ("transport=iptv,ovp", "transport", NOT_ONE_OF),
    ("has_presentations=True", "has_presentations", NOT_FLAG),
    ("has_presentations=1", "has_presentations", NOT_FLAG),
    ("has_presentations=yes", "has_presentations", NOT_FLAG),
    # non-integers
    ("page=1.5", "page", NOT_DECIMAL),
    ("page=abc", "page", NOT_DECIMAL),
    ("page=-1", "page", NOT_DECIMAL),
    ("page=%2B1", "page", NOT_DECIMAL),
    ("page=%201", "page", NOT_DECIMAL),
    ("page=1%20", "page", NOT_DECIMAL),
    ("limit=1e3", "limit", NOT_DECIMAL),
    ("limit=0x10", "limit", NOT_DECIMAL),
    ("station_id=-1", "station_id", NOT_DECIMAL),
    ("station_id=nine", "station_id", NOT_DECIMAL),
    # non-ASCII digits: Arabic-Indic 3, fullwidth 5, Devanagari 2, superscript 2
    ("page=%D9%A3", "page", NOT_DECIMAL),
    ("limit=%EF%BC%95", "limit", NOT_DECIMAL),
    ("station_id=%E0%A5%A8", "station_id", NOT_DECIMAL),
    ("page=%C2%B2", "page", NOT_DECIMAL),
    # out of range, PostgreSQL's integer range included
    ("page=0", "page", OUT_OF_RANGE),
    ("limit=0", "limit", OUT_OF_RANGE),
    ("limit=201", "limit", OUT_OF_RANGE),
    ("limit=2147483647", "limit", OUT_OF_RANGE),
    ("page=2147483648", "page", OUT_OF_RANGE),
    ("station_id=2147483648", "station_id", OUT_OF_RANGE),
    ("page=99999999999999999999999999999999999999999", "page", OUT_OF_RANGE),
    ("station_id=" + "9" * 5000, "station_id", OUT_OF_RANGE),
    # NUL characters
    ("search=a%00b", "search", NUL),
    ("network_id=%00", "network_id", NUL),
    ("transport=iptv%00", "transport", NUL),
    ("page=1%00", "page", NUL),
    # free text over 256 characters (a character, not a byte, is the unit)
    ("search=" + "%2F" * 2700, "search", TOO_LONG),
    ("search=" + "a" * 257, "search", TOO_LONG),
    ("network_id=" + "%C3%A9" * 257, "network_id", TOO_LONG),
]


@pytest.mark.parametrize(
    ("query", "name", "why"), BAD_PARAMETERS, ids=[case[0][:40] for case in BAD_PARAMETERS]
)
def test_bad_parameter(api_admin: CheckedClient, query: str, name: str, why: str):
    """Each bad parameter is a 400 whose details name it, and only it, and say why."""
    body = api_admin.json(f"/registry/origins?{query}", status=400)
    assert body["success"] is False
    assert body["error"] == INVALID
    assert list(body["details"]) == [name]
    assert len(body["details"][name]) == 1 and body["details"][name][0].startswith(why)


@pytest.mark.parametrize("name", ["search", "network_id"])
def test_free_text_of_256_characters_is_accepted(api_admin: CheckedClient, name: str):
    """The cap is 256 characters, whatever their encoded size (4-byte ones here)."""
    body = api_admin.json(f"/registry/origins?{name}=" + "%F0%9F%93%BA" * 256)
    assert body["filters_applied"] == {name: "\U0001f4fa" * 256}


def test_several_bad_parameters(api_admin: CheckedClient):
    """Every bad parameter is named at once, good ones are not."""
    query = (
        "page=0&limit=x&foo=1&transport=&search=a%00b&station_id=99999999999"
        "&has_presentations=True&governance_state=governed&network_id=n&network_id=m"
        "&allocation_state=allocated&publication_status=HELD&bar="
    )
    body = api_admin.json(f"/registry/origins?{query}", status=400)
    assert set(body["details"]) == {
        "page",
        "limit",
        "foo",
        "bar",
        "transport",
        "search",
        "station_id",
        "has_presentations",
        "network_id",
        "publication_status",
    }


@pytest.mark.parametrize(
    "url",
    [
        "/summary?foo=1",
        "/summary?page=1",
        "/registry/summary?limit=5",
        f"/registry/origins/{NEWS}?x=",
        "/registry/addresses/9.10.3?verbose=true",
        "/openapi.json?format=yaml",
    ],
)
def test_parameters_where_none_are_taken(api_admin: CheckedClient, url: str):
    """An endpoint without parameters refuses any as unknown."""
    body = api_admin.json(url, status=400)
    name = url.split("?", 1)[1].split("=", 1)[0]
    assert body["details"] == {name: [UNKNOWN]}


# -- 404: lookups and routes ---------------------------------------------------------------------

MISSING_UUID = "00000000-0000-4000-8000-000000000000"
ORIGIN_ID_404 = [
    MISSING_UUID,
    f"svc:origin:{MISSING_UUID}",
    "not-a-uuid",
    "svc:origin:",
    "svc:origin:xyz",
    NEWS.replace("-", ""),
    f"{{{NEWS}}}",
    f"urn:uuid:{NEWS}",
    f"svc:network:{NEWS}",
    f"SVC:ORIGIN:{NEWS}",
    f"svc:origin:svc:origin:{NEWS}",
    f"svc:origin:{NEWS}x",
    f"x{NEWS}",
    f"{NEWS}%0A",
    f"%20{NEWS}",
    f"{NEWS}%20",
    f"{NEWS[:-1]}",
    f"{NEWS}0",
    NEWS.replace("b", "%EF%BD%82"),  # fullwidth b
    NEWS.replace("3", "%D9%A3"),  # Arabic-Indic 3
    "%00",
    "svc%3Aorigin%3A" + NEWS.replace("-", "%2D") + "%00",
]


@pytest.mark.parametrize("origin_id", ORIGIN_ID_404)
def test_origin_not_found(api_admin: CheckedClient, origin_id: str):
    """Malformed or unknown ids: 404, and the error says which id was looked for."""
    response = api_admin.get(f"/registry/origins/{origin_id}")
    assert response.status_code == 404
    body = response.get_json()
    assert body["success"] is False
    assert body["error"].startswith("No origin with id ")
    assert set(body) == {"success", "error"}


def test_origin_not_found_names_the_id(api_admin: CheckedClient):
    """The 404 repeats what was asked for."""
    body = api_admin.json(f"/registry/origins/svc:origin:{MISSING_UUID}", status=404)
    assert body["error"] == f"No origin with id svc:origin:{MISSING_UUID}"


def test_long_origin_id_is_cut_short(api_admin: CheckedClient):
    """A huge id is not echoed in full."""
    body = api_admin.json("/registry/origins/" + "a" * 5000, status=404)
    assert len(body["error"]) < 200


ADDRESS_404 = [
    "1.2.3",
    "0.0.0",
    "9.10.4",
    "09.10.3",
    "9.010.3",
    "9.10.03",
    "00.0.0",
    "%2B9.10.3",
    "-9.10.3",
    "%D9%A9.10.3",  # Arabic-Indic 9
    "%EF%BC%99.10.3",  # fullwidth 9
    "9.%C2%B9%E2%81%B0.3",  # superscript 10
    "2147483648.0.0",
    "0.2147483648.0",
    "0.0.2147483648",
    "4294967305.10.3",  # 9 + 2**32: must not wrap around to 9.10.3
    "99999999999999999999.10.3",
    "9" * 5000 + ".1.1",  # past int()'s default digit limit: still a 404, not a 500
    "9.10",
    "9.10.3.1",
    "9..3",
    "9.10.",
    ".9.10.3",
    "9. 10.3",
    "9.10.3%20",
    "9.10.3%0A",
    "0x9.10.3",
    "9,10,3",
    "a.b.c",
    "9.10.3%00",
    "9e0.10.3",
]


@pytest.mark.parametrize("address", ADDRESS_404, ids=[address[:30] for address in ADDRESS_404])
def test_address_not_found(api_admin: CheckedClient, address: str):
    """Malformed or unheld addresses: 404, and the error says which address."""
    body = api_admin.json(f"/registry/addresses/{address}", status=404)
    assert body["success"] is False
    assert body["error"].startswith("No origin holds address ")


def test_address_not_found_names_the_address(api_admin: CheckedClient):
    """The 404 repeats the address asked for."""
    body = api_admin.json("/registry/addresses/1.2.3", status=404)
    assert body == {"success": False, "error": "No origin holds address 1.2.3"}


UNKNOWN_ROUTES = [
    "/",
    "/nope",
    "/summary/",
    "/v1/summary",
    "//summary",
    "/summary/extra",
    "/openapi.yaml",
    "/openapi.json/",
    "/static/app.js",
    "/registry",
    "/registry/",
    "/registry/nope",
    "/registry//origins",
    "/registry//summary",
    "/registry/origins/",
    "/registry/addresses/",
    f"/registry/origins/{NEWS}/",
    f"/registry/origins/{NEWS}/presentations",
    "/registry/addresses/9.10.3/x",
    "/registry/origins/a%2Fb",
    "/REGISTRY/summary",
]


@pytest.mark.parametrize("url", UNKNOWN_ROUTES)
def test_unknown_route(api_admin: CheckedClient, url: str):
    """No route: 404 {"success": false, "error": "Not Found"}, never a redirect or HTML."""
    body = api_admin.json(url, status=404)
    assert body == {"success": False, "error": "Not Found"}


# -- 405, HEAD and Content-Type -------------------------------------------------------------------

ROUTES = [
    "/summary",
    "/openapi.json",
    "/registry/summary",
    "/registry/origins",
    f"/registry/origins/{NEWS}",
    "/registry/addresses/9.10.3",
]
OTHER_METHODS = ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "PROPFIND"]


@pytest.mark.parametrize("method", OTHER_METHODS)
@pytest.mark.parametrize("url", ROUTES)
def test_method_not_allowed(api_admin: CheckedClient, url: str, method: str):
    """Any method but GET and HEAD: 405 JSON with Allow: GET, HEAD."""
    response = api_admin.open(url, method)
    assert response.status_code == 405
    assert response.headers["Allow"] == "GET, HEAD"
    assert response.get_json() == {"success": False, "error": "Method Not Allowed"}


@pytest.mark.parametrize(
    "url",
    [
        *ROUTES,
        "/registry/origins?transport=iptv&limit=1",
        "/registry/origins?limit=0",
        "/registry/origins/nope",
        "/registry/addresses/1.2.3",
        "/nope",
    ],
)
def test_head_is_get_without_a_body(api_admin: CheckedClient, url: str):
    """HEAD answers with GET's status and headers, and no body."""
    get = api_admin.get(url)
    head = api_admin.open(url, "HEAD")
    assert head.get_data() == b""
    assert head.status_code == get.status_code
    assert head.headers["Content-Type"] == "application/json"
    for name in ("Link", "Allow", "Retry-After"):
        assert head.headers.get(name) == get.headers.get(name)


def test_head_is_public_only_where_get_is(api_public: CheckedClient):
    """HEAD on the registry without a token is refused like GET."""
    assert api_public.open("/summary", "HEAD").status_code == 200
    assert api_public.open("/registry/summary", "HEAD").status_code == 401


def test_openapi_and_summary_are_public(api_public: CheckedClient):
    """The two public endpoints need no token."""
    assert api_public.get("/summary").status_code == 200
    assert api_public.get("/openapi.json").status_code == 200


# -- 500 -----------------------------------------------------------------------------------------

SECRET = "password=hunter2 at /srv/registry/secret.py line 42"


@pytest.fixture(scope="module")
def exploding_api(
    example_db: str,
    api_app_factory: Callable[..., Flask],
    api_conformance: OpenApiConformance,
) -> CheckedClient:
    """An app with test-only routes that fail in unexpected ways."""
    app = api_app_factory(example_db)

    def explode() -> Any:
        """Fail with internals in the message."""
        raise RuntimeError(SECRET)

    def explode_on_type() -> Any:
        """Fail the way a programming error would."""
        return {"a": 1}["b"]

    def explode_in_database() -> Any:
        """Fail inside PostgreSQL with a non-availability error."""
        from registry.api.connection import get_connection

        return get_connection().execute("SELECT 1 / 0").fetchone()

    app.add_url_rule("/explode", view_func=explode)
    app.add_url_rule("/explode/key", view_func=explode_on_type)
    app.add_url_rule("/explode/database", view_func=explode_in_database)
    return CheckedClient(app.test_client(), api_conformance)


@pytest.mark.parametrize("url", ["/explode", "/explode/key", "/explode/database"])
def test_unexpected_error_is_500_without_internals(
    exploding_api: CheckedClient, url: str, caplog: pytest.LogCaptureFixture
):
    """Anything unexpected: 500, the documented body and nothing else; details go to the log."""
    response = exploding_api.get(url)
    assert response.status_code == 500
    assert response.get_json() == {"success": False, "error": "Internal Server Error"}
    data = response.get_data(as_text=True)
    for internal in ("hunter2", "Traceback", "RuntimeError", "KeyError", "division", ".py"):
        assert internal not in data
    assert "unhandled error" in caplog.text


# -- 503 -----------------------------------------------------------------------------------------


FAST_FAILURE = {"REGISTRY_POOL_TIMEOUT_S": 0.5, "REGISTRY_CONNECT_TIMEOUT_S": 1}
DATABASE_ROUTES = [
    "/registry/summary",
    "/registry/origins",
    "/registry/origins?search=x&limit=1",
    f"/registry/origins/{NEWS}",
    "/registry/addresses/9.10.3",
]


@pytest.fixture(scope="module")
def unreachable_api(
    api_app_factory: Callable[..., Flask],
    api_conformance: OpenApiConformance,
    admin_headers: dict[str, str],
) -> Iterator[CheckedClient]:
    """An app whose DATABASE_URL points at a loopback port with nothing listening."""
    conninfo = f"postgresql://postgres@127.0.0.1:{dead_port()}/registry"
    app = api_app_factory(conninfo, REGISTRY_RETRY_AFTER_S=7, **FAST_FAILURE)
    yield CheckedClient(app.test_client(), api_conformance, admin_headers)
    app.extensions["registry_db"].close()


def assert_unavailable(response: Any, retry_after: str) -> None:
    """503, the documented body and a Retry-After header."""
    assert response.status_code == 503
    assert response.get_json() == {"success": False, "error": "Service Unavailable"}
    assert response.headers["Retry-After"] == retry_after


def test_unreachable_database_public(unreachable_api: CheckedClient):
    """GET /summary without a token: 503 with Retry-After."""
    response = unreachable_api.get("/summary", headers={})
    assert_unavailable(response, "7")


@pytest.mark.parametrize("url", DATABASE_ROUTES)
def test_unreachable_database_registry(unreachable_api: CheckedClient, url: str):
    """Registry endpoints with a valid token: 503 with Retry-After."""
    assert_unavailable(unreachable_api.get(url), "7")


def test_unreachable_database_still_checks_first(unreachable_api: CheckedClient):
    """The token and the parameters are judged before the database is needed."""
    assert unreachable_api.get("/registry/summary", headers={}).status_code == 401
    assert unreachable_api.get("/registry/origins?limit=0").status_code == 400
    assert unreachable_api.get("/openapi.json").status_code == 200


@pytest.fixture(scope="module")
def unloaded_api(
    database_factory: Callable[[], str],
    api_app_factory: Callable[..., Flask],
    api_conformance: OpenApiConformance,
    admin_headers: dict[str, str],
) -> CheckedClient:
    """An app over a database into which no graph was ever loaded."""
    app = api_app_factory(database_factory(), **FAST_FAILURE)
    return CheckedClient(app.test_client(), api_conformance, admin_headers)


@pytest.mark.parametrize("url", ["/summary", *DATABASE_ROUTES])
def test_database_without_a_graph(unloaded_api: CheckedClient, url: str):
    """No graph loaded yet: 503, not 500."""
    assert_unavailable(unloaded_api.get(url), "2")


@pytest.fixture(scope="module")
def locked_graph(database_factory: Callable[[], str]) -> Iterator[str]:
    """A loaded database whose read model another session holds locked, so reads wait."""
    conninfo = database_factory()
    graph = GraphBuilder()
    graph.origin("Locked", address=(9, 10, 3))
    load_records(conninfo, graph.records)
    with psycopg.connect(conninfo) as conn:
        conn.execute(
            "LOCK TABLE graph.origin_rows, graph.origin_docs, graph.registry_summary, graph.feed"
            " IN ACCESS EXCLUSIVE MODE"
        )
        yield conninfo
        conn.rollback()


@pytest.fixture(scope="module")
def slow_api(
    locked_graph: str,
    api_app_factory: Callable[..., Flask],
    api_conformance: OpenApiConformance,
    admin_headers: dict[str, str],
) -> CheckedClient:
    """An app whose statement_timeout (200 ms) runs out while its reads wait on the lock."""
    app = api_app_factory(locked_graph, REGISTRY_STATEMENT_TIMEOUT_MS=200)
    return CheckedClient(app.test_client(), api_conformance, admin_headers)


@pytest.mark.parametrize("url", ["/summary", *DATABASE_ROUTES])
def test_database_over_time_budget(slow_api: CheckedClient, url: str):
    """A query over its time budget: 503 with Retry-After."""
    assert_unavailable(slow_api.get(url), "2")
