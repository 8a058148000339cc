"""A database made by the code before change sets outlived graphs upgrades in place (issue 35,
docs/api.md, Changes between generations and Changes since any generation).

The old code is the real one: a `git worktree` of the parent of the commit that added the
change log's migration (`sql/migrations/004_*.sql`, found with `git log --diff-filter=A`).
Its own `registry load` fills a fresh database twice, and its own app records the answers of its
change sets (docs/api.md, Changes between generations: as JSON, NDJSON and CSV, and
/registry/generations). Then this code runs `registry db upgrade`: every change set answers the
same, /readyz is ready before any new load, and after a new load `since` answers across the old and
the new change sets.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import app_config, document, make_token
from tests.properties.catchup_model import Chain
from tests.properties.change_model import CSV_COLUMNS, csv_row
from tests.properties.model import Record

ROOT = Path(__file__).resolve().parents[2]
MIGRATION = "sql/migrations/004_*.sql"
KEY_SETTINGS = ("REGISTRY_KEEP_GENERATIONS", "REGISTRY_KEEP_CHANGES", "REGISTRY_STATE_DIR")
NDJSON, CSV = "application/x-ndjson", "text/csv"
# What the old code's app answers, run by the old code's Python: JSON on stdout.
SNAPSHOT = """
import json, sys
from app import create_app
config, urls, headers = (json.loads(arg) for arg in sys.argv[1:4])
app = create_app(config)
client = app.test_client()
answers = []
for url, accept in urls:
    response = client.get(url, headers={**headers, **({"Accept": accept} if accept else {})})
    answers.append([response.status_code, response.get_data(as_text=True)])
app.extensions["registry_db"].close()
print(json.dumps(answers))
"""


def git(*args: str) -> str:
    """A git command in this repository; its output."""
    return subprocess.run(
        ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
    ).stdout.strip()


def change_log_commit() -> str:
    """The commit that added the change log's migration."""
    try:
        git("rev-parse", "--git-dir")
    except (subprocess.CalledProcessError, FileNotFoundError):
        pytest.skip("no git history (a source tarball): the code before the change log is not here")
    added = git("log", "--diff-filter=A", "--format=%H", "--", MIGRATION).splitlines()
    if not added and git("rev-parse", "--is-shallow-repository") == "true":
        pytest.skip(f"a shallow clone: the commit that added {MIGRATION} is not in it")
    assert added, f"no commit in this history added {MIGRATION}"
    return added[-1]  # the first that added it


@pytest.fixture
def old_code(tmp_path: Path) -> Iterator[Path]:
    """A worktree of the code just before the change log, removed at the end."""
    folder = tmp_path / "before-change-log"
    git("worktree", "add", "--detach", str(folder), f"{change_log_commit()}^")
    try:
        assert not list((folder / "sql" / "migrations").glob("004_*.sql"))
        yield folder
    finally:
        git("worktree", "remove", "--force", str(folder))


def environment(code: Path, conninfo: str) -> dict[str, str]:
    """The environment of a `registry` command of `code` on one database."""
    env = {k: v for k, v in os.environ.items() if k not in (*KEY_SETTINGS, "DATABASE_URL")}
    return {**env, "PYTHONPATH": str(code), "DATABASE_URL": conninfo}


def registry(code: Path, conninfo: str, *args: str, stdin: bytes | None = None) -> str:
    """`registry ARGS` run by `code`; its output, after checking it succeeded."""
    done = subprocess.run(
        [sys.executable, "-m", "registry.cli", *args],
        cwd=code,
        env=environment(code, conninfo),
        input=stdin,
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


def origin(number: int, name: str) -> Record:
    """An origin record numbered `number`."""
    return {
        "type": "origin",
        "id": f"svc:origin:00000000-0000-4000-8000-{number:012d}",
        "name": name,
        "network_id": None,
        "registry_id": None,
        "reviewed": True,
    }


# 1: origins 1-3; 2: 1 renamed, 2 removed, 4 added; 3 (new code): 2 back, 3 renamed, 4 gone.
DOCUMENTS = [
    [origin(1, "one"), origin(2, "two"), origin(3, "three")],
    [origin(1, "one renamed"), origin(3, "three"), origin(4, "four")],
    [origin(1, "one renamed"), origin(2, "two"), origin(3, "three renamed")],
]


def urls() -> list[tuple[str, str | None]]:
    """The docs/api.md, Changes between generations answers that must survive: each change set,
    every way it is read."""
    found: list[tuple[str, str | None]] = [("/registry/generations", None)]
    for generation in (1, 2):
        url = f"/registry/changes?generation={generation}"
        found += [(url, None), (url, NDJSON), (url, CSV)]
    return found


def without_moment(text: str, accept: str | None) -> Any:
    """An answer's body with the moment it was built left out (JSON), else its text."""
    if accept is not None:
        return text
    body = json.loads(text)
    body.pop("generated_at", None)
    return body


def same_or_widened(old: Any, new: Any) -> None:
    """The new answer says everything the old one said; docs/api.md, Changes since any generation
    may add members to objects."""
    if isinstance(old, dict):
        assert isinstance(new, dict)
        for name, value in old.items():
            same_or_widened(value, new[name])
    elif isinstance(old, list):
        assert isinstance(new, list) and len(new) == len(old)
        for before, after in zip(old, new, strict=True):
            same_or_widened(before, after)
    else:
        assert new == old


def test_a_database_from_before_the_change_log_upgrades_in_place(
    old_code: Path, database_factory: Callable[[], str]
) -> None:
    """The old code loads twice; after `registry db upgrade` every change set answers as
    before, /readyz is ready without a new load, and a new load answers since across both."""
    from app import create_app

    conninfo = database_factory()
    for records in DOCUMENTS[:2]:
        registry(old_code, conninfo, "load", "-", stdin=document(records))
    config = app_config(conninfo)
    headers = {"Authorization": f"Bearer {make_token()}"}
    snapshot = subprocess.run(
        [sys.executable, "-c", SNAPSHOT]
        + [json.dumps(value) for value in (config, urls(), headers)],
        cwd=old_code,
        env=environment(old_code, conninfo),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    before = json.loads(snapshot.stdout.splitlines()[-1])
    assert [status for status, _ in before] == [200] * len(urls())

    registry(ROOT, conninfo, "db", "upgrade")
    app = create_app(config)
    try:
        client = app.test_client()
        ready = client.get("/readyz")
        assert ready.status_code == 200, ready.get_json()
        assert ready.get_json()["ready"] is True
        for (url, accept), (status, text) in zip(urls(), before, strict=True):
            answer = client.get(url, headers={**headers, **({"Accept": accept} if accept else {})})
            assert answer.status_code == status
            old = without_moment(text, accept)
            new = without_moment(answer.get_data(as_text=True), accept)
            same_or_widened(old, new)
        listed = client.get("/registry/generations", headers=headers).get_json()
        assert [entry["readable"] for entry in listed["generations"]] == [True, True]
        assert listed["oldest_since"] == 1
        chain = Chain(keep_generations=2, keep_changes=30)
        for number, records in enumerate(DOCUMENTS[:2], start=1):
            chain.commit(number, records)
        # since answers at once, from the change sets the old code recorded
        for since in (1, 2):
            body = client.get(f"/registry/changes?since={since}", headers=headers).get_json()
            assert body["changes"] == chain.since(since)[1], f"since={since} before a load"

        registry(ROOT, conninfo, "load", "-", stdin=document(DOCUMENTS[2]))
        chain.commit(3, DOCUMENTS[2])
        for since in (1, 2, 3):
            url = f"/registry/changes?since={since}"
            body = client.get(url, headers=headers).get_json()
            expected = chain.since(since)[1]
            assert (body["since"], body["generation"]) == (since, 3)
            assert body["changes"] == expected, f"since={since}"
            table = client.get(url, headers={**headers, "Accept": CSV}).get_data(as_text=True)
            assert table.split("\r\n")[1:-1] == [",".join(csv_row(change)) for change in expected]
            assert table.split("\r\n")[0] == ",".join(CSV_COLUMNS)
        # generation 1's graph is dropped by the new load; its change set is kept
        listed = client.get("/registry/generations", headers=headers).get_json()
        assert [(e["generation"], e["readable"]) for e in listed["generations"]] == [
            (3, True),
            (2, True),
            (1, False),
        ]
        assert listed["oldest_since"] == 1
    finally:
        app.extensions["registry_db"].close()
