"""The mirror's waits between attempts (docs/mirror.md, "Politeness"): Retry-After plus up
to 20 %, else a back-off from 0.5 s doubling to 30 s within ±20 %, and a bounded time of
retrying before giving up. Clock and waits are the test's, so nothing sleeps."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from registry.mirror.body import Stopped
from registry.mirror.client import Retryable, retry_after_seconds
from registry.mirror.polite import GaveUp, Politeness


class Waits:
    """A stop event whose waits advance a clock instead of sleeping."""

    def __init__(self, stop_after: int | None = None):
        self.now = 1000.0
        self.waited: list[float] = []
        self.stop_after = stop_after

    def clock(self) -> float:
        """The test's monotonic clock."""
        return self.now

    def wait(self, seconds: float) -> bool:
        """Advance the clock; True (stopped) once stop_after waits were made."""
        self.waited.append(seconds)
        self.now += seconds
        return self.stop_after is not None and len(self.waited) >= self.stop_after


def polite(waits: Waits, give_up_after: float | None, seed: int = 7) -> Politeness:
    """A Politeness on the test's clock and waits."""
    return Politeness(
        report=lambda _line: None,
        stop=waits,  # type: ignore[arg-type]
        give_up_after=give_up_after,
        chance=random.Random(seed),
        clock=waits.clock,
    )


def always(error: Retryable) -> None:
    """An attempt that always fails so."""
    raise error


@pytest.mark.parametrize("seed", range(20))
def test_the_back_off_doubles_from_half_a_second_to_30_within_a_fifth(seed: int) -> None:
    """Twelve failures in a row wait 0.5, 1, 2, ... 30, 30 s, each within ±20 % and never
    under 0.5 s or over 30 s; draws differ from run to run (jitter)."""
    waits = Waits(stop_after=12)
    with pytest.raises(Stopped):
        polite(waits, None, seed).run(lambda: always(Retryable("connection refused")))
    for failures, waited in enumerate(waits.waited):
        step = min(30.0, 0.5 * 2**failures)
        assert max(0.5, step * 0.8) <= waited <= min(30.0, step * 1.2), (failures, waited)
    assert waits.waited[-1] >= 24.0
    other = Waits(stop_after=12)
    with pytest.raises(Stopped):
        polite(other, None, seed + 100).run(lambda: always(Retryable("connection refused")))
    assert other.waited != waits.waited


@pytest.mark.parametrize(("asked", "least"), [(0.0, 0.5), (1.0, 1.0), (7.0, 7.0), (120.0, 120.0)])
def test_retry_after_is_waited_out_plus_up_to_a_fifth(asked: float, least: float) -> None:
    """A Retry-After of n seconds is waited n to 1.2 n (0 counts as the back-off's 0.5 s),
    whatever the back-off has reached."""
    for seed in range(20):
        waits = Waits(stop_after=4)
        with pytest.raises(Stopped):
            polite(waits, None, seed).run(lambda: always(Retryable("503", retry_after=asked)))
        for waited in waits.waited:
            assert least <= waited <= least * 1.2


def test_retrying_gives_up_past_its_bound_and_succeeds_within_it() -> None:
    """With a 300 s bound, failures are retried until the next wait would pass it: GaveUp
    names the last failure. An attempt that succeeds in time returns its value."""
    waits = Waits()
    with pytest.raises(GaveUp, match=r"over \d+ s \(the bound is 300 s\): the service answered"):
        polite(waits, 300.0).run(lambda: always(Retryable("the service answered 502")))
    assert 270 <= sum(waits.waited) <= 300
    tries: list[int] = []

    def third_time_lucky() -> str:
        tries.append(1)
        if len(tries) < 3:
            raise Retryable("cut short")
        return "done"

    assert polite(Waits(), 300.0).run(third_time_lucky) == "done"
    assert len(tries) == 3


def test_a_retry_after_past_the_bound_gives_up_at_once() -> None:
    """A service that asks for an hour, with five minutes allowed: no wait at all."""
    waits = Waits()
    with pytest.raises(GaveUp):
        polite(waits, 300.0).run(lambda: always(Retryable("503", retry_after=3600)))
    assert waits.waited == []


def test_retry_after_is_read_as_seconds_or_a_date() -> None:
    """Seconds, an HTTP-date (seconds from now, 0 when past), or None for anything else."""
    assert retry_after_seconds("120") == 120.0
    assert retry_after_seconds(" 0 ") == 0.0
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=60), usegmt=True)
    assert 55 <= (retry_after_seconds(later) or 0) <= 60
    earlier = format_datetime(datetime.now(UTC) - timedelta(seconds=60), usegmt=True)
    assert retry_after_seconds(earlier) == 0.0
    for unreadable in (None, "", "soon", "-5", "1.5"):
        assert retry_after_seconds(unreadable) is None
