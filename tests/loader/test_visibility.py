"""A generation reaches the read model's plans (index-only scans that skip the heap) once the
snapshots older than it have ended, whatever was open when its load committed.

An export holds one snapshot for as long as its client reads (docs/export.md, Capacity). A load that
commits meanwhile cannot mark its new pages all-visible until that snapshot ends: the test
holds one open across a real `registry load`, closes it, then asks PostgreSQL for the plans
and heap fetches of the listing statements, as the service sends them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from registry.database import repository
from registry.database.conninfo import connection_kwargs
from registry.loader.demo import write_demo_document
from registry.loader.loading import load_document
from registry.settings import load_settings
from schemas.params import parse_origin_list_query
from tests.recording import RecordingConnection

ROOT = Path(__file__).resolve().parents[2]
# Enough origins that the planner prefers an index-only scan of origin_rows to a sequential
# one when the pages are all-visible, and a sequential scan when they are not.
ORIGINS = 10_000
# The listings whose plans are checked: every origin, and flag filters (one combination
# common, one rare, one far down the positions).
LISTINGS: tuple[tuple[dict[str, list[str]], int], ...] = (
    ({}, 0),
    ({"governance_state": ["ungoverned"]}, 0),
    ({"allocation_state": ["allocated"], "has_presentations": ["true"]}, 0),
    ({"governance_state": ["governed"]}, 4000),
)
# How long the test waits for the generation to reach its plans once the snapshot has ended:
# generous, since the work after it (a vacuum of the read model) may run in the background.
GIVE_UP_S = 120.0
# The read model's tables that grow with the graph: never read whole by a listing.
READ_MODEL = frozenset({"origin_rows", "origin_docs", "origin_csv", "origin_search"})

pytestmark = pytest.mark.db


def registry_load(conninfo: str, path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """Run `registry load PATH` as cron would."""
    return subprocess.run(
        [sys.executable, "-m", "registry.cli", "load", str(path)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": conninfo, **env},
        timeout=600,
        check=False,
    )


@pytest.fixture(scope="module")
def demo_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo document of ORIGINS origins, in a file."""
    path = tmp_path_factory.mktemp("visibility") / "demo.jsonl"
    with path.open("wb") as document:
        write_demo_document(document, ORIGINS, 3)
    return path


@pytest.fixture
def loaded_db(database_factory: Callable[[], str], demo_file: Path) -> str:
    """A fresh database with the demo graph loaded once, with nothing else open."""
    conninfo = database_factory()
    done = registry_load(conninfo, demo_file)
    assert done.returncode == 0, done.stderr
    return conninfo


def nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every node of the plan tree, init plans and sub plans included."""
    yield plan
    for child in plan.get("Plans", ()):
        yield from nodes(child)


def listing_plans(conninfo: str) -> list[tuple[str, list[dict[str, Any]]]]:
    """For each listing: its filters and the nodes of the plan it ran (EXPLAIN ANALYZE, on a
    connection set up like the service's)."""
    kwargs = connection_kwargs(load_settings(), conninfo)
    found = []
    with RecordingConnection.connect(conninfo, **kwargs) as conn:
        for given, offset in LISTINGS:
            filters = parse_origin_list_query(dict(given))
            filters.pop("page")
            limit = filters.pop("limit")
            conn.ran = []
            repository.list_origins(conn, filters, limit, offset)
            assert len(conn.ran) == 1
            query, params = conn.ran[0]
            row = conn.execute(
                "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + query, params
            ).fetchone()
            assert row is not None
            found.append((str(given or "all"), list(nodes(row[0][0]["Plan"]))))
    return found


def plan_problems(conninfo: str) -> list[str]:
    """What keeps the listings from their intended plans: a filtered listing that reads
    origin_rows other than by an index-only scan, a sequential scan of the read model, or an
    index-only scan that fetched heap tuples."""
    problems = []
    for name, plan in listing_plans(conninfo):
        scans = [node for node in plan if node.get("Relation Name") == "origin_rows"]
        if name != "all" and not any(node["Node Type"] == "Index Only Scan" for node in scans):
            kinds = sorted({node["Node Type"] for node in scans})
            problems.append(f"{name}: origin_rows read by {kinds}, not an Index Only Scan")
        for node in plan:
            if node["Node Type"] == "Seq Scan" and node["Relation Name"] in READ_MODEL:
                problems.append(f"{name}: Seq Scan on {node['Relation Name']}")
        for node in plan:
            if node["Node Type"] == "Index Only Scan" and node.get("Heap Fetches"):
                problems.append(
                    f"{name}: Index Only Scan on {node['Relation Name']} fetched"
                    f" {node['Heap Fetches']} heap tuples"
                )
    return problems


def wait_for_plans(conninfo: str) -> list[str]:
    """Poll until the listings run their intended plans; what was still wrong at give-up."""
    deadline = time.monotonic() + GIVE_UP_S
    while True:
        problems = plan_problems(conninfo)
        if not problems or time.monotonic() > deadline:
            return problems
        time.sleep(1.0)


def test_a_load_with_nothing_open_reaches_the_plans(loaded_db: str) -> None:
    """The baseline: a load with no older snapshot has its plans at once."""
    assert plan_problems(loaded_db) == []


@pytest.mark.parametrize("wait_s", ["1", "60"], ids=["past-the-load's-wait", "within-it"])
def test_a_load_during_an_open_snapshot_reaches_the_plans_once_it_ends(
    loaded_db: str, demo_file: Path, wait_s: str
) -> None:
    """A snapshot (an export's, say) open while the next load commits: once it ends, the
    new generation runs index-only scans with no heap fetches, whether it ended while the
    load still waited for it, or after the load had returned (cron must not hang)."""
    with psycopg.connect(loaded_db) as snapshot:
        snapshot.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        snapshot.execute("SELECT count(*) FROM graph.origin_docs").fetchone()
        if wait_s == "60":
            load = subprocess.Popen(
                [sys.executable, "-m", "registry.cli", "load", str(demo_file)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                cwd=ROOT,
                env={
                    **os.environ,
                    "DATABASE_URL": loaded_db,
                    "REGISTRY_LOAD_VACUUM_WAIT_S": wait_s,
                },
            )
            # The load has committed once generation 2 is recorded; then end the snapshot.
            deadline = time.monotonic() + 300
            with psycopg.connect(loaded_db, autocommit=True) as watch:
                while load.poll() is None and time.monotonic() < deadline:
                    row = watch.execute("SELECT count(*) FROM registry_meta.generations").fetchone()
                    if row and row[0] >= 2:
                        break
                    time.sleep(0.2)
            snapshot.rollback()
            stdout, stderr = load.communicate(timeout=600)
            assert load.returncode == 0, stderr
            # The load itself finished the job once the snapshot ended.
            assert "registry db vacuum" not in stdout, stdout
        else:
            done = registry_load(loaded_db, demo_file, REGISTRY_LOAD_VACUUM_WAIT_S=wait_s)
            assert done.returncode == 0, done.stderr
            # The load returned with pages left, and said who finishes them.
            assert "all-visible; held back by snapshots older than the load" in done.stdout
            assert "registry db vacuum (pid" in done.stdout, done.stdout
            snapshot.rollback()
    with psycopg.connect(loaded_db) as conn:
        live = conn.execute("SELECT generation FROM graph.graph_info").fetchone()
    assert live == (2,)
    problems = wait_for_plans(loaded_db)
    assert problems == [], "\n".join(problems)


def registry_db_vacuum(conninfo: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `registry db vacuum ARGS` as an operator would."""
    return subprocess.run(
        [sys.executable, "-m", "registry.cli", "db", "vacuum", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": conninfo},
        timeout=600,
        check=False,
    )


def test_the_operator_command_says_what_holds_a_generation_back_then_finishes_it(
    loaded_db: str, demo_file: Path
) -> None:
    """A load through the library (which vacuums once and starts nothing) during an open
    snapshot; `registry db vacuum` names the session that holds it back and exits 1 at the
    end of its wait, then, once the snapshot has ended, finishes the generation and exits 0."""
    with psycopg.connect(loaded_db) as snapshot:
        snapshot.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        snapshot.execute("SELECT count(*) FROM graph.origin_docs").fetchone()
        holder = snapshot.info.backend_pid
        with psycopg.connect(loaded_db, autocommit=True) as loader, demo_file.open("rb") as doc:
            result = load_document(loader, doc)
        assert result.read_model is not None and not result.read_model.complete
        held = registry_db_vacuum(loaded_db, "--wait-s", "2")
        assert held.returncode == 1, held.stdout + held.stderr
        assert "generation 2: " in held.stdout
        assert f"held back by snapshots older than the load: session {holder} (" in held.stdout
        assert plan_problems(loaded_db) != []
    done = registry_db_vacuum(loaded_db)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("generation 2: read model all-visible ("), done.stdout
    assert plan_problems(loaded_db) == []
