"""The load's worker processes: the parse in pieces finds exactly what one reader finds, line
for line, and the records rendered in pieces come back as one process renders them."""

from __future__ import annotations

import io
import itertools
import os
import random
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from registry import digest
from registry.loader import parsing, rendering
from registry.loader.demo import write_demo_document
from registry.loader.document import MAX_LINE_BYTES
from registry.loader.loading import MAX_PROBLEMS, LoadRejected
from registry.loader.parsing import parse_document
from registry.loader.progress import LoadProgress
from registry.loader.records import TABLES
from registry.loader.rendering import PARALLEL_FROM, OriginRender
from registry.loader.workers import WorkerFailed, WorkerProcesses, line_ranges

Outcome = tuple[dict[str, int], int, str, int, dict[str, str]]


def outcome(path: Path, workers: int) -> tuple[Outcome, int]:
    """What the parse of path on workers processes found, and into how many pieces it cut it."""
    with open(path, "rb") as stream:
        parsed = parse_document(stream, LoadProgress(), MAX_PROBLEMS, workers, parallel_from=0)
    try:
        rows = {}
        for kind in TABLES:
            text = []
            for spools in parsed.pieces:
                spools[kind].seek(0)
                text.append(spools[kind].read())
            rows[kind] = "".join(text)
        report = LoadRejected(parsed.problems, parsed.problem_count).report()
        if parsed.problem_count:  # a rejected document's rows are never sent
            rows = {}
        found = (parsed.counts, parsed.lines, report, parsed.problem_count, rows)
        return found, len(parsed.pieces)
    finally:
        parsed.close()


def origin(rng: random.Random) -> dict[str, Any]:
    """A valid origin record."""
    return {
        "type": "origin",
        "id": f"svc:origin:{uuid.UUID(int=rng.getrandbits(128), version=4)}",
        "name": rng.choice(["Alpha", "Bêta", "tab\there", "back\\slash"]),
        "network_id": None,
        "registry_id": None,
        "reviewed": rng.random() < 0.5,
    }


CATALOG = orjson.dumps({"type": "catalog", "transports": ["iptv"]})
FEED = orjson.dumps(
    {
        "type": "feed",
        "connected": True,
        "networks": 1,
        "iptv_networks": None,
        "ovp_networks": None,
        "channels": None,
        "programs": None,
        "reviews": None,
        "pending_reviews": None,
    }
)
BAD_LINES = [
    b"not json",
    b"",
    b'{"type": "bogus"}',
    b'{"type": "origin"}',
    b'{"type": "network", "id": "a", "id": "b", "name": null}',
    b"[1, 2]",
    CATALOG,
    FEED,
]


def document(seed: int, lines: int, bad: float) -> bytes:
    """A document of lines records, a share bad of them broken (catalog and feed repeated)."""
    rng = random.Random(seed)
    out = []
    for _ in range(lines):
        if rng.random() < bad:
            out.append(rng.choice(BAD_LINES))
        else:
            out.append(orjson.dumps(origin(rng)))
    return b"\n".join(out) + (b"\n" if seed % 2 else b"")


@pytest.mark.parametrize(
    ("seed", "lines", "bad"),
    [
        pytest.param(1, 400, 0.0, id="valid"),
        pytest.param(2, 400, 0.01, id="few-problems"),
        pytest.param(3, 400, 0.2, id="many-problems"),
        pytest.param(4, 60, 0.5, id="mostly-problems"),
        pytest.param(5, 400, 0.005, id="no-final-newline"),
    ],
)
def test_pieces_find_what_one_reader_finds(tmp_path: Path, seed: int, lines: int, bad: float):
    """Rows, counts, lines, the problem report and its total are the same for 1 to 7 pieces."""
    path = tmp_path / "document.jsonl"
    path.write_bytes(document(seed, lines, bad))
    alone, pieces = outcome(path, 1)
    assert pieces == 1
    for workers in (2, 3, 5):
        found, pieces = outcome(path, workers)
        assert pieces == workers
        assert found == alone, f"{workers} pieces"


@pytest.mark.parametrize(
    "layout",
    [
        pytest.param([[CATALOG], [CATALOG]], id="second-catalog-in-the-next-piece"),
        pytest.param([[], [CATALOG, CATALOG, FEED], [FEED, CATALOG]], id="firsts-in-a-late-piece"),
        pytest.param([[CATALOG, FEED], [FEED], [CATALOG], [FEED, CATALOG]], id="every-piece"),
        pytest.param([[b"bad"] * 30, [CATALOG], [b"bad", CATALOG]], id="past-the-first-20"),
        pytest.param([[CATALOG], [b"bad"] * 25 + [CATALOG]], id="after-a-full-list"),
        pytest.param([[CATALOG], [b"bad"] * 19 + [CATALOG, b"bad"]], id="the-20th-problem"),
    ],
)
def test_one_catalog_and_one_feed_across_pieces(tmp_path: Path, layout: list[list[bytes]]):
    """A catalog or feed record after the first is a problem naming the document's first one,
    wherever the pieces are cut."""
    rng = random.Random(7)
    groups = []
    for extra in layout:
        lines = [orjson.dumps(origin(rng)) for _ in range(40)]
        for line in extra:
            lines.insert(rng.randrange(len(lines) + 1), line)
        groups.append(b"\n".join(lines) + b"\n")
    path = tmp_path / "document.jsonl"
    path.write_bytes(b"".join(groups))
    alone, _ = outcome(path, 1)
    assert alone[3]  # rejected
    for workers in range(2, 6):
        found, _ = outcome(path, workers)
        assert found == alone, f"{workers} pieces"


def test_a_line_too_long_at_a_cut(tmp_path: Path):
    """A line over the limit is one problem on its line, whichever piece holds it."""
    rng = random.Random(3)
    head = b"".join(orjson.dumps(origin(rng)) + b"\n" for _ in range(5))
    long_line = b'{"type": "origin", "name": "' + b"x" * MAX_LINE_BYTES + b'"}\n'
    tail = b"".join(orjson.dumps(origin(rng)) + b"\n" for _ in range(5))
    path = tmp_path / "document.jsonl"
    path.write_bytes(head + long_line + tail + b"\n" + tail)
    alone, _ = outcome(path, 1)
    assert "line 6: record: line too long" in alone[2]
    for workers in range(2, 6):
        found, _ = outcome(path, workers)
        assert found == alone, f"{workers} pieces"


def test_the_demo_document_parses_the_same_in_pieces(tmp_path: Path):
    """A realistic valid document: the same rows, in the same order, from two pieces."""
    out = io.BytesIO()
    write_demo_document(out, origins=300, seed=5)
    path = tmp_path / "demo.jsonl"
    path.write_bytes(out.getvalue())
    alone, _ = outcome(path, 1)
    found, pieces = outcome(path, 2)
    assert pieces == 2
    assert found == alone


def test_small_files_and_streams_are_read_by_one_process(tmp_path: Path):
    """Below the size threshold, and from a stream without a file, there is one piece."""
    path = tmp_path / "small.jsonl"
    path.write_bytes(document(1, 50, 0.0))
    with open(path, "rb") as stream:
        parsed = parse_document(stream, LoadProgress(), MAX_PROBLEMS, workers=2)
    assert len(parsed.pieces) == 1 and parsed.lines == 50
    parsed.close()
    parsed = parse_document(
        io.BytesIO(path.read_bytes()), LoadProgress(), MAX_PROBLEMS, 2, parallel_from=0
    )
    assert len(parsed.pieces) == 1 and parsed.lines == 50
    parsed.close()


def test_line_ranges_cut_after_newlines(tmp_path: Path):
    """Each range starts a line; together they cover the file; a last line is never cut."""
    path = tmp_path / "lines.txt"
    path.write_bytes(b"a\nbb\n\nccc\n" + b"d" * 100)
    size = os.path.getsize(path)
    for parts in range(1, 12):
        ranges = line_ranges(str(path), 0, size, parts)
        assert ranges[0][0] == 0 and ranges[-1][1] == size
        assert all(end == start for (_, end), (start, _) in itertools.pairwise(ranges))
        assert all(path.read_bytes()[start - 1 : start] == b"\n" for start, _ in ranges[1:])
        assert len(ranges) <= min(parts, 5)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.binary(max_size=12), max_size=30),
    st.integers(min_value=1, max_value=16),
    st.lists(st.integers(min_value=1, max_value=20) | st.just(-1), min_size=1, max_size=8),
)
def test_a_piece_reads_the_lines_its_range_holds(
    tmp_path_factory: pytest.TempPathFactory,
    lines: list[bytes],
    block: int,
    sizes: list[int],
) -> None:
    """Read out of blocks (here of 1 to 16 bytes, so lines run across them), a piece gives the
    lines of its range, each cut at the size asked for, as the file's own readline does."""
    content = b"\n".join(lines)
    path = tmp_path_factory.mktemp("piece") / "doc"
    path.write_bytes(b"#" * 3 + content + b"tail")
    start, end = 3, 3 + len(content)
    with open(path, "rb") as file, open(path, "rb") as expected:
        piece = parsing._Piece(file, start, end)
        piece.BLOCK = block
        expected.seek(start)
        read = []
        for size in itertools.cycle(sizes):
            left = end - expected.tell()
            want = expected.readline(left if size < 0 else min(size, left)) if left > 0 else b""
            got = piece.readline(size)
            assert got == want
            assert piece.position == expected.tell()
            read.append(got)
            if not got:
                break
    assert b"".join(read) == content


def test_a_failing_worker_ends_the_load():
    """A worker that raises, or dies without a word, is an error in the loader."""
    with WorkerProcesses() as workers:
        raised = workers.start(int, "not a number")
        died = workers.start(os._exit, 3)
        with pytest.raises(WorkerFailed, match="ValueError"):
            workers.result(raised)
        with pytest.raises(WorkerFailed, match="exit status 3"):
            workers.result(died)


def test_records_rendered_in_pieces_come_back_in_order(tmp_path: Path):
    """Rendered by two workers, the records are what one process renders, in position order,
    each with its own presentations."""
    rng = random.Random(11)
    origins, shown = [], []
    for pos in range(1, 3001):
        name = rng.choice(["Alpha", 'quote " and back\\\\slash', "tab\\there", "Bêta"])
        origins.append(
            "\t".join(
                [str(pos), f"svc:origin:{uuid.UUID(int=rng.getrandbits(128), version=4)}", name]
                + ["\\N"] * 3 + ["f", "0", "f"] + ["\\N"] * 6
            ).encode() + b"\n"
        )  # fmt: skip
        for number in range(rng.choice([0, 0, 1, 3])):
            shown.append(f"{pos}\tc{number}\tiptv\t\\N\t\\N\treachable\n".encode())
    with OriginRender(origins=10, workers=2) as render:  # one process
        Path(render.source).write_bytes(b"".join(origins))
        Path(render.presentations).write_bytes(b"".join(shown))
        render.start()
        expected = b"".join(render.rendered())
        one_process = render.digest
    assert expected.count(b"\n") == 3000
    # The digest is the records' (registry.digest), as stored: COPY's escapes undone.
    stored = [line.split(b"\t", 1)[1].replace(b"\\\\", b"\\") for line in expected.splitlines()]
    assert one_process == digest.as_hex(sum(map(digest.text_hash, stored)))
    assert expected.count(b'"carriage_id"') == len(shown)
    assert b'"name":"tab\\\\there"' in expected  # a tab: JSON's \t, then COPY's \\t
    with OriginRender(origins=PARALLEL_FROM, workers=2) as render:
        Path(render.source).write_bytes(b"".join(origins))
        Path(render.presentations).write_bytes(b"".join(shown))
        render.start()
        assert b"".join(render.rendered()) == expected
        assert render.digest == one_process


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=40), max_size=60), st.integers(0, 45))
def test_the_first_line_of_a_position_is_found(
    tmp_path_factory: pytest.TempPathFactory, positions: list[int], wanted: int
) -> None:
    """The offset found is the one a scan from the start finds, whatever the file's size."""
    path = tmp_path_factory.mktemp("shown") / "presentations.copy"
    lines = [f"{pos}\t{'x' * (pos % 7)}\n".encode() for pos in sorted(positions)]
    path.write_bytes(b"".join(lines))
    scanned = sum(len(line) for line in lines if int(line.split(b"\t")[0]) < wanted)
    assert rendering.first_line_from(str(path), wanted) == scanned


def test_the_first_line_of_a_position_is_found_in_a_large_file(tmp_path: Path) -> None:
    """Past a block's size the search halves the file first; the answer is the same."""
    path = tmp_path / "presentations.copy"
    lines = [
        f"{pos}\tcarriage-{n:020d}\n".encode() for pos in range(1, 60_000) for n in range(pos % 3)
    ]
    path.write_bytes(b"".join(lines))
    assert path.stat().st_size > 2 * (1 << 20)
    for wanted in (0, 1, 2, 17, 29_999, 30_000, 59_998, 59_999, 60_000):
        scanned = sum(len(line) for line in lines if int(line.split(b"\t")[0]) < wanted)
        assert rendering.first_line_from(str(path), wanted) == scanned
