"""Asking again politely (docs/mirror.md, "Politeness"): after `Retry-After` when the
service gives one, else after an exponential back-off, always with jitter so that many
mirrors refused at once do not come back at once; and for a bounded time unless told
otherwise.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from registry.mirror.body import Stopped
from registry.mirror.client import Retryable

T = TypeVar("T")

# The back-off: 0.5 s, doubling, at most 30 s; each wait drawn within ±20 % of its step and
# kept in that range.
FIRST_WAIT_S = 0.5
LONGEST_WAIT_S = 30.0
BACKOFF_JITTER = 0.2
# A Retry-After is waited out, plus up to this share of it.
RETRY_AFTER_JITTER = 0.2
# Without --follow a run that keeps failing gives up after this long (five minutes: a
# gunicorn restart, a failover or a load's minute of 503s are ridden out; a service that is
# down for longer is a cron job's next run's business). --follow retries for as long as it runs.
GIVE_UP_AFTER_S = 300.0


class GaveUp(Exception):
    """Retried for as long as allowed; the last failure says why."""


@dataclass
class Politeness:
    """Runs an attempt until it succeeds, waiting between failures worth retrying."""

    report: Callable[[str], None]
    stop: threading.Event
    # Seconds of retrying before giving up; None: never give up.
    give_up_after: float | None = GIVE_UP_AFTER_S
    chance: random.Random = field(default_factory=random.Random)
    clock: Callable[[], float] = time.monotonic

    def run(self, attempt: Callable[[], T]) -> T:
        """attempt(), again after each Retryable failure, until it returns; raises GaveUp
        past the bound, Stopped when asked to stop while waiting."""
        failures = 0
        first_failure: float | None = None
        while True:
            try:
                return attempt()
            except Retryable as error:
                now = self.clock()
                first_failure = now if first_failure is None else first_failure
                wait = self.wait_after(error, failures)
                failures += 1
                spent = now - first_failure
                if self.give_up_after is not None and spent + wait > self.give_up_after:
                    raise GaveUp(
                        f"gave up after {failures} failed attempt{'s' * (failures > 1)} "
                        f"over {spent:.0f} s "
                        f"(the bound is {self.give_up_after:.0f} s): {error}"
                    ) from error
                self.report(f"waiting {wait:.1f} s before asking again: {error}")
                if self.stop.wait(wait):
                    raise Stopped from error

    def wait_after(self, error: Retryable, failures: int) -> float:
        """How long to wait after the failures-th failure in a row (from 0)."""
        if error.retry_after is not None:
            asked = max(error.retry_after, FIRST_WAIT_S)
            return asked * (1 + self.chance.uniform(0, RETRY_AFTER_JITTER))
        step = min(LONGEST_WAIT_S, FIRST_WAIT_S * 2 ** min(failures, 16))
        drawn = step * (1 + self.chance.uniform(-BACKOFF_JITTER, BACKOFF_JITTER))
        return min(LONGEST_WAIT_S, max(FIRST_WAIT_S, drawn))
