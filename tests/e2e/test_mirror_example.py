"""The consumer's guide runs as written: docs/examples/mirror.py against gunicorn over real
HTTP keeps a mirror equal to the newest export, across loads, a 304, and a 410 that sends it
back to an export (docs/api.md, Changes since any generation)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from tests.conftest import TEST_SECRET, make_token
from tests.e2e.conftest import fetch
from tests.properties.catchup_support import CatchupGraph
from tests.properties.model import Record

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "examples" / "mirror.py"


def origin(number: int, name: str, station: int | None = None) -> list[Record]:
    """An origin, allocated at 1.<station>.0 when a station is given."""
    origin_id = f"svc:origin:00000000-0000-4000-8000-{number:012d}"
    records: list[Record] = [
        {
            "type": "origin",
            "id": origin_id,
            "name": name,
            "network_id": None,
            "registry_id": None,
            "reviewed": True,
        }
    ]
    if station is not None:
        records.append(
            {
                "type": "allocation",
                "origin_id": origin_id,
                "network": 1,
                "station": station,
                "channel": 0,
                "publication_status": "published",
                "held_at": None,
            }
        )
    return records


def graph(*origins: list[Record]) -> list[Record]:
    """A document of these origins."""
    return [record for records in origins for record in records]


def test_the_mirror_example_keeps_up_across_loads_and_a_410(
    gunicorn_factory: Callable[..., object], database_factory: Callable[[], str], tmp_path: Path
) -> None:
    """Export, catch up (changed, removed, added, moved), 304, fall behind the kept change
    sets (410) and export again: after every run the mirror is the newest export."""
    conninfo = database_factory()
    loads = CatchupGraph(conninfo, keep_generations=2, keep_changes=3)
    server = gunicorn_factory({"DATABASE_URL": conninfo, "REGISTRY_JWT_SECRET": TEST_SECRET})
    base = server.base  # type: ignore[attr-defined]
    token = make_token()
    mirror = tmp_path / "origins.ndjson"

    def run() -> str:
        """One run of the example, as the guide shows it."""
        done = subprocess.run(
            [sys.executable, str(SCRIPT), "--url", base, "--file", str(mirror)],
            env={**os.environ, "REGISTRY_TOKEN": token},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def newest_export() -> bytes:
        answer = fetch(
            f"{base}/registry/origins",
            {"Authorization": f"Bearer {token}", "Accept": "application/x-ndjson"},
        )
        assert answer.status == 200
        return answer.body

    def same() -> None:
        held = [orjson.loads(line) for line in mirror.read_bytes().splitlines()]
        assert held == [orjson.loads(line) for line in newest_export().splitlines()]

    try:
        loads.load(graph(origin(1, "one", 5), origin(2, "two"), origin(3, "three", 2)))
        assert "exported generation 1: 3 origins" in run()
        same()
        assert "generation 1: no changes" in run()  # and the answer's ETag kept
        assert "generation 1: not modified" in run()
        loads.load(graph(origin(1, "one, renamed", 5), origin(3, "three", 9), origin(4, "4")))
        loads.load(graph(origin(1, "one, renamed", 5), origin(3, "three", 1), origin(5, "5")))
        assert "generation 1 -> 3: 4 changes applied" in run()
        same()
        assert "generation 3: no changes" in run()
        assert "generation 3: not modified" in run()
        # removed then re-added, and four loads: more than the 3 change sets kept
        loads.load(graph(origin(1, "one, renamed", 5)))
        loads.load(graph(origin(1, "one, renamed", 5), origin(2, "two", 3)))
        loads.load(graph(origin(1, "one", 5), origin(2, "two", 3), origin(6, "six")))
        assert "generation 3 -> 6" in run()
        same()
        for name in ("a", "b", "c", "d"):
            loads.load(graph(origin(1, name, 5), origin(7, name)))
        printed = run()
        assert "since 6 is gone (410); exported generation 10: 2 origins" in printed
        same()
        assert "generation 10: no changes" in run()
        assert "generation 10: not modified" in run()
        # a mirror of a generation this registry never produced (another database's)
        mirror.with_name(mirror.name + ".state").write_text('{"generation": 99, "etag": null}')
        assert "since 99 is gone (404); exported generation 10: 2 origins" in run()
        same()
    finally:
        loads.close()
