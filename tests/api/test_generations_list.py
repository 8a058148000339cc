"""GET /registry/generations (docs/api.md, The generation list): every
generation whose change set is kept, newest first, each saying whether its graph still is
(readable), the body's oldest since; and validators that change whenever the body does (a drop after
the commit, or a pinned generation whose older ones were dropped, is never a 304 under the old
ETag)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import psycopg
import pytest

from registry.loader import statements
from tests.api.change_graphs import GRAPH_A, GRAPH_B, GRAPH_C
from tests.api.test_changes_since import Chain, body, new_chain
from tests.conftest import document


@pytest.fixture
def kept(database_factory: Callable[[], str]) -> Iterator[Chain]:
    """Two graphs and four change sets kept; A, B, C, A, B loaded (generations 1..5)."""
    yield from new_chain(database_factory, 2, 4, GRAPH_A, GRAPH_B, GRAPH_C, GRAPH_A, GRAPH_B)


def listed(answer: dict) -> list[tuple[int, bool]]:
    """(generation, readable) of each listed generation, in order."""
    return [(row["generation"], row["readable"]) for row in answer["generations"]]


def test_every_kept_change_set_is_listed_newest_first_with_readable(kept: Chain) -> None:
    answer = body(kept, "/registry/generations")
    assert answer["current"] == 5
    assert listed(answer) == [(5, True), (4, True), (3, False), (2, False)]
    assert answer["oldest_since"] == 1
    assert [row["previous"] for row in answer["generations"]] == [4, 3, 2, 1]
    assert answer["generations"][-1]["counts"] == {"added": 1, "removed": 1, "changed": 6}
    pinned = body(kept, "/registry/generations?generation=4")
    assert (pinned["current"], pinned["oldest_since"]) == (4, 1)
    assert listed(pinned) == [(4, True), (3, False), (2, False)]
    # readable is what generation=n does: answered while the graph is kept, 410 after
    assert kept.get("/registry/changes?generation=4").status_code == 200
    assert kept.get("/registry/changes?generation=3").status_code == 410


def test_the_first_generation_lists_itself_as_its_oldest_since(
    database_factory: Callable[[], str],
) -> None:
    for made in new_chain(database_factory, 2, 30, GRAPH_A):
        answer = body(made, "/registry/generations")
        assert (answer["current"], answer["oldest_since"]) == (1, 1)
        assert listed(answer) == [(1, True)]


def test_after_a_drop_an_answer_revalidates_with_its_own_last_modified(kept: Chain) -> None:
    """docs/api.md, Generations and conditional requests: an If-Modified-Since at or after
    Last-Modified gets 304. The list and a history changed after generation 5's commit (its load
    dropped change set 1), so their Last-Modified is that drop, not the commit: a client that sends
    back the Last-Modified it was given gets 304 while nothing changes, never a 200 for ever."""
    origin_id = body(kept, "/registry/origins?limit=1")["origins"][0]["origin"]["id"]
    # A Last-Modified is never later than the answer's Date (RFC 9110 8.8.2.1), and a quick
    # series of loads puts commit times (and the drops after them) ahead of the clock: wait
    # until the second after the last of them has begun.
    with psycopg.connect(kept.conninfo) as conn:
        row = conn.execute(
            "SELECT extract(epoch FROM max(greatest(committed_at, changes_dropped_at))"
            " - clock_timestamp()) FROM registry_meta.generations"
        ).fetchone()
    assert row is not None
    time.sleep(max(0.0, float(row[0])) + 1.1)
    for url in ("/registry/generations", f"/registry/origins/{origin_id}/history"):
        first = kept.get(url)
        assert first.status_code == 200
        again = kept.get(url, {"If-Modified-Since": first.headers["Last-Modified"]})
        assert again.status_code == 304, (
            f"{url}: If-Modified-Since equal to its Last-Modified "
            f"({first.headers['Last-Modified']}) answered {again.status_code}"
        )
        assert again.headers["Last-Modified"] == first.headers["Last-Modified"]


@pytest.fixture
def three(database_factory: Callable[[], str]) -> Iterator[Chain]:
    """Three graphs kept, A, B, C loaded: generations 1, 2 and 3 all readable."""
    yield from new_chain(database_factory, 3, 3, GRAPH_A, GRAPH_B, GRAPH_C)


def drop_oldest_graph(registry: Chain) -> None:
    """What a load's drop does after its commit (here, of generation 1 once 2 are kept)."""
    with psycopg.connect(registry.conninfo, autocommit=True) as conn:
        statements.drop_retired_generations(conn, 2)


def revalidate(registry: Chain, url: str) -> tuple[dict, object]:
    """GET url, then GET it again with its ETag after generation 1's graph is dropped."""
    first = registry.get(url)
    assert first.status_code == 200
    drop_oldest_graph(registry)
    again = registry.get(url, {"If-None-Match": first.headers["ETag"]})
    return first.get_json(), again


def without_time(answer: dict) -> dict:
    """The body without generated_at."""
    return {name: value for name, value in answer.items() if name != "generated_at"}


@pytest.mark.parametrize("url", ["/registry/generations", "/registry/generations?generation=2"])
def test_a_drop_after_the_commit_changes_the_validator(three: Chain, url: str) -> None:
    before, again = revalidate(three, url)
    assert again.status_code == 200, "the body changed, yet the answer was a 304"
    assert without_time(again.get_json()) != without_time(before)
    # and the new validator holds while nothing changes
    current = three.get(url)
    assert current.headers["ETag"] == again.headers["ETag"]
    assert three.get(url, {"If-None-Match": current.headers["ETag"]}).status_code == 304


def test_a_drop_after_the_commit_changes_what_if_modified_since_decides(three: Chain) -> None:
    first = three.get("/registry/generations")
    drop_oldest_graph(three)
    again = three.get(
        "/registry/generations", {"If-Modified-Since": first.headers["Last-Modified"]}
    )
    assert again.status_code == 200


def test_a_load_changes_the_validator_of_a_pinned_list(three: Chain) -> None:
    """A later load drops generation 1's graph and change set (three change sets kept), and
    the pinned answer for generation 2 changes with it."""
    first = three.get("/registry/generations?generation=2")
    three.load(document(GRAPH_A))
    again = three.get(
        "/registry/generations?generation=2", {"If-None-Match": first.headers["ETag"]}
    )
    assert again.status_code == 200, "the body changed, yet the answer was a 304"
    assert listed(again.get_json()) == [(2, True)]
