"""`registry mirror sync` against a real gunicorn over a registry that `registry load` fills:
the copy follows exports, changes since, 304s, 410s and 404s, in a SQLite file and in
PostgreSQL, and is proven by the digest after every step (docs/mirror.md)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.mirror.fault_proxy import Header, Twice
from tests.mirror.mirror_support import graph, held_records, make_target, origin, origin_id, tamper
from tests.mirror.registry_harness import Registry, lines, running_registry

pytestmark = pytest.mark.e2e


@pytest.fixture
def registry(
    gunicorn_factory: Callable[..., Any], database_factory: Callable[[], str]
) -> Iterator[Registry]:
    """A registry keeping 3 change sets, behind the fault proxy."""
    with running_registry(gunicorn_factory, database_factory, keep_changes=3) as running:
        yield running


def status(registry: Registry, target: str) -> dict[str, Any]:
    """`registry mirror status` as the object it prints."""
    done = registry.mirror("status", "--into", target)
    assert done.returncode == 0, done.output
    return dict(orjson.loads(done.stdout))


def proven(registry: Registry, target: str, generation: int) -> None:
    """The copy holds exactly the newest generation's records, and says so."""
    assert held_records(target) == registry.newest()
    shown = status(registry, target)
    assert shown["url"] == registry.proxy.base
    assert (shown["generation"], shown["origins"]) == (generation, len(registry.newest()))
    assert shown["digest"] == registry.newest_digest()


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_the_copy_follows_exports_changes_304s_410s_and_404s(
    registry: Registry, request: pytest.FixtureRequest, tmp_path: Path, kind: str
) -> None:
    """Each step's one line, exit 0, and after it the copy equal to the newest generation."""
    target = make_target(request, tmp_path, kind)
    registry.load(graph(origin(1, "one", 5), origin(2, "two"), origin(3, "three", 2)))
    done = registry.sync(target)
    assert (done.returncode, lines(done)) == (0, ["exported generation 1: 3 origins, digest ok"])
    proven(registry, target, 1)
    # A 200 with no change, whose ETag the next step sends and gets its 304 for.
    assert lines(registry.sync(target)) == ["generation 1: not modified"]
    assert lines(registry.sync(target)) == ["generation 1: not modified"]
    assert [seen.status for seen in registry.proxy.seen[-2:]] == [200, 304]
    assert "If-None-Match" in registry.proxy.seen[-1].headers
    # Changed, removed, added and moved across two loads: the net changes, applied.
    registry.load(graph(origin(1, "one, renamed", 5), origin(3, "three", 9), origin(4, "4")))
    registry.load(graph(origin(1, "one, renamed", 5), origin(3, "three", 1), origin(5, "5")))
    done = registry.sync(target)
    assert (done.returncode, lines(done)) == (0, ["generation 1 -> 3: 4 changes, digest ok"])
    proven(registry, target, 3)
    # Four loads: more than the 3 change sets kept, so since 3 is gone.
    for name in ("a", "b", "c", "d"):
        registry.load(graph(origin(1, name, 5), origin(7, name)))
    done = registry.sync(target)
    assert (done.returncode, lines(done)) == (
        0,
        ["since 3 is gone (410): exporting again", "exported generation 7: 2 origins, digest ok"],
    )
    proven(registry, target, 7)
    # A copy of a generation this registry never produced (another database's).
    tamper(target, "UPDATE mirror SET generation = ?, etag = NULL", 99)
    done = registry.sync(target)
    assert lines(done) == [
        "since 99 is gone (404): exporting again",
        "exported generation 7: 2 origins, digest ok",
    ]
    proven(registry, target, 7)


def test_a_copy_that_drifted_is_rolled_back_and_exported_again(
    registry: Registry, tmp_path: Path
) -> None:
    """A record changed behind the mirror's back, then changed by a load: the step subtracts
    the record the copy really holds, so its digest cannot match; the step is rolled back,
    said so, and an export makes the copy right (exit 0). A 304 is proven too: a mirror row
    whose digest is not the service's exports again."""
    target = str(tmp_path / "copy.sqlite")
    registry.load(graph(origin(1, "one"), origin(2, "two")))
    assert registry.sync(target).returncode == 0
    tamper(target, "UPDATE origins SET record = json_set(record, '$.origin.name', 'x')")
    registry.load(graph(origin(1, "one, renamed"), origin(2, "two, renamed")))
    done = registry.sync(target)
    assert done.returncode == 0, done.output
    first, second = lines(done)
    assert first.startswith("generation 1 -> 2: 2 changes, digest mismatch (copy ")
    assert first.endswith(f", service {registry.newest_digest()}): rolled back, exporting again")
    assert second == "exported generation 2: 2 origins, digest ok"
    proven(registry, target, 2)
    assert lines(registry.sync(target)) == ["generation 2: not modified"]
    tamper(target, "UPDATE mirror SET digest = ?", "0" * 64)
    done = registry.sync(target)
    assert lines(done) == [
        f"generation 2: not modified, digest mismatch (copy {'0' * 64}, "
        f"service {registry.newest_digest()}): rolled back, exporting again",
        "exported generation 2: 2 origins, digest ok",
    ]
    proven(registry, target, 2)


def test_a_second_mismatch_exits_1_with_the_previous_copy_kept(
    registry: Registry, tmp_path: Path
) -> None:
    """A service whose digest disagrees with its own records twice (the changes, then the
    export): both steps rolled back, exit 1, and the copy still the previous generation."""
    target = str(tmp_path / "copy.sqlite")
    registry.load(graph(origin(1, "one"), origin(2, "two")))
    assert registry.sync(target).returncode == 0
    before = held_records(target)
    registry.load(graph(origin(1, "one"), origin(3, "three")))
    wrong = "f" * 64
    registry.proxy.faults = [Header("Registry-Digest", wrong), Header("Registry-Digest", wrong)]
    done = registry.sync(target)
    assert done.returncode == 1
    first, second = lines(done)
    assert first.startswith("generation 1 -> 2: 2 changes, digest mismatch (copy ")
    assert first.endswith(f"service {wrong}): rolled back, exporting again")
    assert second.startswith("registry mirror sync: exported generation 2: 2 origins, digest ")
    assert second.endswith("rolled back; the copy keeps its previous generation")
    assert held_records(target) == before
    assert status(registry, target)["generation"] == 1


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_an_export_naming_an_origin_twice_is_rolled_back(
    registry: Registry, request: pytest.FixtureRequest, tmp_path: Path, kind: str
) -> None:
    """An export whose body holds as many lines as it announced, one origin on two of them:
    exit 1 saying so, and the copy still the previous generation, its id index whole (the
    export's rows are written behind the parsing, and the id index built after them)."""
    target = make_target(request, tmp_path, kind)
    registry.load(graph(origin(1, "one"), origin(2, "two")))
    assert registry.sync(target).returncode == 0
    before = held_records(target)
    registry.load(graph(origin(1, "one"), origin(3, "three"), origin(4, "four")))
    registry.proxy.faults = [Twice()]
    done = registry.sync(target, "--reset")
    assert done.returncode == 1, done.output
    (line,) = lines(done)
    assert line.startswith("registry mirror sync: the export names an origin twice ("), line
    assert line.endswith("): rolled back; the copy keeps its previous generation"), line
    assert held_records(target) == before
    assert status(registry, target)["generation"] == 1
    assert lines(registry.sync(target)) == ["generation 1 -> 2: 3 changes, digest ok"]
    proven(registry, target, 2)


def test_another_url_is_refused_unless_reset(registry: Registry, tmp_path: Path) -> None:
    """A copy of the proxy's URL, synced from gunicorn's own: exit 2 naming both and nothing
    asked of the service; --reset exports the new URL into it."""
    target = str(tmp_path / "copy.sqlite")
    registry.load(graph(origin(1, "one"), origin(2, "two")))
    assert registry.sync(target).returncode == 0
    asked = len(registry.proxy.seen)
    done = registry.sync(target, url=registry.base)
    assert done.returncode == 2
    assert lines(done) == [
        f"registry mirror sync: {target} holds a copy of {registry.proxy.base}, not of "
        f"{registry.base}; --reset replaces it with an export of the new URL"
    ]
    assert status(registry, target)["url"] == registry.proxy.base
    done = registry.sync(target, "--reset", url=registry.base + "/")
    assert lines(done) == ["exported generation 1: 2 origins, digest ok"]
    assert status(registry, target)["url"] == registry.base
    assert held_records(target) == registry.newest()
    assert len(registry.proxy.seen) == asked


def test_the_records_are_stored_as_sent_and_removals_leave_nothing(
    registry: Registry, tmp_path: Path
) -> None:
    """An export stores each line byte for byte; a change stores `after`; a removed origin's
    row is gone, and an emptied registry leaves an empty copy with the empty digest."""
    target = str(tmp_path / "copy.sqlite")
    registry.load(graph(origin(1, "one"), origin(2, 'tw\u00f6 "quoted"\n')))
    assert registry.sync(target).returncode == 0
    with sqlite3.connect(target) as conn:
        stored = dict(conn.execute("SELECT id, record FROM origins").fetchall())
    assert set(stored) == {origin_id(1), origin_id(2)}
    exported = registry.loads.get("/registry/origins", accept="application/x-ndjson")
    sent = [line for line in exported.get_data().split(b"\n") if line]
    assert sorted(stored.values()) == sorted(line.decode() for line in sent)
    registry.load([])
    done = registry.sync(target)
    assert lines(done) == ["generation 1 -> 2: 2 changes, digest ok"]
    assert held_records(target) == {}
    assert status(registry, target)["digest"] == "0" * 64
