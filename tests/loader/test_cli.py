"""`registry load` end to end, as an operator runs it: a subprocess with DATABASE_URL set."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import psycopg
import pytest

from registry.database.queries import QUERIES

from .conftest import ServedGraph
from .graphs import BASE, LINE, Record, document, edited, graph_state

ROOT = Path(__file__).resolve().parents[2]
PROBLEM_LINE = re.compile(r"line \d+: [^:]+: .+")


class Finished(NamedTuple):
    """How a command ended: exit status and its decoded output."""

    returncode: int
    stdout: str
    stderr: str


def registry_load(
    conninfo: str, path: str, stdin: bytes | None = None, env: dict[str, str] | None = None
) -> Finished:
    """Run `registry load PATH` against one database, output piped."""
    done = subprocess.run(
        [sys.executable, "-m", "registry.cli", "load", path],
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": conninfo, **(env or {})},
        timeout=60,
        check=False,
    )
    return Finished(done.returncode, done.stdout.decode(), done.stderr.decode())


def write(tmp_path: Path, payload: bytes) -> str:
    """The document saved to a file; its path."""
    path = tmp_path / "graph.jsonl"
    path.write_bytes(payload)
    return str(path)


GENERATION_LINE = re.compile(r"generation (\d+) committed at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
KEPT_LINE = re.compile(r"kept generation (\d+): (\d+) origins, \d+\.\d MB \(committed .+Z\)")


def test_load_succeeds_with_one_summary_line(
    database_factory: Callable[[], str], tmp_path: Path
) -> None:
    """A good document: exit 0, the summary line first, then the generation it produced and
    each kept generation with its disk use; nothing on stderr, the graph served."""
    conninfo = database_factory()
    done = registry_load(conninfo, write(tmp_path, document(BASE)))
    assert (done.returncode, done.stderr) == (0, "")
    summary, produced, against, added, removed, changed, kept = done.stdout.splitlines()
    assert summary.startswith(f"loaded {len(BASE)} lines (")
    first = GENERATION_LINE.fullmatch(produced)
    assert first is not None and KEPT_LINE.fullmatch(kept) is not None
    # docs/api.md, Changes between generations: the counts of the changes it committed; the first
    # generation adds all
    assert (against, added, removed, changed) == (
        "changes (the first generation):",
        "added 2",
        "removed 0",
        "changed 0",
    )
    assert graph_state(conninfo)["total"] == 2
    again = registry_load(conninfo, write(tmp_path, document(BASE)))
    lines = again.stdout.splitlines()
    second = GENERATION_LINE.fullmatch(lines[1])
    assert second is not None and int(second.group(1)) > int(first.group(1))
    assert lines[2:6] == [
        f"changes (against generation {first.group(1)}):",
        "added 0",
        "removed 0",
        "changed 0",
    ]
    kept_now = [KEPT_LINE.fullmatch(line) for line in lines[6:]]
    assert [int(m.group(1)) for m in kept_now if m] == [int(second.group(1)), int(first.group(1))]


def test_bad_document_exits_1_and_changes_nothing(served: ServedGraph, tmp_path: Path) -> None:
    """A bad document: exit 1, `line N: field: problem` on stderr, the old graph intact."""
    line = LINE["origin"]
    done = registry_load(served.conninfo, write(tmp_path, edited(line, reviewed="yes")))
    assert done.returncode == 1
    assert done.stdout == ""
    problems = [text for text in done.stderr.splitlines() if PROBLEM_LINE.fullmatch(text)]
    assert problems and problems[0].startswith(f"line {line}: reviewed: ")
    assert "Traceback" not in done.stderr
    assert graph_state(served.conninfo) == served.state


def test_whole_document_problem_exits_1(served: ServedGraph, tmp_path: Path) -> None:
    """A rule checked by the database reports its line the same way."""
    duplicate: Record = {**BASE[LINE["network"] - 1], "name": "Again"}
    done = registry_load(served.conninfo, write(tmp_path, document([*BASE, duplicate])))
    assert done.returncode == 1
    assert f"line {len(BASE) + 1}: id: " in done.stderr
    assert graph_state(served.conninfo) == served.state


def test_many_problems_list_20_then_a_count(served: ServedGraph, tmp_path: Path) -> None:
    """25 bad lines: 20 problem lines on stderr, then how many more there are."""
    bad = [{**BASE[LINE["origin"] - 1], "reviewed": "no"} for _ in range(25)]
    done = registry_load(served.conninfo, write(tmp_path, document([*BASE, *bad])))
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert sum(1 for text in lines if PROBLEM_LINE.fullmatch(text)) == 20
    assert lines[-1] == "... and 5 more problem(s)"
    assert graph_state(served.conninfo) == served.state


def test_dash_reads_standard_input(database_factory: Callable[[], str]) -> None:
    """`registry load -` takes the document from standard input."""
    conninfo = database_factory()
    done = registry_load(conninfo, "-", stdin=document(BASE))
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith(f"loaded {len(BASE)} lines (")
    assert graph_state(conninfo)["total"] == 2


def test_bad_document_on_standard_input_exits_1(served: ServedGraph) -> None:
    """A bad document on standard input is refused like a bad file."""
    done = registry_load(served.conninfo, "-", stdin=b"[]\n")
    assert done.returncode == 1
    assert "line 1: record: " in done.stderr
    assert graph_state(served.conninfo) == served.state


@pytest.mark.parametrize("name", ["missing.jsonl", "."])
def test_unreadable_path_exits_with_a_clear_message(
    served: ServedGraph, tmp_path: Path, name: str
) -> None:
    """A path that cannot be read: non-zero exit, a message naming it, no traceback."""
    path = str(tmp_path / name)
    done = registry_load(served.conninfo, path)
    assert done.returncode != 0
    assert path in done.stderr
    assert "Traceback" not in done.stderr
    assert graph_state(served.conninfo) == served.state


def test_unreachable_database_exits_with_a_clear_message(tmp_path: Path) -> None:
    """No server at DATABASE_URL: non-zero exit and a message, no traceback."""
    unreachable = "postgresql://postgres@127.0.0.1:1/postgres?connect_timeout=2"
    done = registry_load(unreachable, write(tmp_path, document(BASE)))
    assert done.returncode != 0
    assert "cannot reach the database" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_read_only_session_is_one_clear_message(served: ServedGraph, tmp_path: Path) -> None:
    """The database refuses to write (a read-only role's setting): one line saying so, exit 1,
    no traceback, the graph as it was."""
    done = registry_load(
        served.conninfo,
        write(tmp_path, document(BASE)),
        env={"PGOPTIONS": "-c default_transaction_read_only=on"},
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    [message] = done.stderr.splitlines()
    assert message.startswith("registry load: the database refused the load: cannot execute")
    assert message.endswith("in a read-only transaction (SQLSTATE 25006); nothing changed.")
    assert graph_state(served.conninfo) == served.state


def test_a_statement_over_its_time_is_not_called_unreachable(
    served: ServedGraph, tmp_path: Path
) -> None:
    """Another load holds the load lock past this one's statement_timeout: the message says
    what happened (not "cannot reach the database"), exit 1, the graph as it was."""
    with psycopg.connect(served.conninfo) as holder:
        holder.execute(QUERIES["meta/lock_loads"])
        done = registry_load(
            served.conninfo,
            write(tmp_path, document(BASE)),
            env={"PGOPTIONS": "-c statement_timeout=300"},
        )
        holder.rollback()
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "cannot reach" not in done.stderr
    assert "the database refused the load: canceling statement due to statement timeout" in (
        done.stderr
    )
    assert graph_state(served.conninfo) == served.state


@pytest.mark.parametrize("keep", [1, 3])
def test_keep_generations_in_the_loads_environment_sets_retention(
    database_factory: Callable[[], str], example_document: bytes, tmp_path: Path, keep: int
):
    """REGISTRY_KEEP_GENERATIONS set for the `registry load` process decides what it keeps:
    after four loads, exactly the newest `keep` generations are left, the rest dropped."""
    conninfo = database_factory()
    path = write(tmp_path, example_document)
    for _ in range(4):
        done = registry_load(conninfo, path, env={"REGISTRY_KEEP_GENERATIONS": str(keep)})
        assert done.returncode == 0, done.stderr
    with psycopg.connect(conninfo, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT generation, dropped_at IS NULL FROM registry_meta.generations"
            " ORDER BY generation"
        ).fetchall()
    assert [generation for generation, kept in rows if kept] == list(range(5 - keep, 5))
    assert [generation for generation, kept in rows if not kept] == list(range(1, 5 - keep))


def test_the_dev_demo_keeps_what_the_settings_say(database_factory: Callable[[], str]) -> None:
    """`registry serve --dev` loads its demo and the demo's twin as two loads that keep
    generations and change sets as REGISTRY_KEEP_GENERATIONS and REGISTRY_KEEP_CHANGES say:
    with one of each, the twin's load drops the demo's graph and its change set alike."""
    from registry.serve_command import _load_dev_demo
    from registry.settings import DEFAULTS, settings_from_environ

    environ = {"REGISTRY_KEEP_GENERATIONS": "1", "REGISTRY_KEEP_CHANGES": "1"}
    settings = {**DEFAULTS, **settings_from_environ(environ)}
    conninfo = database_factory()
    with psycopg.connect(conninfo, autocommit=True) as conn:
        _load_dev_demo(conn, 100, settings)
        kept = conn.execute(
            "SELECT generation, dropped_at IS NULL, changes_dropped_at IS NULL"
            " FROM registry_meta.generations ORDER BY generation"
        ).fetchall()
    assert kept == [(1, False, False), (2, True, True)]
