"""What the tests of `since=` while loads land share (docs/api.md, "Changes between
generations"): graphs that differ from version to version in every block, a registry whose
loads keep the numbers of graphs and change sets a test asks for, the origins exported when
each generation was current, and the net changes worked out from two of those exports.

The oracle never asks the service about the changes: the net changes from m to n are the
export of origins taken while m was current against the one taken while n was (per origin
id, the record at m against the record at n), diffed in plain Python
(tests/properties/catchup_model.py).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlencode

import orjson
import psycopg
from flask import Flask

from registry.loader.loading import load_document
from tests.api.api_support import GraphBuilder, origin_uuid, parse_links
from tests.conftest import app_config, document, make_token
from tests.properties.catchup_model import Records, net_changes

Record = dict[str, Any]
ADMIN = {"Authorization": f"Bearer {make_token()}"}
NDJSON = {"Accept": "application/x-ndjson"}
NORTH = "svc:network:north"


def versioned_graph(version: int, origins: int) -> bytes:
    """Version `version` of a graph of about `origins` origins. From one version to the next
    most origins change: a ninth leave (and come back in the version after), a quarter are
    renamed, and networks, governance edges, publication and carriages move on cycles of
    their own, so no two versions are the same and every block changes somewhere."""
    graph = GraphBuilder(catalog=["iptv", "ovp", "ota", "fast"])
    graph.network(NORTH, "North")
    for i in range(origins):
        if i % 9 == version % 9:
            continue
        renamed = f" v{version}" if i % 4 == version % 4 else ""
        graph.origin(
            f"Origin {i}{renamed}",
            uuid_text=origin_uuid(f"since-{i}"),
            network_id=NORTH if (i + version) % 5 == 0 else None,
            edges=(True,) if (i + version) % 6 < 2 else (),
            address=(1, i // 100, i % 100),
            status="held" if (i + version) % 7 == 0 else "published",
            carriages=("iptv",) if (i + version) % 3 == 0 else (),
        )
    return document(graph.records)


def exported_records(response: Any) -> Records:
    """A whole NDJSON export of origins (as many lines as Registry-Total says), by id."""
    lines = response.get_data().split(b"\n")
    assert lines[-1] == b""
    records = [orjson.loads(line) for line in lines[:-1]]
    assert response.headers["Registry-Total"] == str(len(records))
    return {record["origin"]["id"]: record for record in records}


class SinceRegistry:
    """A database of its own, the app over it, loads that keep `keep_generations` graphs and
    `keep_changes` change sets (raised to keep_generations, as `registry load` does), and the
    origins exported while each generation was current."""

    def __init__(
        self, conninfo: str, app: Flask, keep_generations: int | None, keep_changes: int | None
    ):
        """Over conninfo, nothing loaded yet; without the keep numbers, load() is not for
        this test (it loads otherwise)."""
        self.conninfo = conninfo
        self.app = app
        self.client = app.test_client()
        self.keep: tuple[int, int] | None = None
        if keep_generations is not None and keep_changes is not None:
            self.keep = (keep_generations, max(keep_changes, keep_generations))
        self.exports: dict[int, Records] = {}
        self.streams: list[Any] = []

    def load(self, version: int, origins: int = 160) -> int:
        """Load version `version` of the graph and export its origins while it is current; the
        generation it made. The load waits for no older snapshot (an export's may be open):
        its read model is vacuumed once, as `registry load` does with
        REGISTRY_LOAD_VACUUM_WAIT_S=0."""
        assert self.keep is not None, "no retention given for this registry's loads"
        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            result = load_document(
                conn,
                io.BytesIO(versioned_graph(version, origins)),
                keep_generations=self.keep[0],
                keep_changes=self.keep[1],
            )
        generation = result.generation
        assert generation is not None
        exported = self.get("/registry/origins", NDJSON)
        assert exported.status_code == 200
        assert exported.headers["Registry-Generation"] == str(generation)
        self.exports[generation] = exported_records(exported)
        return generation

    def get(self, url: str, headers: dict[str, str] | None = None) -> Any:
        """GET url as an admin, with extra headers."""
        return self.client.get(url, headers={**ADMIN, **(headers or {})})

    def stream(self, url: str, headers: dict[str, str] | None = None) -> Any:
        """GET url as an admin, its body left unread: the test reads it when it likes (and
        whatever it does, it is closed at the end, which ends the export's transaction)."""
        response = self.client.get(url, headers={**ADMIN, **(headers or {})}, buffered=False)
        self.streams.append(response)
        return response

    def close(self) -> None:
        """Close every answer streamed, then the app's pool."""
        for response in self.streams:
            response.close()
        self.app.extensions["registry_db"].close()

    def oldest_since(self, generation: int | None = None) -> int:
        """The oldest since of generation (the newest when None), as /registry/generations
        says it."""
        pinned = "" if generation is None else f"?generation={generation}"
        response = self.get(f"/registry/generations{pinned}")
        assert response.status_code == 200, response.get_data()
        return int(response.get_json()["oldest_since"])

    def net_changes(self, since: int, generation: int) -> list[Record]:
        """The net changes from since to generation: the two saved exports diffed."""
        return net_changes(self.exports[since], self.exports[generation])


def new_registry(
    database_factory: Callable[[], str],
    keep_generations: int | None = None,
    keep_changes: int | None = None,
) -> Iterator[SinceRegistry]:
    """A SinceRegistry on a fresh database (pool of 4: an export held open keeps one
    connection, and the test asks other questions beside it); its pool closed at the end."""
    from app import create_app

    conninfo = database_factory()
    app = create_app(app_config(conninfo, REGISTRY_POOL_MAX_SIZE=4))
    made = SinceRegistry(conninfo, app, keep_generations, keep_changes)
    try:
        yield made
    finally:
        made.close()


def next_page(response: Any) -> str | None:
    """The URL of a JSON page's Link next (path and query), or None on the last page."""
    links = parse_links(response.headers.get("Link", ""))
    if "next" not in links:
        return None
    path, query = links["next"]
    return f"{path}?{urlencode(query)}"


def ndjson_objects(body: bytes) -> list[Record]:
    """The objects of an NDJSON body that ends with its newline."""
    lines = body.split(b"\n")
    assert lines[-1] == b"", "the body does not end with a whole line"
    return [orjson.loads(line) for line in lines[:-1]]
