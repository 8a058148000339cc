"""GET /registry/changes and GET /registry/generations (docs/api.md, Changes between generations
and The generation list).

Graph A is generation 1, graph B generation 2. B differs from A in known ways, one by one: a
network renamed (the `origin` block of both origins under it), a governance edge flipped, an
allocation moved and one dropped, a presentation added and one changed, an origin added and
one removed; and an origin whose carriages B lists in another order, beside an inactive edge
added, which the API answers the same, so it is no change. B's records come in reverse order.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

import orjson
import pytest
from werkzeug.http import parse_date

from tests.api.api_support import CheckedClient, OpenApiConformance, parse_links
from tests.api.change_graphs import (
    CHANGES_B,
    COUNTS_B,
    GRAPH_A,
    GRAPH_B,
    GRAPH_C,
    IDS_A,
    IDS_B,
    oid,
)
from tests.api.test_generations import Registry
from tests.conftest import app_config, document, make_token

Record = dict[str, Any]
NDJSON = {"Accept": "application/x-ndjson"}
CSV = {"Accept": "text/csv"}
UTC_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|\+00:00)\Z")
# The documented CSV columns, spelled out here rather than taken from the service.
CSV_HEADER = "id,kind,blocks,name,address"
ENVELOPE = {"success", "generated_at", "generation", "previous", "since", "counts"}
ENVELOPE |= {"filters_applied", "page", "changes"}
GENERATION_FIELDS = {"generation", "previous", "committed_at", "canonical_origins", "counts"}
GENERATION_FIELDS |= {"readable", "digest"}  # docs/api.md: since=, digests


def new_registry(database_factory: Callable[[], str], *graphs: list[Record]) -> Iterator[Registry]:
    """A database of its own with the graphs loaded in turn (generations 1, 2, ...)."""
    from app import create_app

    conninfo = database_factory()
    app = create_app(app_config(conninfo))
    made = Registry(conninfo, app)
    for number, records in enumerate(graphs, start=1):
        assert made.load(document(records)) == number
    yield made
    app.extensions["registry_db"].close()


@pytest.fixture(scope="module")
def settled(database_factory: Callable[[], str]) -> Iterator[Registry]:
    """A and B loaded (generations 1 and 2), for the tests that only read."""
    yield from new_registry(database_factory, GRAPH_A, GRAPH_B)


@pytest.fixture
def registry(database_factory: Callable[[], str]) -> Iterator[Registry]:
    """A and B loaded into a database of this test's own, for tests that load more."""
    yield from new_registry(database_factory, GRAPH_A, GRAPH_B)


def body(registry: Registry, url: str, headers: dict[str, str] | None = None) -> Any:
    """The JSON body of a 200."""
    response = registry.get(url, headers)
    assert response.status_code == 200, (url, response.status_code, response.get_data())
    assert response.headers["Content-Type"] == "application/json"
    return response.get_json()


def lookup(registry: Registry, origin_id: str, generation: int) -> Record | None:
    """The Origin record generation answers for an id, or None when it has no such origin."""
    response = registry.get(f"/registry/origins/{origin_id}?generation={generation}")
    return None if response.status_code == 404 else response.get_json()["origin"]


def without_time(answer: Record) -> Record:
    """A body without generated_at, the one field that changes between two reads."""
    return {name: value for name, value in answer.items() if name != "generated_at"}


def ndjson(response: Any) -> list[Record]:
    """The objects of an NDJSON answer, one a line, each line ending in a newline."""
    data = response.get_data()
    assert data == b"" or data.endswith(b"\n")
    return [orjson.loads(line) for line in data.split(b"\n")[:-1]]


def test_the_envelope_of_the_newest_generation(settled: Registry) -> None:
    """Generation, previous, whole counts, no filters, a page of all eight, ordered by id."""
    answer = body(settled, "/registry/changes")
    assert set(answer) == ENVELOPE
    assert answer["success"] is True and UTC_TIME.match(answer["generated_at"])
    assert (answer["generation"], answer["previous"]) == (2, 1)
    assert answer["counts"] == COUNTS_B
    assert answer["filters_applied"] == {}
    assert answer["page"] == {"page": 1, "limit": 50, "offset": 0, "returned": 8, "total": 8}
    assert [change["id"] for change in answer["changes"]] == IDS_B
    for change in answer["changes"]:
        assert set(change) == {"id", "kind", "blocks", "before", "after"}
    found = {change["id"]: (change["kind"], change["blocks"]) for change in answer["changes"]}
    assert found == {oid(key): (kind, blocks) for key, (kind, blocks, *_) in CHANGES_B.items()}


def test_before_and_after_are_the_records_each_generation_answers(settled: Registry) -> None:
    """before as generation 1 answers the origin, after as generation 2 does; null if absent."""
    for change in body(settled, "/registry/changes")["changes"]:
        assert change["before"] == lookup(settled, change["id"], 1)
        assert change["after"] == lookup(settled, change["id"], 2)
        assert (change["before"] is None) == (change["kind"] == "added")
        assert (change["after"] is None) == (change["kind"] == "removed")
    renamed = body(settled, "/registry/changes?block=origin&limit=1&page=2")["changes"][0]
    assert renamed["before"]["origin"]["network"]["name"] == "North"
    assert renamed["after"]["origin"]["network"]["name"] == "North Renamed"


def test_the_first_generation_adds_every_origin(settled: Registry) -> None:
    """Generation 1: previous null, every origin added, before null, blocks []."""
    answer = body(settled, "/registry/changes?generation=1&limit=200")
    assert (answer["generation"], answer["previous"]) == (1, None)
    assert answer["counts"] == {"added": 9, "removed": 0, "changed": 0}
    assert [change["id"] for change in answer["changes"]] == IDS_A
    for change in answer["changes"]:
        assert (change["kind"], change["blocks"], change["before"]) == ("added", [], None)
        assert change["after"] == lookup(settled, change["id"], 1)
    pinned = settled.get("/registry/changes?generation=2")
    assert pinned.headers["Registry-Generation"] == "2"
    assert without_time(pinned.get_json()) == without_time(body(settled, "/registry/changes"))


@pytest.mark.parametrize(
    ("query", "keys", "applied"),
    [
        ("kind=added", [7], {"kind": "added"}),
        ("kind=removed", [5], {"kind": "removed"}),
        ("kind=changed", [1, 2, 3, 6, 8, 10], {"kind": "changed"}),
        ("block=origin", [1, 2, 10], {"block": "origin"}),
        ("block=governance", [3], {"block": "governance"}),
        ("block=presentations", [1, 8], {"block": "presentations"}),
        ("kind=changed&block=bans", [6, 10], {"kind": "changed", "block": "bans"}),
        ("block=bans&limit=1&page=2&generation=2", [6, 10], {"block": "bans"}),
    ],
)
def test_filters(settled: Registry, query: str, keys: list[int], applied: Record) -> None:
    """Each filter selects its changes, by id; counts stay whole; total counts the matches."""
    answer = body(settled, f"/registry/changes?{query}")
    assert answer["counts"] == COUNTS_B
    assert answer["filters_applied"] == applied
    assert answer["page"]["total"] == len(keys)
    expected = sorted(oid(key) for key in keys)
    page, limit = answer["page"]["page"], answer["page"]["limit"]
    wanted = expected[(page - 1) * limit : page * limit]
    assert [change["id"] for change in answer["changes"]] == wanted


BAD = [
    ("kind=added&block=bans", {"kind", "block"}),
    ("kind=removed&block=origin", {"kind", "block"}),
    ("kind=Added", {"kind"}),
    ("kind=modified", {"kind"}),
    ("kind=", {"kind"}),
    ("kind=added&kind=removed", {"kind"}),
    ("block=address", {"block"}),
    ("block=Origin", {"block"}),
    ("bogus=1", {"bogus"}),
    ("governance_state=governed", {"governance_state"}),
    ("page=0", {"page"}),
    ("limit=201", {"limit"}),
    ("limit=x", {"limit"}),
    ("generation=x", {"generation"}),
]


@pytest.mark.parametrize(("query", "allowed"), BAD)
def test_bad_parameters_are_400(settled: Registry, query: str, allowed: set[str]) -> None:
    """The 400 of docs/api.md, Errors, naming the parameter (with kind, block or both for the
    pair)."""
    response = settled.get(f"/registry/changes?{query}")
    assert response.status_code == 400
    assert response.headers["Content-Type"] == "application/json"
    answer = response.get_json()
    assert set(answer) == {"success", "error", "details"}
    assert (answer["success"], answer["error"]) == (False, "Invalid request parameters")
    assert answer["details"] and set(answer["details"]) <= allowed
    for reasons in answer["details"].values():
        assert reasons and all(isinstance(reason, str) and reason for reason in reasons)


def test_token_rules_come_first(settled: Registry) -> None:
    """401 and 403 as for /registry/origins, before 400, 404, 406 and 304."""
    tag = settled.get("/registry/changes").headers["ETag"]
    viewer = {"Authorization": f"Bearer {make_token(roles=['viewer'])}"}
    for url in (
        "/registry/changes",
        "/registry/changes?kind=added&block=bans",
        "/registry/changes?generation=99",
        "/registry/generations",
    ):
        for extra in ({}, {"If-None-Match": tag}, {"Accept": "text/html"}, CSV):
            anonymous = settled.get(url, extra, admin=False)
            assert anonymous.status_code == 401, (url, extra)
            assert anonymous.get_json() == {"error": "Unauthorized"}
            assert anonymous.headers["WWW-Authenticate"].startswith("Bearer")
            forged = settled.get(url, {**extra, "Authorization": "Bearer x.y.z"}, admin=False)
            assert forged.status_code == 401
            assert 'error="invalid_token"' in forged.headers["WWW-Authenticate"]
            forbidden = settled.get(url, {**extra, **viewer}, admin=False)
            assert forbidden.status_code == 403
            assert forbidden.get_json()["error"] == "Domain admin access required"
    global_admin = {"Authorization": f"Bearer {make_token(roles='global_admin')}"}
    assert settled.get("/registry/changes", global_admin, admin=False).status_code == 200


def test_generations_never_produced_or_no_longer_kept(registry: Registry) -> None:
    """404 for a generation never produced, 410 once dropped, as JSON, exports included."""
    assert registry.load(document(GRAPH_C)) == 3  # keeps 3 and 2, drops 1
    for accept in ({}, NDJSON, CSV):
        gone = registry.get("/registry/changes?generation=1", accept)
        assert gone.status_code == 410
        assert gone.get_json() == {
            "success": False,
            "error": "Generation no longer available",
            "details": {"generation": 1, "current": 3},
        }
        unknown = registry.get("/registry/changes?generation=4", accept)
        assert unknown.status_code == 404
        assert unknown.get_json() == {
            "success": False,
            "error": "Generation not found",
            "details": {"generation": 4, "current": 3},
        }


def test_before_outlives_the_previous_generation(registry: Registry) -> None:
    """Generation 2's changes, before included, read the same once generation 1 is dropped."""
    url = "/registry/changes?generation=2&limit=200"
    kept = without_time(body(registry, url))
    assert registry.load(document(GRAPH_C)) == 3
    assert registry.get("/registry/origins?generation=1").status_code == 410
    assert without_time(body(registry, url)) == kept
    assert ndjson(registry.get(url.replace("&limit=200", ""), NDJSON)) == kept["changes"]
    newest = body(registry, "/registry/changes")
    assert (newest["generation"], newest["previous"], newest["counts"]) == (
        3,
        2,
        {"added": 0, "removed": 0, "changed": 1},
    )
    assert [(c["id"], c["blocks"]) for c in newest["changes"]] == [(oid(7), ["origin"])]


def test_reloading_the_same_graph_in_another_order_changes_nothing(registry: Registry) -> None:
    """Every record, carriages included, in another order: no change at all."""
    assert registry.load(document(GRAPH_B[::-1])) == 3
    answer = body(registry, "/registry/changes")
    assert answer["counts"] == {"added": 0, "removed": 0, "changed": 0}
    assert answer["changes"] == [] and answer["page"]["total"] == 0
    assert ndjson(registry.get("/registry/changes", NDJSON)) == []
    assert registry.get("/registry/changes", CSV).get_data() == (CSV_HEADER + "\r\n").encode()


def sweep(registry: Registry, url: str) -> tuple[list[str], set[str]]:
    """Follow rel=next from url to the end: the ids seen, and the generations answering."""
    ids: list[str] = []
    generations: set[str] = set()
    while True:
        response = registry.get(url)
        assert response.status_code == 200
        generations.add(response.headers["Registry-Generation"])
        ids += [change["id"] for change in response.get_json()["changes"]]
        links = parse_links(response.headers["Link"])
        for path, query in links.values():
            assert path == "/registry/changes"
            assert query["generation"] == response.headers["Registry-Generation"]
        if "next" not in links:
            return ids, generations
        path, query = links["next"]
        url = f"{path}?{urlencode(query)}"


def test_pages_and_links(settled: Registry) -> None:
    """offset, returned and total as docs/api.md, Listing origins; Link first, next and last keep
    the filters."""
    third = body(settled, "/registry/changes?limit=3&page=3")
    assert third["page"] == {"page": 3, "limit": 3, "offset": 6, "returned": 2, "total": 8}
    assert [change["id"] for change in third["changes"]] == IDS_B[6:]
    past = body(settled, "/registry/changes?limit=3&page=9")
    assert past["changes"] == [] and past["page"]["total"] == 8
    links = parse_links(settled.get("/registry/changes?kind=changed&limit=4").headers["Link"])
    assert set(links) == {"first", "next", "last"}
    assert links["next"][1] == {"kind": "changed", "page": "2", "limit": "4", "generation": "2"}
    assert links["last"][1]["page"] == "2"
    assert sweep(settled, "/registry/changes?limit=3") == (IDS_B, {"2"})
    changed = sorted(oid(key) for key, (kind, *_) in CHANGES_B.items() if kind == "changed")
    assert sweep(settled, "/registry/changes?kind=changed&limit=4") == (changed, {"2"})


def test_a_sweep_stays_in_its_generation_while_a_load_lands(registry: Registry) -> None:
    """Links carry generation=2: following them after a load still reads generation 2."""
    first = registry.get("/registry/changes?limit=3")
    tag = first.headers["ETag"]
    assert registry.load(document(GRAPH_C)) == 3
    ids = [change["id"] for change in first.get_json()["changes"]]
    path, query = parse_links(first.headers["Link"])["next"]
    rest, generations = sweep(registry, f"{path}?{urlencode(query)}")
    assert (ids + rest, generations) == (IDS_B, {"2"})
    assert registry.get("/registry/changes", {"If-None-Match": tag}).status_code == 200
    assert registry.get("/registry/changes").headers["Registry-Generation"] == "3"


def test_generation_headers_and_304(settled: Registry) -> None:
    """Registry-Generation, a weak ETag per URL, Last-Modified, Cache-Control; 304 on a match."""
    url = "/registry/changes?kind=changed"
    ok = settled.get(url)
    assert ok.headers["Registry-Generation"] == "2"
    assert ok.headers["ETag"].startswith('W/"')
    assert parse_date(ok.headers["Last-Modified"]) is not None
    assert ok.headers["Cache-Control"] == "private, no-cache"
    assert settled.get(url).headers["ETag"] == ok.headers["ETag"]
    for given in (ok.headers["ETag"], f'"other", {ok.headers["ETag"]}', "*"):
        again = settled.get(url, {"If-None-Match": given})
        assert again.status_code == 304 and again.get_data() == b""
        assert again.headers["Registry-Generation"] == "2"
    other = settled.get("/registry/changes?kind=added", {"If-None-Match": ok.headers["ETag"]})
    assert other.status_code == 200
    modified = {"If-Modified-Since": ok.headers["Last-Modified"]}
    assert settled.get(url, modified).status_code == 304
    export_tag = settled.get(url, NDJSON).headers["ETag"]  # an export revalidates too
    assert settled.get(url, {**NDJSON, "If-None-Match": export_tag}).status_code == 304
    pinned = settled.get("/registry/changes?generation=1")
    assert pinned.headers["Registry-Generation"] == "1"
    assert pinned.headers["ETag"] != settled.get("/registry/changes").headers["ETag"]


@pytest.mark.parametrize("query", ["", "kind=changed", "block=bans", "generation=1"])
def test_ndjson_export_is_the_changes_in_order(settled: Registry, query: str) -> None:
    """One object a line, the JSON pages' changes in the same order, from one generation."""
    response = settled.get(f"/registry/changes?{query}", NDJSON)
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/x-ndjson"
    lines = ndjson(response)
    separator = "&" if query else ""
    assert lines == body(settled, f"/registry/changes?{query}{separator}limit=200")["changes"]
    assert response.headers["Registry-Total"] == str(len(lines))
    generation = "1" if query == "generation=1" else "2"
    assert response.headers["Registry-Generation"] == generation


def test_csv_export_columns(settled: Registry) -> None:
    """id, kind, blocks joined by ;, name and address of after, or of before when removed."""
    response = settled.get("/registry/changes", CSV)
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/csv")
    text = response.get_data().decode("utf-8")
    assert text.startswith(CSV_HEADER + "\r\n") and text.endswith("\r\n")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    expected = [
        [oid(key), kind, ";".join(blocks), name, address]
        for key, (kind, blocks, name, address) in CHANGES_B.items()
    ]
    assert rows[1:] == sorted(expected)
    assert response.headers["Registry-Total"] == "8"
    removed = settled.get("/registry/changes?kind=removed", CSV).get_data().decode()
    assert removed == f"{CSV_HEADER}\r\n{oid(5)},removed,,Echo,3.1.4\r\n"


@pytest.mark.parametrize("query", ["page=1", "limit=5", "kind=added&limit=200"])
@pytest.mark.parametrize("accept", [NDJSON, CSV])
def test_exports_refuse_page_and_limit(settled: Registry, query: str, accept: dict) -> None:
    """page and limit are a 400 on an export, as JSON."""
    response = settled.get(f"/registry/changes?{query}", accept)
    assert response.status_code == 400
    assert response.headers["Content-Type"] == "application/json"
    assert set(response.get_json()["details"]) == {query.split("&")[-1].split("=")[0]}


def test_accept_admitting_nothing_offered_is_406(settled: Registry) -> None:
    """Neither JSON, NDJSON nor CSV: 406 with the body of docs/api.md, Errors."""
    response = settled.get("/registry/changes", {"Accept": "text/html"})
    assert response.status_code == 406
    assert response.get_json() == {"success": False, "error": "Not Acceptable"}


def test_generations_lists_every_kept_one_newest_first(registry: Registry) -> None:
    """current, then each kept generation with its previous, commit time, origins and counts."""
    answer = body(registry, "/registry/generations")
    assert set(answer) == {"success", "generated_at", "current", "oldest_since", "generations"}
    assert (answer["success"], answer["current"]) == (True, 2)
    expected = [
        (2, 1, 9, COUNTS_B),
        (1, None, 9, {"added": 9, "removed": 0, "changed": 0}),
    ]
    for item in answer["generations"]:
        assert set(item) == GENERATION_FIELDS
        assert UTC_TIME.match(item["committed_at"]), item
        at = datetime.fromisoformat(item["committed_at"].replace("Z", "+00:00"))
        url = f"/registry/changes?generation={item['generation']}"
        pinned = registry.get(url)
        modified = parse_date(pinned.headers["Last-Modified"])  # its commit, too
        # Last-Modified is the commit time in whole seconds (docs/api.md, Generations and
        # conditional requests).
        assert modified == at.replace(microsecond=0)
        assert item["digest"] == pinned.headers["Registry-Digest"]
    found = [
        (g["generation"], g["previous"], g["canonical_origins"], g["counts"])
        for g in answer["generations"]
    ]
    assert found == expected
    assert registry.load(document(GRAPH_C)) == 3
    after = body(registry, "/registry/generations")
    assert after["current"] == 3
    found = [(g["generation"], g["previous"], g["readable"]) for g in after["generations"]]
    assert found == [(3, 2, True), (2, 1, True), (1, None, False)]  # 1's change set is kept
    assert after["generations"][1]["counts"] == COUNTS_B
    assert registry.get("/registry/generations?bogus=1").status_code == 400


def test_generations_takes_generation_as_every_registry_get(registry: Registry) -> None:
    """docs/api.md, Generations and conditional requests: every /registry GET takes generation=n;
    410 once dropped, 404 if never made."""
    assert registry.load(document(GRAPH_C)) == 3
    kept = registry.get("/registry/generations?generation=2")
    assert (kept.status_code, kept.headers.get("Registry-Generation")) == (200, "2")
    assert registry.get("/registry/generations?generation=1").status_code == 410
    assert registry.get("/registry/generations?generation=4").status_code == 404
    assert registry.get("/registry/generations?generation=x").status_code == 400


@pytest.mark.parametrize(
    "url",
    [
        "/registry/changes",
        "/registry/changes?kind=changed&block=bans&limit=1",
        "/registry/changes?generation=1",
        "/registry/changes?bogus=1",
        "/registry/generations",
    ],
)
def test_the_openapi_document_describes_the_answers(
    settled: Registry, api_conformance: OpenApiConformance, url: str
) -> None:
    """Both paths are in /openapi.json, and their answers conform to it."""
    assert {"/registry/changes", "/registry/generations"} <= set(api_conformance.document["paths"])
    admin = {"Authorization": f"Bearer {make_token()}"}
    CheckedClient(settled.client, api_conformance, admin).get(url)
