"""Every generation's digest (docs/api.md, "Digests"): computed by the load as it renders the
records, stated beside every Registry-Generation (304s and a lookup's 404 included) and in
/registry/generations, and equal to the digest any client computes from the records it is
sent (registry/digest.py)."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import orjson
import psycopg
import pytest
from flask import Flask

from registry import digest
from registry.loader import rendering
from registry.loader.demo import write_demo_document
from registry.loader.loading import load_document
from tests.api.api_support import CheckedClient, GraphBuilder
from tests.conftest import load_records

NDJSON = "application/x-ndjson"
CSV = "text/csv"


def graph(version: int) -> GraphBuilder:
    """Names with what canonical forms get wrong (non-ASCII text, quotes, backslashes,
    control characters), renamed in version 2, one origin added."""
    feed = {"connected": True, "networks": 2, "iptv_networks": 1, "ovp_networks": None,
            "channels": 3, "programs": None, "reviews": 0, "pending_reviews": 0}  # fmt: skip
    built = GraphBuilder(catalog=["iptv", "ota"], feed=feed)
    built.network("svc:network:n", 'Réseau "Nord" \\ 日本')
    built.origin(f"Télé\tNord v{version}", network_id="svc:network:n", address=(1, 2, 3),
                 edges=(True,), carriages=("iptv", "ota"), status="held",
                 held_reason='under "review"\n\x01')  # fmt: skip
    built.origin("Quiet", registry_id=None, reviewed=False)
    if version > 1:
        built.origin("Added \U0001f4fa", address=(1, 2, 4), status="published")
    return built


@pytest.fixture(scope="module")
def two_loads(
    database_factory: Callable[[], str],
    api_app_factory: Callable[..., Flask],
    api_conformance: Any,
    admin_headers: dict[str, str],
) -> CheckedClient:
    """Generations 1 and 2 of graph(), both kept; a checked admin client over them."""
    conninfo = database_factory()
    load_records(conninfo, graph(1).records)
    load_records(conninfo, graph(2).records)
    app = api_app_factory(conninfo)
    return CheckedClient(app.test_client(), api_conformance, admin_headers)


def raw(client: CheckedClient, url: str, headers: dict[str, str]) -> Any:
    """GET url as it is (an export, a 304), which the OpenAPI check of JSON bodies leaves."""
    return client.client.get(url, headers=headers)


def export_digest(client: CheckedClient, generation: int) -> str:
    """The digest of a generation's NDJSON export, computed here from the lines sent."""
    pin = f"generation={generation}"
    response = raw(client, f"/registry/origins?{pin}", {**client.headers, "Accept": NDJSON})
    lines = response.get_data().splitlines()
    assert len(lines) == int(response.headers["Registry-Total"])
    return digest.as_hex(sum(digest.text_hash(line) for line in lines))


def lookup_id(client: CheckedClient, generation: int) -> str:
    """The id of the first origin of a generation."""
    body = client.json(f"/registry/origins?generation={generation}&limit=1")
    return str(body["origins"][0]["origin"]["id"])


def urls(client: CheckedClient, generation: int | None) -> list[tuple[str, str | None]]:
    """Every kind of answer read from one generation (None: the newest), with its Accept."""
    pin = "" if generation is None else f"generation={generation}"
    joined = f"&{pin}" if pin else ""
    first = lookup_id(client, generation or 2)
    return [
        (f"/registry/summary?{pin}", None),
        (f"/registry/origins?limit=1{joined}", None),
        (f"/registry/origins?search=nord{joined}", None),
        (f"/registry/origins?facet=network_id{joined}", None),
        (f"/registry/origins/{first}?{pin}", None),
        (f"/registry/addresses/1.2.3?{pin}", None),
        (f"/registry/origins/{first}/history?{pin}", None),
        (f"/registry/changes?{pin}", None),
        (f"/registry/changes?since=1{joined}", None),
        (f"/registry/generations?{pin}", None),
        (f"/registry/origins?{pin}", NDJSON),
        (f"/registry/origins?{pin}", CSV),
        (f"/registry/changes?{pin}", NDJSON),
        (f"/registry/changes?since=1{joined}", CSV),
    ]


@pytest.mark.parametrize("generation", [1, 2, None])
def test_every_answer_states_the_digest_of_its_generation(
    two_loads: CheckedClient, generation: int | None
):
    client = two_loads
    expected = export_digest(client, generation or 2)
    for url, accept in urls(client, generation):
        headers = {**client.headers, **({"Accept": accept} if accept else {})}
        response = (raw if accept else CheckedClient.get)(client, url, headers)
        assert response.status_code == 200, (url, response.get_data())
        assert response.headers["Registry-Digest"] == expected, url
        again = raw(client, url, {**headers, "If-None-Match": response.headers["ETag"]})
        assert again.status_code == 304, url
        assert again.headers["Registry-Digest"] == expected, url
        assert again.headers["Registry-Generation"] == response.headers["Registry-Generation"]


def test_the_digests_differ_and_a_lookups_404_states_one_too(two_loads: CheckedClient):
    client = two_loads
    first, second = export_digest(client, 1), export_digest(client, 2)
    assert first != second
    missing = client.get("/registry/origins/00000000-0000-4000-8000-000000000000?generation=1")
    assert missing.status_code == 404
    assert missing.headers["Registry-Generation"] == "1"
    assert missing.headers["Registry-Digest"] == first
    public = client.get("/summary", {})
    assert (public.status_code, public.headers["Registry-Digest"]) == (200, second)


def test_the_generation_list_gives_each_its_digest(two_loads: CheckedClient):
    client = two_loads
    listed = client.json("/registry/generations")["generations"]
    assert [(g["generation"], g["digest"]) for g in listed] == [
        (2, export_digest(client, 2)),
        (1, export_digest(client, 1)),
    ]


@pytest.mark.parametrize("generation", [1, 2])
def test_records_are_sent_in_their_canonical_form(two_loads: CheckedClient, generation: int):
    """Each export line is its record's canonical form, byte for byte, so h is the SHA-256 of
    the line as sent; a lookup sends the same bytes inside its envelope."""
    client = two_loads
    pin = f"generation={generation}"
    response = raw(client, f"/registry/origins?{pin}", {**client.headers, "Accept": NDJSON})
    lines = response.get_data().splitlines()
    assert lines and all(line == digest.canonical(orjson.loads(line)) for line in lines)
    sent = digest.as_hex(sum(map(digest.canonical_hash, lines)))
    assert sent == response.headers["Registry-Digest"]
    for line in lines:
        found = orjson.loads(line)["origin"]["id"]
        lookup = client.client.get(f"/registry/origins/{found}?{pin}", headers=client.headers)
        assert b'"origin":' + line in lookup.get_data()


def test_an_empty_graph_has_the_digest_of_nothing(
    database_factory: Callable[[], str], api_app_factory: Callable[..., Flask]
):
    conninfo = database_factory()
    load_records(conninfo, [])
    response = api_app_factory(conninfo).test_client().get("/summary")
    assert response.headers["Registry-Digest"] == digest.EMPTY


@pytest.mark.parametrize("workers", [False, True], ids=["one-process", "worker-processes"])
def test_a_loads_digest_is_the_digest_of_its_export(
    database_factory: Callable[[], str],
    api_app_factory: Callable[..., Flask],
    admin_headers: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    workers: bool,
):
    """The demo graph, rendered in this process or by worker processes (each summing its own
    piece): the digest the load recorded is the one computed from the export."""
    monkeypatch.setattr(rendering, "PARALLEL_FROM", 0 if workers else 10**9)
    document = io.BytesIO()
    write_demo_document(document, origins=3000, seed=5)
    conninfo = database_factory()
    with psycopg.connect(conninfo, autocommit=True) as conn:
        load_document(conn, io.BytesIO(document.getvalue()))
        recorded = conn.execute(
            "SELECT g.digest, i.digest FROM registry_meta.generations AS g"
            " JOIN graph.graph_info AS i USING (generation)"
        ).fetchone()
    client = api_app_factory(conninfo).test_client()
    exported = client.get("/registry/origins", headers={**admin_headers, "Accept": NDJSON})
    records = [orjson.loads(line) for line in exported.get_data().splitlines()]
    assert len(records) == int(exported.headers["Registry-Total"]) > 2900
    assert recorded == (digest.digest_of(records),) * 2
    assert exported.headers["Registry-Digest"] == recorded[0]
