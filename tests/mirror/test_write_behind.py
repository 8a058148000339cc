"""An export's rows written behind its parsing (registry/mirror/behind.py, docs/mirror.md
"A step"): every batch written once and in order, at most DEPTH waiting, the writer's failure
raised to the step, and nothing more written once the step fails."""

from __future__ import annotations

import threading

import pytest

from registry.mirror.behind import DEPTH, write_behind


class Written:
    """A store's insert that records what it is given and can be held or made to fail."""

    def __init__(self, fail_at: int | None = None):
        self.batches: list[int] = []
        self.threads: set[str] = set()
        self.release = threading.Event()
        self.release.set()
        self.writing = threading.Event()
        self.fail_at = fail_at

    def __call__(self, batch: int) -> None:
        self.writing.set()
        self.release.wait(30)
        self.threads.add(threading.current_thread().name)
        if batch == self.fail_at:
            raise ValueError(f"batch {batch} refused")
        self.batches.append(batch)


def test_every_batch_is_written_once_in_order_on_one_other_thread() -> None:
    written = Written()
    with write_behind(written) as behind:
        for batch in range(50):
            behind.put(batch)
    assert written.batches == list(range(50))
    assert written.threads == {"mirror-store-writer"}


def test_at_most_depth_batches_wait_while_one_is_written() -> None:
    """The writer holds its first batch: DEPTH more are taken, the next put waits."""
    written = Written()
    written.release.clear()
    putting = threading.Event()
    with write_behind(written) as behind:
        behind.put(0)
        assert written.writing.wait(30)
        for batch in range(1, DEPTH + 1):
            behind.put(batch)

        def put_one_more() -> None:
            behind.put(DEPTH + 1)
            putting.set()

        more = threading.Thread(target=put_one_more)
        more.start()
        assert not putting.wait(0.3), "a put past DEPTH waiting batches did not wait"
        written.release.set()
        more.join(30)
        assert putting.is_set()
    assert written.batches == list(range(DEPTH + 2))


def test_a_failed_write_is_raised_when_the_block_ends() -> None:
    written = Written(fail_at=3)
    with pytest.raises(ValueError, match="batch 3 refused"), write_behind(written) as behind:
        for batch in range(5):
            behind.put(batch)
    assert written.batches == [0, 1, 2]


def test_a_failed_write_is_raised_at_the_next_put_and_nothing_after_it_is_written() -> None:
    written = Written(fail_at=0)
    put = 0
    with pytest.raises(ValueError, match="batch 0 refused"), write_behind(written) as behind:
        for put in range(1000):
            behind.put(put)
    assert written.batches == []
    assert put < 999, "every put was taken after the writer had failed"


def test_a_step_that_fails_writes_no_batch_still_waiting() -> None:
    """The step raises while the writer holds a batch and DEPTH wait: the held one ends, the
    waiting ones are skipped, and the step's own error is the one raised."""
    written = Written()
    written.release.clear()
    with pytest.raises(KeyboardInterrupt), write_behind(written) as behind:
        behind.put(0)
        assert written.writing.wait(30)
        for batch in range(1, DEPTH + 1):
            behind.put(batch)
        threading.Timer(0.2, written.release.set).start()
        raise KeyboardInterrupt
    assert written.batches == [0]


def test_unthreaded_each_batch_is_written_as_it_is_put_on_the_putting_thread() -> None:
    """A store that inserts on the mirror's own thread (SQLite): nothing waits."""
    written = Written()
    with write_behind(written, threaded=False) as behind:
        for batch in range(5):
            behind.put(batch)
            assert written.batches == list(range(batch + 1))
    assert written.threads == {threading.current_thread().name}
