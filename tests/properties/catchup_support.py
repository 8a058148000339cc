"""What the catching-up tests (docs/api.md, Changes since any generation) share: a database loaded
through `registry load` with both retention settings, the app over it, the model of its chain of
generations, and the ways a consumer reads changes since m (pages by Link, NDJSON, CSV) and
exports."""

from __future__ import annotations

import argparse
import contextlib
import copy
import csv
import io
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import orjson
from hypothesis import event
from hypothesis import strategies as st

from registry.load_command import command_load
from registry.settings import load_settings
from tests.api.api_support import parse_links
from tests.conftest import app_config, document, make_token
from tests.properties.catchup_model import Chain
from tests.properties.change_model import CSV_COLUMNS
from tests.properties.model import Record
from tests.properties.strategies import graph_documents
from tests.properties.test_change_set import EDITS
from tests.properties.test_export_listing import CONTRACT_COLUMNS

KEEP_GENERATIONS = 2


class CatchupGraph:
    """A database that `registry load` fills, the app over it, and the model of its chain."""

    def __init__(self, conninfo: str, keep_generations: int, keep_changes: int):
        from app import create_app

        self.conninfo = conninfo
        self.chain = Chain(keep_generations, keep_changes)
        # One connection opened before the first example (see tests/properties/conftest.py).
        self.app = create_app(
            app_config(conninfo, REGISTRY_POOL_MIN_SIZE=1, REGISTRY_POOL_MAX_SIZE=1)
        )
        self.client = self.app.test_client()
        self.headers = {"Authorization": f"Bearer {make_token()}"}

    def wait(self) -> None:
        """Until the pool's one connection is open."""
        self.app.extensions["registry_db"].pool.wait(timeout=10)

    def close(self) -> None:
        """Close the app's pool."""
        self.app.extensions["registry_db"].close()

    def load(self, records: list[Record]) -> int:
        """`registry load` of a document with this chain's retention settings, as an operator
        runs it (an empty document allowed); the model records the generation committed."""
        settings = load_settings(
            {
                "DATABASE_URL": self.conninfo,
                "REGISTRY_KEEP_GENERATIONS": self.chain.keep_generations,
                "REGISTRY_KEEP_CHANGES": self.chain.keep_changes,
            }
        )
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "graph.jsonl"
            path.write_bytes(document(records))
            args = argparse.Namespace(path=str(path), dry_run=False, allow_empty=True, force=False)
            printed, errors = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(errors):
                status = command_load(args, settings)
            assert status == 0, errors.getvalue()
        current = self.get("/registry/generations").get_json()["current"]
        self.chain.commit(current, records)
        return current

    def get(self, url: str, accept: str | None = None, status: int | None = 200) -> Any:
        """GET url as an admin; the status checked unless None."""
        headers = {**self.headers, **({"Accept": accept} if accept else {})}
        response = self.client.get(url, headers=headers)
        response.get_data()  # read whole now: an export left unread holds its connection
        if status is not None:
            assert response.status_code == status, (url, response.status_code, response.data)
        return response


@st.composite
def load_chains(draw: st.DrawFn, shortest: int = 2, longest: int = 5) -> list[list[Record]]:
    """Documents to load in turn, each the one before edited or an earlier one again."""
    documents = [draw(graph_documents(max_origins=8))]
    for _ in range(draw(st.integers(shortest - 1, longest - 1))):
        if len(documents) >= 2 and draw(st.integers(0, 2)) == 0:
            following = copy.deepcopy(draw(st.sampled_from(documents[:-1])))
            event("a document loaded again")
        else:
            following = copy.deepcopy(documents[-1])
            for name in draw(st.lists(st.sampled_from(sorted(EDITS)), min_size=1, max_size=4)):
                EDITS[name](draw, following)
        documents.append(draw(st.permutations(following)))
    return documents


def changes_url(since: int | None, generation: int | None = None, **query: str) -> str:
    """/registry/changes with since, generation and the other parameters given."""
    parameters = dict(query)
    if since is not None:
        parameters["since"] = str(since)
    if generation is not None:
        parameters["generation"] = str(generation)
    return "/registry/changes" + (f"?{urlencode(parameters)}" if parameters else "")


def sweep_changes(
    graph: CatchupGraph, first_url: str, since: int, generation: int
) -> tuple[list[Record], list[Any]]:
    """Every change by following rel=next from first_url: (changes, every page's body).
    Every page says it answers since m from n; every Link URL carries since=m and
    generation=n."""
    response, seen, bodies = graph.get(first_url), [], []
    while True:
        body = response.get_json()
        assert (body["since"], body["generation"]) == (since, generation), body
        assert response.headers["Registry-Generation"] == str(generation)
        assert "since" not in body["filters_applied"]
        bodies.append(body)
        seen += body["changes"]
        links = parse_links(response.headers.get("Link", ""))
        for _rel, (_path, parameters) in links.items():
            assert parameters["since"] == str(since), links
            assert parameters["generation"] == str(generation), links
        if "next" not in links:
            return seen, bodies
        path, parameters = links["next"]
        response = graph.get(f"{path}?{urlencode(parameters)}")


def ndjson(response: Any) -> list[Record]:
    """An NDJSON body as objects; the body ends with a newline, and Registry-Total says how
    many lines there are."""
    lines = response.get_data().split(b"\n")
    assert lines[-1] == b""
    objects = [orjson.loads(line) for line in lines[:-1]]
    assert response.headers["Registry-Total"] == str(len(objects)), objects
    return objects


def csv_rows(response: Any, columns: tuple[str, ...]) -> list[list[str]]:
    """A CSV body's rows after its header, which must be `columns`; Registry-Total says how
    many rows follow the header."""
    rows = list(csv.reader(io.StringIO(response.get_data().decode("utf-8"), newline="")))
    assert tuple(rows[0]) == columns
    assert response.headers["Registry-Total"] == str(len(rows) - 1), rows
    return rows[1:]


def changes_csv(response: Any) -> list[list[str]]:
    """The rows of a CSV export of changes."""
    return csv_rows(response, CSV_COLUMNS)


def origins_csv(response: Any) -> list[list[str]]:
    """The rows of a CSV export of origins."""
    return csv_rows(response, CONTRACT_COLUMNS)


def csv_listing_order(row: list[str]) -> tuple[Any, ...]:
    """An origins CSV row's place in listing order (docs/api.md, Listing origins), read from its own
    columns."""
    column = {name: value for name, value in zip(CONTRACT_COLUMNS, row, strict=True)}
    if column["allocated"] == "true":
        numbers = (int(column["network"]), int(column["station"]), int(column["channel"]))
        return (0, *numbers, column["id"])
    return (1, 0, 0, 0, column["id"])
