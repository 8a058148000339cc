"""`registry load` and `registry load --dry-run` and the change set (docs/loading.md, Dry run and
guards), as an operator runs them, with DATABASE_URL set: the command's own entry point in the
test's process (tests/cli.py), and once as a process of its own.

A load prints the counts it committed; a dry run prints the counts a load would commit and
changes nothing observable, which is checked by comparing, before and after, every table's
row count in every schema, every sequence, and `registry status`; the guards against wiping
the registry refuse with exit 1, a line of counts and nothing changed, unless told otherwise.
Documents stay small (a few dozen rows a table), so that autovacuum has no reason to touch
the tables between two snapshots.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from tests.cli import Finished, run_cli

from .graphs import LINE, Record, document, edited, graph_state, load

ROOT = Path(__file__).resolve().parents[2]
PROBLEM_LINE = re.compile(r"line \d+: [^:]+: .+")
KINDS = ("added", "removed", "changed")
BLOCKS = ("origin", "governance", "bans", "presentations")


def registry(conninfo: str, *args: str, env: dict[str, str] | None = None) -> Finished:
    """`registry ARGS` against one database, in this process (tests/cli.py), nothing on
    standard input."""
    # The tests that want a removal limit say so; none leaks in from the caller's shell.
    return run_cli(
        args, {"DATABASE_URL": conninfo, **(env or {})}, unset=["REGISTRY_MAX_REMOVED_PERCENT"]
    )


def registry_process(conninfo: str, *args: str) -> Finished:
    """`registry ARGS` as a process of its own, output piped, nothing on standard input."""
    environment = {k: v for k, v in os.environ.items() if k != "REGISTRY_MAX_REMOVED_PERCENT"}
    environment["DATABASE_URL"] = conninfo
    done = subprocess.run(
        [sys.executable, "-m", "registry.cli", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        cwd=ROOT,
        env=environment,
        timeout=120,
        check=False,
    )
    return Finished(done.returncode, done.stdout.decode(), done.stderr.decode())


def oid(number: int) -> str:
    """The id of test origin `number`."""
    return f"svc:origin:{number:08x}-0000-4000-8000-000000000000"


def uuid_of(number: int) -> str:
    """The uuid of test origin `number`: its id printed with or without svc:origin:."""
    return oid(number).removeprefix("svc:origin:")


def graph(
    numbers: Iterable[int],
    *,
    renamed: Iterable[int] = (),
    governed: Iterable[int] = (),
    moved: Iterable[int] = (),
    provider: Iterable[int] = (),
) -> bytes:
    """Origins by number, each with an edge, an allocation and a carriage; the keyword sets
    change one block each: the name (origin), the edge (governance), the address (bans) and
    the carriage's provider (presentations)."""
    renamed, governed, moved, provider = set(renamed), set(governed), set(moved), set(provider)
    records: list[Record] = [{"type": "catalog", "transports": ["iptv"]}]
    for n in numbers:
        records += [
            {
                "type": "origin",
                "id": oid(n),
                "name": f"Origin {n}" + (" renamed" if n in renamed else ""),
                "network_id": None,
                "registry_id": None,
                "reviewed": True,
            },
            {
                "type": "governance_edge",
                "origin_id": oid(n),
                "governor_id": "svc:domain:one",
                "active": n in governed,
            },
            {
                "type": "allocation",
                "origin_id": oid(n),
                "network": 1,
                "station": 100 if n in moved else 0,
                "channel": n,
                "publication_status": "published",
                "held_at": None,
                "held_reason": None,
            },
            {
                "type": "carriage",
                "id": f"c-{n}",
                "transport": "iptv",
                "provider": "New" if n in provider else "Old",
                "source": None,
                "availability": None,
                "origin_id": oid(n),
            },
        ]
    return document(records)


def write(tmp_path: Path, payload: bytes, name: str = "graph.jsonl") -> str:
    """The document saved to a file; its path."""
    path = tmp_path / name
    path.write_bytes(payload)
    return str(path)


def counted(output: str, word: str) -> set[int]:
    """Every number printed right after `word` (`added 3`, `bans: 1`)."""
    return {int(n) for n in re.findall(rf"(?<![\w:-]){word}:?[ \t]+(\d+)(?![\w.-])", output)}


def snapshot(conninfo: str) -> dict[str, Any]:
    """Every table's row count in every schema, every sequence, the schemas, and `registry
    status` in both forms: what a dry run or a refused load must leave as it found it."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT n.nspname, c.relname FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE c.relkind IN ('r', 'p', 'm') AND c.relispopulated"
            " AND n.nspname NOT IN ('pg_catalog', 'information_schema')"
            " AND n.nspname NOT LIKE 'pg\\_toast%' ORDER BY 1, 2"
        ).fetchall()
        rows = {
            f"{schema}.{table}": conn.execute(
                sql.SQL("SELECT count(*) FROM {}.{}").format(
                    sql.Identifier(schema), sql.Identifier(table)
                )
            ).fetchone()
            for schema, table in tables
        }
        sequences = conn.execute(
            "SELECT schemaname, sequencename, last_value FROM pg_sequences ORDER BY 1, 2"
        ).fetchall()
        schemas = conn.execute("SELECT nspname FROM pg_namespace ORDER BY 1").fetchall()
    status = registry(conninfo, "status")
    status_json = registry(conninfo, "status", "--json")
    assert status.returncode == status_json.returncode == 0, status.stderr + status_json.stderr
    return {
        "rows": rows,
        "sequences": sequences,
        "schemas": schemas,
        "status": status.stdout,
        "status_json": status_json.stdout,
        "graph": graph_state(conninfo),
    }


def loaded(database_factory: Callable[[], str], *payloads: bytes) -> str:
    """A fresh database with the documents loaded in turn."""
    conninfo = database_factory()
    for payload in payloads:
        load(conninfo, payload)
    return conninfo


BASE = range(20)
# From BASE: 12 removed (0-11), 2 added (20, 21), 5 changed: 12 and 13 renamed, 13 and 14
# governed, 15 moved, 16 with another provider; 17-19 the same.
NEXT = graph([*range(12, 22)], renamed=(12, 13), governed=(13, 14), moved=(15,), provider=(16,))
NEXT_COUNTS = {"added": 2, "removed": 12, "changed": 5}
NEXT_BLOCKS = {"origin": 2, "governance": 2, "bans": 1, "presentations": 1}


def test_a_load_prints_the_counts_it_committed(
    database_factory: Callable[[], str], tmp_path: Path
) -> None:
    """The first load adds every origin; the next prints what it added, removed and changed."""
    conninfo = database_factory()
    first = registry(conninfo, "load", write(tmp_path, graph(BASE)))
    assert first.returncode == 0, first.stderr
    assert [counted(first.stdout, kind) for kind in KINDS] == [{20}, {0}, {0}]
    second = registry(conninfo, "load", write(tmp_path, NEXT))
    assert second.returncode == 0, second.stderr
    assert {kind: counted(second.stdout, kind) for kind in KINDS} == {
        kind: {count} for kind, count in NEXT_COUNTS.items()
    }


def test_a_dry_run_prints_the_counts_and_changes_nothing(
    database_factory: Callable[[], str], tmp_path: Path
) -> None:
    """Counts per kind and per block, up to ten ids of each kind, exit 0; every table, every
    sequence and `registry status` as they were, though one generation would be dropped."""
    conninfo = loaded(database_factory, graph(BASE, renamed=(0,)), graph(BASE))
    path = write(tmp_path, NEXT)
    before = snapshot(conninfo)
    done = registry(conninfo, "load", "--dry-run", path, env={"REGISTRY_KEEP_GENERATIONS": "1"})
    assert done.returncode == 0, done.stderr
    assert snapshot(conninfo) == before
    for word, count in (NEXT_COUNTS | NEXT_BLOCKS).items():
        assert counted(done.stdout, word) == {count}, (word, done.stdout)
    for number in (20, 21, 12, 13, 14, 15, 16):
        assert uuid_of(number) in done.stdout
    for number in (17, 18, 19):
        assert uuid_of(number) not in done.stdout  # the same in both: no change
    removed = [number for number in range(12) if uuid_of(number) in done.stdout]
    assert len(removed) == 10, done.stdout
    # the load itself then commits exactly what the dry run said
    real = registry(conninfo, "load", path)
    assert real.returncode == 0, real.stderr
    assert {kind: counted(real.stdout, kind) for kind in KINDS} == {
        kind: counted(done.stdout, kind) for kind in KINDS
    }


def test_dry_runs_take_no_generation_number(
    database_factory: Callable[[], str], tmp_path: Path
) -> None:
    """After dry runs, the next load's generation is the one it would have been without them."""
    conninfo = database_factory()
    first = load(conninfo, graph(BASE)).generation
    assert first is not None
    path = write(tmp_path, NEXT)
    for _ in range(3):
        assert registry(conninfo, "load", "--dry-run", path).returncode == 0
    assert load(conninfo, NEXT).generation == first + 1


BAD_DOCUMENTS = {
    "a field": edited(LINE["origin"], reviewed="yes"),
    "a whole-document rule": graph([1, 1]),
}


def test_a_bad_document_under_dry_run_is_refused_as_a_load_refuses_it(
    database_factory: Callable[[], str], tmp_path: Path
) -> None:
    """The same line-numbered problems and exit 1 as a refused load, and nothing changed."""
    conninfo = loaded(database_factory, graph(BASE))
    for name, payload in BAD_DOCUMENTS.items():
        path = write(tmp_path, payload)
        before = snapshot(conninfo)
        refused = registry(conninfo, "load", path)
        dry = registry(conninfo, "load", "--dry-run", path)
        assert (refused.returncode, dry.returncode) == (1, 1), name
        problems = [line for line in refused.stderr.splitlines() if PROBLEM_LINE.fullmatch(line)]
        assert problems, (name, refused.stderr)
        assert [line for line in dry.stderr.splitlines() if PROBLEM_LINE.fullmatch(line)] == (
            problems
        ), name
        assert "Traceback" not in dry.stderr
        assert snapshot(conninfo) == before, name


def count_line(output: str, *counts: int) -> bool:
    """Whether one line of output gives every one of these counts."""
    return any(
        all(re.search(rf"(?<![\w.:-]){count}(?![\w.-])", line) for count in counts)
        for line in output.splitlines()
    )


EMPTY_DOCUMENTS = {
    "an empty file": b"",
    "no origin record": document([{"type": "catalog", "transports": ["iptv"]}]),
}


def test_a_document_without_origins_is_refused_unless_allowed(
    database_factory: Callable[[], str], tmp_path: Path
) -> None:
    """Exit 1 with the counts and nothing changed, by a load and a dry run; --allow-empty
    lets it through, removing every origin."""
    conninfo = loaded(database_factory, graph(BASE))
    for name, payload in EMPTY_DOCUMENTS.items():
        path = write(tmp_path, payload)
        before = snapshot(conninfo)
        for args in (("load", path), ("load", "--dry-run", path)):
            done = registry(conninfo, *args)
            assert done.returncode == 1, (name, args, done.output)
            # The document's count and the live graph's, both on the refusal's line.
            assert count_line(done.output, 0, 20), done.output
            assert "Traceback" not in done.stderr
            assert snapshot(conninfo) == before, (name, args)
        dry = registry(conninfo, "load", "--dry-run", "--allow-empty", path)
        assert dry.returncode == 0, dry.output
        assert counted(dry.stdout, "removed") == {20}
        assert snapshot(conninfo) == before
    done = registry(conninfo, "load", "--allow-empty", write(tmp_path, b""))
    assert done.returncode == 0, done.output
    assert counted(done.stdout, "removed") == {20}
    assert graph_state(conninfo)["total"] == 0


def test_an_empty_document_on_standard_input_is_refused_in_a_fresh_database(
    database_factory: Callable[[], str],
) -> None:
    """`registry load -` with nothing piped in, as a new user runs it: no generation at all."""
    conninfo = database_factory()
    done = registry_process(conninfo, "load", "-")
    assert done.returncode == 1, done.output
    assert "Traceback" not in done.stderr
    status = registry_process(conninfo, "status", "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["generations"] == []


LIMIT = {"REGISTRY_MAX_REMOVED_PERCENT": "10"}


def test_removing_more_than_the_limit_is_refused_unless_forced(
    database_factory: Callable[[], str], tmp_path: Path
) -> None:
    """With the limit at 10 %: 3 of 20 removed (15 %, whatever is added) is refused by a load
    and a dry run, with the counts and nothing changed; 2 of 20 (10 %) is not more than the
    limit; --force lets a refused load through; unset, there is no limit."""
    conninfo = loaded(database_factory, graph(BASE))
    over = write(tmp_path, graph([*range(3, 20), *range(20, 25)]), "over.jsonl")
    before = snapshot(conninfo)
    for args in (("load", over), ("load", "--dry-run", over)):
        done = registry(conninfo, *args, env=LIMIT)
        assert done.returncode == 1, (args, done.output)
        assert count_line(done.output, 3, 20), done.output
        assert "Traceback" not in done.stderr
        assert snapshot(conninfo) == before, args
    dry = registry(conninfo, "load", "--dry-run", "--force", over, env=LIMIT)
    assert dry.returncode == 0, dry.output
    assert counted(dry.stdout, "removed") == {3}
    assert snapshot(conninfo) == before

    at_limit = registry(conninfo, "load", write(tmp_path, graph(range(2, 20))), env=LIMIT)
    assert at_limit.returncode == 0, at_limit.output
    assert counted(at_limit.stdout, "removed") == {2}

    # now 18 origins (2-19): removing 3 of them (16.7 %) is over the limit again
    over_again = write(tmp_path, graph(range(5, 20)), "again.jsonl")
    refused = registry(conninfo, "load", over_again, env=LIMIT)
    assert refused.returncode == 1, refused.output
    assert count_line(refused.output, 3, 18), refused.output
    assert graph_state(conninfo)["total"] == 18
    forced = registry(conninfo, "load", "--force", over_again, env=LIMIT)
    assert forced.returncode == 0, forced.output
    assert counted(forced.stdout, "removed") == {3}
    assert graph_state(conninfo)["total"] == 15

    unlimited = registry(conninfo, "load", write(tmp_path, graph([19])))
    assert unlimited.returncode == 0, unlimited.output
    assert counted(unlimited.stdout, "removed") == {14}
