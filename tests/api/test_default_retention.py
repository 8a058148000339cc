"""The default retention of change sets, seen in a real series of loads (docs/api.md,
"Changes between generations": change sets are kept for the newest REGISTRY_KEEP_CHANGES
generations, default 30, and graphs for the newest REGISTRY_KEEP_GENERATIONS, default 2).

32 loads of small graphs, each different, through `registry load` as an operator runs it,
with neither setting in its environment, so the numbers come from the defaults and from
nowhere else. After each load /registry/generations lists the newest 30 change sets (the two
newest readable) and says the oldest since: the first generation while its change set is
kept, and one more load after that (it is then the previous of the oldest change set kept);
from load 32 on, 2. At the edge, since=oldest_since answers and, once it is past the first
generation, since=oldest_since - 1 is the 410 that names it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.api.since_support import new_registry, versioned_graph
from tests.cli import run_cli

LOADS = 32
# docs/api.md's defaults, written out: the test must not read them from the code it checks.
DEFAULT_KEEP_CHANGES = 30
DEFAULT_KEEP_GENERATIONS = 2
UNSET = ("REGISTRY_KEEP_CHANGES", "REGISTRY_KEEP_GENERATIONS")
ORIGINS = 6


def expected_oldest_since(current: int) -> int:
    """docs/api.md's oldest since after `current` loads with the default retention: the
    previous of the oldest kept change set, or the first generation while its change set is
    kept."""
    oldest_kept = max(1, current - DEFAULT_KEEP_CHANGES + 1)
    return max(1, oldest_kept - 1)


def test_thirty_change_sets_are_kept_when_nothing_is_set(
    database_factory: Callable[[], str], tmp_path: Path
) -> None:
    """Load after load, up to 32: the change sets listed, the oldest since and its edge."""
    for registry in new_registry(database_factory):  # the loads are `registry load`'s
        oldest: list[int] = []
        for generation in range(1, LOADS + 1):
            path = tmp_path / f"graph-{generation}.jsonl"
            path.write_bytes(versioned_graph(generation, ORIGINS))
            done = run_cli(
                ["load", str(path)], env={"DATABASE_URL": registry.conninfo}, unset=UNSET
            )
            assert done.returncode == 0, done.output

            listed = registry.get("/registry/generations").get_json()
            assert listed["current"] == generation
            kept = list(range(generation, max(0, generation - DEFAULT_KEEP_CHANGES), -1))
            assert [g["generation"] for g in listed["generations"]] == kept, generation
            readable = [g["generation"] for g in listed["generations"] if g["readable"]]
            assert readable == kept[:DEFAULT_KEEP_GENERATIONS]
            oldest_since = listed["oldest_since"]
            assert oldest_since == expected_oldest_since(generation), generation
            oldest.append(oldest_since)

            answered = registry.get(f"/registry/changes?since={oldest_since}&limit=1")
            assert answered.status_code == 200, (generation, answered.get_data())
            assert answered.get_json()["since"] == oldest_since
            if oldest_since > 1:
                gone = registry.get(f"/registry/changes?since={oldest_since - 1}&limit=1")
                assert gone.status_code == 410, (generation, gone.get_data())
                assert gone.get_json()["details"] == {
                    "since": oldest_since - 1,
                    "oldest_since": oldest_since,
                    "current": generation,
                }
        # The first generation is the oldest since until change set 2 goes, at load 32.
        assert oldest == [1] * 31 + [2]
