"""Pages beside as many exports as the instance allows (docs/export.md, "The limit per
instance"): with REGISTRY_MAX_EXPORTS = 2 of 3 workers, two exports (the origins and the
changes) stream straight from gunicorn to readers that keep reading at 10 KB/s, and
meanwhile every page, lookup and summary is answered 200, and one export more is the 503 at
once, each while both exports still stream.

"None waits past 1 s" is not timed here (no wall-clock bounds in tests): what a request waits
for when it does wait is an export to end, and these exports, read at 10 KB/s, end minutes
later. So each answer is required to come while both exports are still streaming, within the
request's own timeout (30 s): a page or refusal queued behind the exports (every worker
streaming one, or a refused export holding its worker) never answers in time. The stack:
tests/e2e/capacity_stack.py, with short timeouts that steady readers never reach.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from tests.e2e.capacity_stack import (
    ADMIN,
    NDJSON,
    Stack,
    demo_document,
    metric,
    running_stack,
    wait_until_no_export,
)
from tests.e2e.raw_http import request
from tests.e2e.slow_client import SlowClient

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("nginx_installed")]

# About 1.7 MB of origins and 2.2 MB of changes as NDJSON (the earlier origins removed, these
# added): far more than the worker's capped send buffer and a reader's 64 KB window, so each
# export waits on its reader for as long as the test reads.
ORIGINS = 2_000
EARLIER_ORIGINS = 500
LIMIT = 2
# One worker more than exports may stream: the one left for everything else.
WORKERS = LIMIT + 1
# How long the readers read at 10 KB/s while pages are asked: a few seconds is enough for
# every kind of request to be asked several times beside the two exports.
READ_SECONDS = 4
# Between two rounds of requests: pages at a steady pace, not a busy loop beside the readers.
ROUND_PAUSE_S = 0.05
EXPORTS = ("/registry/origins", "/registry/changes")
# What is asked beside the exports, round after round: (name, target, headers, the status
# it must get). Pages and summaries of every kind (a lookup is added by requests_beside), and
# one export past the limit, last.
PAST_THE_LIMIT = "export past the limit"
Asked = tuple[str, str, dict[str, str], int]
REQUESTS: tuple[Asked, ...] = (
    ("origins page", "/registry/origins?limit=2", ADMIN, 200),
    ("search page", "/registry/origins?search=a&limit=2", ADMIN, 200),
    ("registry summary", "/registry/summary", ADMIN, 200),
    ("changes page", "/registry/changes?limit=2", ADMIN, 200),
    ("generations", "/registry/generations", ADMIN, 200),
    ("public summary", "/summary", {}, 200),
    (PAST_THE_LIMIT, EXPORTS[0], NDJSON, 503),
)
NO_ANSWER = "no answer within the request's timeout"


@pytest.fixture(scope="module")
def stack(
    database_factory: Callable[[], str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    """The demo graphs loaded; gunicorn of WORKERS workers streaming at most LIMIT exports."""
    graphs = demo_document(EARLIER_ORIGINS, 4), demo_document(ORIGINS, 3)
    with running_stack(
        database_factory(),
        graphs,
        tmp_path_factory.mktemp("pages-beside-exports"),
        workers=WORKERS,
        settings={"REGISTRY_MAX_EXPORTS": str(LIMIT)},
    ) as running:
        yield running


def status_of(port: int, target: str, headers: dict[str, str]) -> int | str:
    """The status of one request, or NO_ANSWER when its timeout passed first."""
    try:
        return request(port, target, headers=headers).status
    except TimeoutError:
        return NO_ANSWER


def requests_beside(port: int) -> tuple[Asked, ...]:
    """REQUESTS with a lookup of the first origin before the export past the limit."""
    page = request(port, "/registry/origins?limit=1", headers=ADMIN).json()
    lookup = ("origin by id", f"/registry/origins/{page['origins'][0]['origin']['id']}")
    return (*REQUESTS[:-1], (*lookup, ADMIN, 200), REQUESTS[-1])


def one_round(port: int, requests: tuple[Asked, ...]) -> list[tuple[str, int | str]]:
    """Each of requests once: (name, status), up to the first with a status other than its
    own (a request queued behind the exports waits for its timeout: one is enough)."""
    answers: list[tuple[str, int | str]] = []
    for name, target, headers, expected in requests:
        answers.append((name, status_of(port, target, headers)))
        if answers[-1][1] != expected:
            break
    return answers


def test_pages_answer_beside_as_many_exports_as_the_limit_streaming_to_steady_readers(
    stack: Stack,
):
    """LIMIT exports stream to readers at 10 KB/s for a few seconds; every page asked
    meanwhile is a 200 and each export more a 503, each answered while both exports still
    stream; then the readers take the rest, and each export is complete."""
    assert wait_until_no_export(stack)
    port = stack.gunicorn.port
    requests = requests_beside(port)
    # Each worker's first answers (its pool, its caches) come before the exports.
    for _, target, headers, expected in requests[:-1] * WORKERS:
        assert request(port, target, headers=headers).status == expected
    totals = [stack.total(export) for export in EXPORTS]
    readers = [SlowClient(port, export, NDJSON) for export in EXPORTS]
    assert [reader.status for reader in readers] == [200] * LIMIT
    assert [int(reader.head["registry-total"]) for reader in readers] == totals
    # Both stream now (gunicorn sends an answer's head with its first rows); /metrics says so
    # after each round below, a request like the pages.
    stop = threading.Event()
    threads = [
        threading.Thread(target=reader.read_while, args=(lambda: not stop.is_set(),))
        for reader in readers
    ]
    expected = {name: status for name, _, _, status in requests}
    answers: list[tuple[str, int | str]] = []
    # The exports in flight after each round of requests.
    in_flight: list[float] = []
    taken_before = [len(reader.raw) for reader in readers]
    for thread in threads:
        thread.start()
    started = time.monotonic()
    try:
        while time.monotonic() - started < READ_SECONDS:
            answers += one_round(port, requests)
            if any(status != expected[name] for name, status in answers):
                break
            # Both exports streamed before the round and still do: every answer of the round
            # came beside them, none after one ended.
            in_flight.append(metric(stack, "registry_exports_in_flight"))
            if in_flight[-1] != LIMIT:
                break
            time.sleep(ROUND_PAUSE_S)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert [(name, status) for name, status in answers if status != expected[name]] == []
    assert set(in_flight) == {LIMIT}
    # The readers kept reading beside the pages, and neither export had ended.
    assert all(len(reader.raw) > taken for reader, taken in zip(readers, taken_before, strict=True))
    assert not any(reader.body().complete for reader in readers)
    bodies = [reader.read_rest() for reader in readers]
    assert [(body.complete, len(body.lines())) for body in bodies] == [(True, n) for n in totals]
