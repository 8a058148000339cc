"""The mirror's stores against a real SQLite file and a real PostgreSQL database: a step is
one transaction, the mirror row included, whatever ends it (an error, a second writer, a
process killed with SIGKILL half-way), and readers keep the copy they had meanwhile
(docs/mirror.md, "The store" and "Atomicity")."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import orjson
import psycopg
import pytest
from psycopg.copy import QueuedLibpqWriter

from registry.mirror.postgres_store import QUEUED_BLOCKS, BoundedWriter, PostgresWriter
from registry.mirror.sqlite_store import SqliteStore
from registry.mirror.stores import MirrorRow, NamedTwice, Store, StoreBusy, open_store, shown
from tests.mirror.mirror_support import make_target

ROOT = Path(__file__).resolve().parents[2]
FIRST = MirrorRow("http://registry.example", 1, "1" * 64, 'W/"1-a"', "2026-01-01T00:00:00Z")
SECOND = MirrorRow("http://registry.example", 2, "2" * 64, None, "2026-01-02T00:00:00Z")


def record(number: int, name: str = "one") -> str:
    """An Origin-shaped record as JSON text."""
    return orjson.dumps({"origin": {"id": f"svc:origin:{number}", "name": name}}).decode()


def rows(*numbers: int, name: str = "one") -> list[tuple[str, str]]:
    """(id, record) rows for these numbers."""
    return [(f"svc:origin:{number}", record(number, name)) for number in numbers]


def lines(rows: list[tuple[str, str]]) -> tuple[list[str], list[bytes]]:
    """Rows as an export inserts them: the ids, and the records as the bytes of their
    lines."""
    return [origin_id for origin_id, _ in rows], [text.encode() for _, text in rows]


@pytest.fixture(params=["sqlite", "postgresql"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A TARGET of each kind: a SQLite file not yet made, a fresh PostgreSQL database."""
    return make_target(request, tmp_path, request.param)


def opened(target: str) -> Store:
    """The store, made when missing."""
    store = open_store(target, create=True)
    assert store is not None
    return store


def held(store: Store) -> dict[str, object]:
    """Every record the store holds, decoded, by id; and the mirror row beside them."""
    with store.snapshot() as snapshot:
        found = [orjson.loads(text) for batch in snapshot.records for text in batch]
        return {"row": snapshot.row, **{item["origin"]["id"]: item for item in found}}


def first_copy(store: Store) -> None:
    """Generation 1: origins 1, 2 and 3."""
    with store.step() as writer:
        writer.insert(*lines(rows(1, 2, 3)))
        writer.set_state(FIRST)


def test_no_copy_until_a_step_commits(target: str) -> None:
    """Without create nothing is made; with it the tables are, empty, and a committed step is
    what a new connection reads, the row with it."""
    assert open_store(target, create=False) is None
    assert not Path(target).exists()  # a file is not made; a URL is no path
    store = opened(target)
    assert store.state() is None and store.count() == 0
    first_copy(store)
    store.close()
    again = open_store(target, create=False)
    assert again is not None
    assert again.state() == FIRST and again.count() == 3
    assert set(held(again)) == {"row", "svc:origin:1", "svc:origin:2", "svc:origin:3"}
    again.close()


def test_an_export_is_indexed_by_id_before_anything_else_and_its_commit(target: str) -> None:
    """An export's rows (cleared, inserted) are indexed by id before the step's next
    statement or its commit, whether or not the step asks: a later step's upsert finds them
    by id, and an export naming an id twice is refused whole (SQLite builds its id index
    after an export's rows; PostgreSQL ends the export's COPY)."""
    store = opened(target)
    first_copy(store)
    with store.step() as writer:
        writer.clear()
        writer.insert(*lines(rows(4, 5)))
        writer.insert(*lines(rows(6)))
        assert writer.state() == FIRST
        writer.set_state(SECOND)
    with store.step() as writer:
        writer.upsert(rows(5, name="five"))
    after = held(store)
    assert after["svc:origin:5"] == orjson.loads(record(5, "five"))
    assert sorted(after) == ["row", "svc:origin:4", "svc:origin:5", "svc:origin:6"]
    for twice in ([*rows(7, 8), *rows(7)], [*rows(7)], None):
        with pytest.raises(NamedTwice), store.step() as writer:
            writer.clear()
            writer.insert(*lines(rows(7, 8)))
            writer.insert(*lines(twice or rows(8)))
    assert held(store) == after
    store.close()


def test_a_step_that_raises_leaves_the_previous_copy_whole(target: str) -> None:
    """An export that cleared the copy, wrote the new rows and the new row, then failed (a
    digest mismatch, a cut body): the previous generation, every record and the row."""
    store = opened(target)
    first_copy(store)
    before = held(store)
    with pytest.raises(RuntimeError), store.step() as writer:
        writer.clear()
        writer.insert(*lines(rows(7, 8)))
        writer.set_state(SECOND)
        raise RuntimeError("the body was cut")
    assert held(store) == before and store.state() == FIRST
    store.close()


# Ids and records that COPY's framing and SQLite's text must carry as they are: escapes,
# a backslash, a tab, control characters written as JSON escapes, text beyond ASCII, and
# JSON whitespace (tab, carriage return) between tokens. (No \\u0000: PostgreSQL's text and
# jsonb hold no NUL, so no record the service sends has one.)
AWKWARD = [
    ("svc:origin:tab\tand\\backslash", '{"origin":{"id":"svc:origin:tab\\tand\\\\backslash"}}'),
    ("svc:origin:é☃𝄞", '{"name":"a\\u0001b\\n\\"q\\"","origin":{"id":"svc:origin:é☃𝄞"}}'),
    ("svc:origin:ws", '{"origin":\t{"id":"svc:origin:ws"},\r"x":[ ]}'),
    ("svc:origin:nl\n", '{"origin":{"id":"svc:origin:nl\\n"},"p":"\\\\."}'),
]


def test_an_export_keeps_every_id_and_record_as_they_came(target: str) -> None:
    """An export's rows reach the store unchanged: the ids, and the records byte for byte in
    SQLite, as the same values in PostgreSQL (jsonb keeps values, not text)."""
    store = opened(target)
    with store.step() as writer:
        writer.clear()
        writer.insert(*lines(AWKWARD))
        writer.set_state(FIRST)
        assert sorted(text for batch in writer.records() for text in batch) == sorted(
            text if target.endswith(".sqlite") else _as_jsonb(target, text) for _, text in AWKWARD
        )
    expected = {origin_id: orjson.loads(text) for origin_id, text in AWKWARD}
    assert held(store) == {"row": FIRST, **expected}
    if target.endswith(".sqlite"):
        with sqlite3.connect(target) as conn:
            found = conn.execute("SELECT id, record, typeof(record) FROM origins").fetchall()
        assert sorted(found) == sorted((i, text, "text") for i, text in AWKWARD)
    store.close()


def _as_jsonb(target: str, text: str) -> str:
    """The text PostgreSQL writes for a jsonb value."""
    with psycopg.connect(target) as conn:
        found = conn.execute("SELECT %s::jsonb::text", (text,)).fetchone()
    assert found is not None
    return str(found[0])


def test_held_upsert_and_delete_change_only_the_ids_named(target: str) -> None:
    """held gives the records of the ids the copy holds (none for the others); upsert adds
    or replaces; delete removes and ignores ids not held."""
    store = opened(target)
    first_copy(store)
    with store.step() as writer:
        found = writer.held(["svc:origin:2", "svc:origin:9"])
        assert list(found) == ["svc:origin:2"]
        assert orjson.loads(found["svc:origin:2"]) == orjson.loads(record(2))
        writer.upsert(rows(2, 4, name="two"))
        writer.delete(["svc:origin:1", "svc:origin:9"])
        writer.set_state(SECOND)
    copy = held(store)
    assert copy.pop("row") == SECOND
    assert copy == {
        "svc:origin:2": orjson.loads(record(2, "two")),
        "svc:origin:3": orjson.loads(record(3)),
        "svc:origin:4": orjson.loads(record(4, "two")),
    }
    store.close()


def test_a_second_writer_is_told_the_copy_is_busy(target: str) -> None:
    """While one step is open, another mirror's step on the same copy is refused (StoreBusy)
    and the first still commits."""
    store = opened(target)
    first_copy(store)
    if isinstance(store, SqliteStore):
        other: Store | None = SqliteStore.open(target, create=False, busy_timeout_s=0.1)
    else:
        other = open_store(target, create=False)
    assert other is not None
    with store.step() as writer:
        writer.insert(*lines(rows(4)))
        writer.set_state(SECOND)
        with pytest.raises(StoreBusy), other.step():
            pass
    assert other.state() == SECOND
    other.close()
    store.close()


def test_readers_keep_the_committed_copy_while_a_step_writes(target: str) -> None:
    """A reader of the copy (another connection, as a user's program would be) reads the
    previous generation, unblocked, while a step has replaced it but not committed."""
    store = opened(target)
    first_copy(store)
    with store.step() as writer:
        writer.clear()
        writer.insert(*lines(rows(5)))
        writer.set_state(SECOND)
        if target.endswith(".sqlite"):
            with sqlite3.connect(target, timeout=0.1) as reader:
                ids = [row[0] for row in reader.execute("SELECT id FROM origins ORDER BY id")]
                assert reader.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        else:
            with psycopg.connect(target, autocommit=True) as reader:
                reader.execute("SET lock_timeout = '100ms'")
                ids = [r[0] for r in reader.execute("SELECT id FROM registry_mirror.origins")]
                ids.sort()
        assert ids == ["svc:origin:1", "svc:origin:2", "svc:origin:3"]
    assert store.count() == 1
    store.close()


KILLED_MID_STEP = """
import os, signal, sys
from registry.mirror.sqlite_store import CACHE_KIB
from registry.mirror.stores import MirrorRow, open_store
store = open_store(sys.argv[1], create=True)
with store.step() as writer:
    writer.clear()
    # More than SQLite's page cache holds: the step's pages reach the write-ahead log.
    body = b'{"origin": {"id": "x", "name": "%s"}}' % (b"n" * 1000)
    rows = (CACHE_KIB * 1024 * 3 // 2 // 1000) // 2000 * 2000
    for start in range(0, rows, 2000):
        writer.insert([f"svc:origin:new-{i}" for i in range(start, start + 2000)], [body] * 2000)
    row = MirrorRow("http://registry.example", 2, "2" * 64, None, "2026-01-02T00:00:00Z")
    writer.set_state(row)
    print("written", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_process_killed_mid_step_leaves_the_previous_generation(target: str) -> None:
    """kill -9 after a step cleared the copy, wrote half as much again as SQLite's page cache
    holds (about 100,000 rows) and the new mirror row, before its commit: the next run finds
    generation 1 whole, and can step from it."""
    store = opened(target)
    first_copy(store)
    before = held(store)
    store.close()
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_MID_STEP, target],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert killed.returncode == -9 and killed.stdout == "written\n", killed.stderr
    if target.endswith(".sqlite"):
        # The killed step's rows were in the write-ahead log, uncommitted.
        assert Path(target + "-wal").stat().st_size > 1_000_000
    again = opened(target)
    assert held(again) == before and again.count() == 3
    deadline = time.monotonic() + 10
    while True:  # PostgreSQL ends the dead client's session (and its lock) as it notices
        try:
            with again.step() as writer:
                writer.set_state(SECOND)
            break
        except StoreBusy:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    assert again.state() == SECOND
    again.close()


def files(folder: Path) -> list[str]:
    """The names in a folder."""
    return sorted(path.name for path in folder.iterdir())


def test_a_first_sqlite_step_is_built_beside_the_file_and_renamed_into_place(
    tmp_path: Path,
) -> None:
    """The first step into a file that does not exist writes TARGET.new: until it commits
    there is no copy for anyone to read; then the file is in place, in WAL mode, and the
    next steps are ordinary ones in it."""
    target = tmp_path / "copy.sqlite"
    store = opened(str(target))
    with store.step() as writer:
        writer.clear()
        writer.insert(*lines(rows(1, 2)))
        writer.set_state(FIRST)
        assert files(tmp_path) == ["copy.sqlite.new"]
        assert open_store(str(target), create=False) is None
    assert "copy.sqlite.new" not in files(tmp_path)
    with sqlite3.connect(target) as reader:
        assert reader.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert reader.execute("SELECT count(*) FROM origins").fetchone()[0] == 2
    with store.step() as writer:
        writer.upsert(rows(3))
        writer.set_state(SECOND)
    again = opened(str(target))
    assert again.state() == SECOND and again.count() == 3
    with pytest.raises(NamedTwice), again.step() as writer:  # the id index is there
        writer.upsert(rows(4))
        writer.insert(*lines(rows(4)))
    again.close()
    store.close()


def test_a_first_sqlite_step_that_fails_leaves_no_file(tmp_path: Path) -> None:
    """A first step that raises (a cut body, a digest mismatch, an id twice) leaves nothing:
    no copy, nothing beside it; the next first step starts again."""
    target = str(tmp_path / "copy.sqlite")
    store = opened(target)
    with pytest.raises(RuntimeError), store.step() as writer:
        writer.clear()
        writer.insert(*lines(rows(1, 2)))
        writer.set_state(FIRST)
        raise RuntimeError("the body was cut")
    with pytest.raises(NamedTwice), store.step() as writer:
        writer.clear()
        writer.insert(*lines(rows(1, 1)))
    assert files(tmp_path) == [] and store.state() is None and store.count() == 0
    first_copy(store)
    assert store.state() == FIRST and store.count() == 3
    store.close()


def test_what_a_killed_first_sqlite_step_left_is_started_over(tmp_path: Path) -> None:
    """A TARGET.new (and the log it was switching to) left by a first step killed with
    SIGKILL: the next first step writes over it and renames a whole copy into place."""
    (tmp_path / "copy.sqlite.new").write_bytes(b"not a database " * 1000)
    (tmp_path / "copy.sqlite.new-wal").write_bytes(b"not a log " * 100)
    store = opened(str(tmp_path / "copy.sqlite"))
    assert store.state() is None
    first_copy(store)
    assert set(held(store)) == {"row", "svc:origin:1", "svc:origin:2", "svc:origin:3"}
    assert not any(name.startswith("copy.sqlite.new") for name in files(tmp_path))
    store.close()


def test_a_second_mirror_making_the_same_sqlite_file_is_told_it_is_busy(tmp_path: Path) -> None:
    """Two mirrors that both found no file: while the first makes it, the second's step is
    refused (StoreBusy); afterwards the second steps in the file the first made."""
    target = str(tmp_path / "copy.sqlite")
    store, other = opened(target), opened(target)
    with store.step() as writer:
        writer.insert(*lines(rows(1)))
        writer.set_state(FIRST)
        with pytest.raises(StoreBusy, match="being made by another process"), other.step():
            pass
    with other.step() as writer:
        assert writer.state() == FIRST
        writer.upsert(rows(2))
        writer.set_state(SECOND)
    assert store.state() == SECOND and store.count() == 2
    assert files(tmp_path) == ["copy.sqlite", "copy.sqlite-shm", "copy.sqlite-wal"]
    other.close()
    store.close()


def test_a_postgresql_target_is_shown_without_its_password() -> None:
    """Messages name a PostgreSQL TARGET without its password; a file as given."""
    assert shown("postgresql://mirror:s3cret@db:5432/copy") == "postgresql://mirror@db:5432/copy"
    assert shown("postgresql://db/copy") == "postgresql://db/copy"
    assert shown("copy.sqlite") == "copy.sqlite"


def test_an_export_into_postgresql_queues_a_few_megabytes(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """psycopg's queued COPY writer holds up to 1024 blocks of 32 KB, every one of them the
    mirror's memory while the server is the slower side, as in an export; the store's holds
    QUEUED_BLOCKS (docs/mirror.md, "A step"). psycopg's own queue is looked at too, so that
    a psycopg that renames it fails here instead of queueing 32 MB again."""
    target = make_target(request, tmp_path, "postgresql")
    store = opened(target)
    with store.step() as writer:
        assert isinstance(writer, PostgresWriter)
        writer.clear()
        writer.insert(*lines(rows(1, 2, 3)))
        assert writer._copy is not None
        assert isinstance(writer._copy.writer, BoundedWriter)
        queue = writer._copy.writer._queue
        assert queue.maxsize == QUEUED_BLOCKS
        writer.set_state(FIRST)
    assert set(held(store)) == {"row", "svc:origin:1", "svc:origin:2", "svc:origin:3"}
    store.close()
    with psycopg.connect(target) as conn:
        theirs = QueuedLibpqWriter(conn.cursor())._queue
    assert type(queue) is type(theirs)
    assert theirs.maxsize > QUEUED_BLOCKS
