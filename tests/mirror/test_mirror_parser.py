"""An export's lines parsed and hashed in a second process (registry/mirror/parser.py,
docs/mirror.md "A step"): the same ids, hashes and errors as in the mirror's own process, in
order; the process ignores the signals a terminal or systemd sends the whole group, and ends
when the mirror closes its pipe, dies (kill -9) or is done with it."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import uuid

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from registry.digest import canonical, canonical_hash, record_hash
from registry.mirror.client import Failed
from registry.mirror.parser import Helper, exported, parsing
from tests.mirror.mirror_run import gone, wait_for


def origin(number: int, name: str) -> dict[str, object]:
    """An Origin-shaped record with a distinct id."""
    return {
        "origin": {"id": f"svc:origin:{uuid.UUID(int=number)}", "name": name},
        "presentations": [],
    }


def lines_of(records: list[dict[str, object]]) -> list[bytes]:
    return [orjson.dumps(record) for record in records]


@pytest.fixture(scope="module")
def helper() -> Helper:
    """One second process for the module (a test that ends it starts its own)."""
    helper = Helper()
    yield helper
    helper.close()


names = st.text(max_size=30)


@settings(max_examples=50, deadline=None)
@given(sizes=st.lists(st.integers(min_value=1, max_value=40), max_size=8), name=names)
def test_the_second_process_parses_as_the_mirror_does(
    helper: Helper, sizes: list[int], name: str
) -> None:
    records = [origin(number, name) for number in range(sum(sizes))]
    lines, batches, start = lines_of(records), [], 0
    for size in sizes:
        batches.append(lines[start : start + size])
        start += size
    apart = list(helper.pipelined(batches))
    with parsing(batches, len(lines), len(lines) + 1) as here:
        assert list(here) == apart
    assert [texts for texts, _ids, _hashes in apart] == batches
    assert [i for _texts, ids, _hashes in apart for i in ids] == [
        record["origin"]["id"]
        for record in records  # type: ignore[index]
    ]
    # The lines as sent are the records' canonical form: their hashes are the records'.
    assert [orjson.loads(line) for line in lines] == records
    assert sum(hashes for _texts, _ids, hashes in apart) == sum(map(record_hash, records))


@settings(max_examples=50, deadline=None)
@given(records=st.lists(st.dictionaries(st.text(max_size=8), st.text(max_size=8)), max_size=6))
def test_a_line_is_hashed_as_sent(records: list[dict[str, str]]) -> None:
    """An export's hash is the SHA-256 of each line's bytes: the record's h when the line is
    its canonical form, another value when it is not (keys unsorted, spaces), which the step
    then settles from the records themselves (tests/mirror/test_copy_steps.py)."""
    lines = [
        orjson.dumps({"origin": {"id": str(number)}, **extra})
        for number, extra in enumerate(records)
    ]
    assert exported(lines, 0) == (
        [str(number) for number in range(len(records))],
        sum(map(canonical_hash, lines)),
    )
    unsorted = b'{"presentations":[],"origin":{"name":"a","id":"svc:origin:1"}}'
    assert exported([unsorted], 0)[1] != record_hash(orjson.loads(unsorted))
    assert exported([canonical(orjson.loads(unsorted))], 0)[1] == record_hash(
        orjson.loads(unsorted)
    )


def parsers() -> set[tuple[str, int | None]]:
    """This process's second processes alive."""
    return {(child.name, child.pid) for child in multiprocessing.active_children()}


def test_an_export_from_the_threshold_on_goes_to_a_second_process() -> None:
    lines = lines_of([origin(1, "a"), origin(2, "b")])
    before = parsers()
    with parsing([lines], 2, 3) as here:
        assert parsers() == before
        assert [ids for _texts, ids, _hashes in here] == [exported(lines, 0)[0]]
    with parsing([lines], 2, 2) as apart:
        assert [name for name, _pid in parsers() - before] == ["registry-mirror-parser"]
        assert [ids for _texts, ids, _hashes in apart] == [exported(lines, 0)[0]]
    assert parsers() == before


def test_a_line_that_is_not_json_is_named_by_its_number_from_the_second_process(
    helper: Helper,
) -> None:
    first = lines_of([origin(number, "x") for number in range(5)])
    second = [*lines_of([origin(5, "y")]), b"{oops", *lines_of([origin(7, "z")])]
    with pytest.raises(Failed, match="line 7 of the body is not JSON"):
        list(helper.pipelined([first, second]))


def test_a_line_without_an_origin_id_is_refused_by_the_second_process(helper: Helper) -> None:
    with pytest.raises(Failed, match=r"an exported line without origin\.id \(line 1\)"):
        list(helper.pipelined([[b'{"origin":{"name":"no id"}}']]))
    with pytest.raises(Failed, match=r"an exported line without origin\.id \(line 2\)"):
        list(helper.pipelined([[lines_of([origin(1, "a")])[0], b'{"origin":{"id":7}}']]))


@pytest.mark.parametrize(
    "line",
    [b'{"origin":{"id":"a","name":"\xff"}}', b'{"origin":{"id":"a"},"x":"\xed\xa0\x80"}'],
)
def test_a_line_that_is_not_utf8_is_named_by_its_number(helper: Helper, line: bytes) -> None:
    """Only the id is decoded, so the rest of a line is checked as UTF-8 on its own: the stores
    take the bytes as they came."""
    good = lines_of([origin(number, "x") for number in range(3)])
    with pytest.raises(Failed, match="line 6 of the body is not UTF-8"):
        list(helper.pipelined([good, [*good[:2], line]]))
    with pytest.raises(Failed, match="line 4 of the body is not UTF-8"):
        exported([line], 3)


def test_the_second_process_ignores_the_signals_sent_to_the_group() -> None:
    helper = Helper()
    try:
        lines = lines_of([origin(1, "a")])
        assert list(helper.pipelined([lines]))  # started, and its handlers set
        for number in (signal.SIGINT, signal.SIGTERM):
            os.kill(helper._process.pid, number)
        assert [ids for _texts, ids, _hashes in helper.pipelined([lines])] == [
            exported(lines, 0)[0]
        ]
    finally:
        helper.close()
    assert helper._process.exitcode == 0


def test_a_second_process_that_dies_fails_the_export_in_words() -> None:
    helper = Helper()
    try:
        lines = lines_of([origin(1, "a")])
        assert list(helper.pipelined([lines]))
        os.kill(helper._process.pid, signal.SIGKILL)
        with pytest.raises(Failed, match="the process parsing the export ended"):
            list(helper.pipelined([lines]))
    finally:
        helper.close()


def test_the_second_process_ends_when_the_mirror_is_killed() -> None:
    """A mirror killed with SIGKILL leaves no second process behind."""
    script = textwrap.dedent(
        """
        import sys, time
        from registry.mirror.parser import Helper
        if __name__ == "__main__":
            helper = Helper()
            list(helper.pipelined([[b'{"origin":{"id":"a"}}']]))
            print(helper._process.pid, flush=True)
            time.sleep(600)
        """
    )
    mirror = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, env={**os.environ}
    )
    assert mirror.stdout is not None
    with mirror.stdout:
        try:
            child = int(mirror.stdout.readline())
            assert not gone(child)
        finally:
            mirror.kill()
            mirror.wait()
    wait_for(lambda: gone(child), f"the second process {child} gone")
