"""`registry mirror sync` gets past what a network and a busy service do, politely, and
never applies a body that is not whole: a real gunicorn behind the fault proxy, which cuts
bodies, ends them short, answers 503, 429 and 500 in its place (docs/mirror.md,
"Politeness")."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_token
from tests.mirror.fault_proxy import Answer, Cut, Short
from tests.mirror.mirror_support import graph, held_records, origin
from tests.mirror.registry_harness import Registry, lines, running_registry

pytestmark = pytest.mark.e2e

WAITED = re.compile(r"waiting (\d+\.\d) s before asking again: (.*)")


@pytest.fixture
def registry(
    gunicorn_factory: Callable[..., Any], database_factory: Callable[[], str]
) -> Iterator[Registry]:
    """A registry of three origins (generation 1) behind the fault proxy."""
    with running_registry(gunicorn_factory, database_factory) as running:
        running.load(graph(origin(1, "one"), origin(2, "two"), origin(3, "three")))
        yield running


def waits(printed: list[str]) -> list[tuple[float, str]]:
    """The waits a run announced, with the failure each followed."""
    return [(float(m[1]), m[2]) for line in printed if (m := WAITED.fullmatch(line))]


def test_cut_and_short_bodies_are_never_applied(registry: Registry, tmp_path: Path) -> None:
    """An export cut without its last chunk, then one ended properly a line short of its
    Registry-Total: each is rolled back and asked again after the back-off; the third is
    applied. Then a body of changes cut the same way: the copy keeps generation 1 until a
    whole one comes."""
    target = str(tmp_path / "copy.sqlite")
    registry.proxy.faults = [Cut(), Short()]
    done = registry.sync(target)
    assert done.returncode == 0, done.output
    printed = lines(done)
    assert printed[-1] == "exported generation 1: 3 origins, digest ok"
    (first, cut), (second, short) = waits(printed)
    assert "the answer was cut short" in cut
    assert short == "the body ended after 2 of the 3 lines it announced"
    # The back-off: 0.5 s, then 1 s, each within 20 %, never under 0.5 s.
    assert 0.5 <= first <= 0.6 and 0.8 <= second <= 1.2
    assert [seen.path for seen in registry.proxy.seen] == ["/registry/origins"] * 3
    assert held_records(target) == registry.newest()

    registry.load(graph(origin(1, "one"), origin(2, "2"), origin(4, "four")))
    registry.proxy.faults = [Cut()]
    assert registry.sync(target).returncode == 0
    assert held_records(target) == registry.newest()


def test_503_and_429_wait_out_retry_after_and_500_backs_off(
    registry: Registry, tmp_path: Path
) -> None:
    """A 500 is asked again after the first back-off (0.5 to 0.6 s); a 503 and a 429 with
    Retry-After: 1 after 1 to 1.2 s, whatever the back-off has reached; then the export
    goes through."""
    target = str(tmp_path / "copy.sqlite")
    registry.proxy.faults = [
        Answer(500, {}, b'{"success": false, "error": "Internal Server Error"}'),
        Answer(503, {"Retry-After": "1"}),
        Answer(429, {"Retry-After": "1"}, b'{"success": false, "error": "Too Many Requests"}'),
    ]
    done = registry.sync(target)
    assert done.returncode == 0, done.output
    (first, broken), (second, unavailable), (third, limited) = waits(lines(done))
    assert broken == "the service answered 500: Internal Server Error"
    assert unavailable == "the service answered 503: Service Unavailable"
    assert limited == "the service answered 429: Too Many Requests"
    assert 0.5 <= first <= 0.6
    assert 1.0 <= second <= 1.2 and 1.0 <= third <= 1.2
    assert lines(done)[-1] == "exported generation 1: 3 origins, digest ok"


def test_a_service_that_stays_unavailable_is_given_up_on(
    registry: Registry, tmp_path: Path
) -> None:
    """503s for longer than --give-up-after: exit 1 naming the last failure, nothing copied."""
    target = str(tmp_path / "copy.sqlite")
    registry.proxy.faults = [Answer(503, {"Retry-After": "1"}) for _ in range(10)]
    done = registry.sync(target, "--give-up-after", "1.5")
    assert done.returncode == 1
    assert lines(done)[-1].startswith("registry mirror sync: gave up after 2 failed attempts")
    assert lines(done)[-1].endswith("the service answered 503: Service Unavailable")
    assert len(registry.proxy.seen) == 2
    assert registry.mirror("status", "--into", target).returncode == 1


@pytest.mark.parametrize(
    ("token", "status", "error"),
    [
        ("not-a-token", 401, "Unauthorized"),
        (make_token(roles=["viewer"]), 403, "Domain admin access required"),
    ],
)
def test_a_refused_token_exits_1_at_once(
    registry: Registry, tmp_path: Path, token: str, status: int, error: str
) -> None:
    """401 and 403 are never asked again: exit 1 with the service's error, one request."""
    target = str(tmp_path / "copy.sqlite")
    done = registry.mirror("sync", "--url", registry.proxy.base, "--into", target, token=token)
    assert done.returncode == 1
    (line,) = lines(done)
    assert line.startswith(f"registry mirror sync: the service refused the token ({status}): ")
    assert error in line
    assert [seen.status for seen in registry.proxy.seen] == [status]
