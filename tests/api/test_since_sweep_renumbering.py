"""A sweep of `since=m` pages while a load drops a change set under it (docs/api.md, "Changes
between generations"): the sweep follows `Link: next` (every link pins since=m and the
generation n of its first page), and between two of its pages a load lands.

Retention keeps 2 graphs and 3 change sets. After generations 1 to 5 the oldest since of 5 is
2. A page since the oldest since is a range of the places (pos) of net_changes (migration
006); a page since any later m walks net_changes by id. Generation 6 drops change set 3
(sql/load/drop_change_set.sql), which raises the oldest since of 5 to 3 and numbers n's rows
since 3 again. So:
- a sweep since 3 begins by id and ends by place, on rows numbered under it: it must still
  yield every net change from 3 to 5 exactly once, as the origins exported while 3 and 5
  were current say;
- a sweep since 2 finds, after the drop, that 2 is older than the oldest since: its next page
  is a 410 saying so, and what it read before is the start of the answer.
Whether the drop happened where the test says is asserted, from /registry/generations.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from tests.api.since_support import SinceRegistry, new_registry, next_page

KEEP_GENERATIONS, KEEP_CHANGES = 2, 3
LIMIT = 20


@pytest.fixture
def registry(database_factory: Callable[[], str]) -> Iterator[SinceRegistry]:
    """Generations 1 to 5 loaded: change sets 3, 4 and 5 kept, so the oldest since is 2."""
    for made in new_registry(database_factory, KEEP_GENERATIONS, KEEP_CHANGES):
        for version in range(1, 6):
            assert made.load(version) == version
        assert made.oldest_since() == made.oldest_since(5) == 2
        yield made


def since_rows(registry: SinceRegistry, generation: int, since: int) -> tuple[int, int, int]:
    """(rows, distinct places, highest place) of generation's net changes that begin at
    since (lo = since): the rows retention numbers 1 to their count (pos, migration 006)
    when since becomes the oldest since."""
    with psycopg.connect(registry.conninfo, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*), count(DISTINCT pos), coalesce(max(pos), 0)"
            " FROM registry_meta.net_changes WHERE generation = %s AND lo = %s",
            (generation, since),
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2])


def check_page(response: Any, since: int, generation: int, total: int) -> list[dict[str, Any]]:
    """A 200 page since `since` answered from `generation`, of `total` net changes in all,
    whose links keep both; its changes."""
    assert response.status_code == 200, response.get_data()
    assert response.headers["Registry-Generation"] == str(generation)
    body = response.get_json()
    assert (body["since"], body["generation"]) == (since, generation)
    assert body["page"]["total"] == total
    following = next_page(response)
    if following is not None:
        assert f"since={since}" in following and f"generation={generation}" in following
    changes: list[dict[str, Any]] = body["changes"]
    return changes


def test_a_sweep_whose_since_becomes_the_oldest_since_reads_each_change_once(
    registry: SinceRegistry,
) -> None:
    """since=3 at 5: two pages by id, then generation 6 drops change set 3, and the rest of
    the sweep reads pages by place (pos) of rows numbered meanwhile."""
    m, n = 3, 5
    expected = registry.net_changes(m, n)
    pages = -(-len(expected) // LIMIT)
    assert pages >= 5
    # Before: 3 is not n's oldest since, and no row since 3 carries a place.
    assert since_rows(registry, n, m)[1:] == (0, 0)

    url: str | None = f"/registry/changes?since={m}&limit={LIMIT}"
    seen: list[dict[str, Any]] = []
    page = 0
    while url is not None:
        if page == 2:
            assert registry.load(6) == 6
            # 3 is now exactly the oldest since of 5 (and of 6): the rest of the sweep reads
            # the rows since 3 by the places the drop gave them.
            assert registry.oldest_since(n) == registry.oldest_since() == m
            assert since_rows(registry, n, m) == (len(expected),) * 3
        response = registry.get(url)
        seen += check_page(response, m, n, len(expected))
        url = next_page(response)
        page += 1
    assert page == pages
    assert len({change["id"] for change in seen}) == len(seen)
    assert seen == expected


def test_a_sweep_whose_since_falls_behind_the_oldest_since_ends_on_a_410(
    registry: SinceRegistry,
) -> None:
    """since=2 at 5, 2 being the oldest since: after its first page generation 6 drops change
    set 3, so the oldest since of 5 is 3 and the next page is the 410 that says so."""
    m, n = 2, 5
    expected = registry.net_changes(m, n)
    assert len(expected) > LIMIT
    first = registry.get(f"/registry/changes?since={m}&limit={LIMIT}")
    seen = check_page(first, m, n, len(expected))
    following = next_page(first)
    assert following is not None

    assert registry.load(6) == 6
    assert registry.oldest_since(n) == registry.oldest_since() == 3

    gone = registry.get(following)
    assert gone.status_code == 410, gone.get_data()
    assert gone.headers["Cache-Control"] == "no-store"
    assert gone.get_json() == {
        "success": False,
        "error": "Changes no longer available",
        "details": {"since": m, "oldest_since": 3, "current": 6},
    }
    assert seen == expected[:LIMIT]
