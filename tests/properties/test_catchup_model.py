"""The catching-up model (catchup_model.py) on chains worked out by hand from docs/api.md, Changes
since any generation, so that the oracle of the property tests is itself checked against the words
of docs/api.md."""

from __future__ import annotations

from tests.properties.catchup_model import Chain, Generation, apply_changes, net_changes
from tests.properties.model import Record

X, Y, Z = "svc:origin:x", "svc:origin:y", "svc:origin:z"


def record(origin_id: str, name: str, station: int | None = None) -> Record:
    """A minimal Origin record: a name, and an allocation at 1.<station>.0 or none."""
    bans: Record = {"allocated": station is not None, "network": None, "station": None}
    if station is not None:
        bans.update(network=1, station=station, channel=0)
    return {
        "origin": {"id": origin_id, "name": name},
        "governance": {"state": "ungoverned"},
        "bans": bans,
        "presentations": [],
    }


def chain(keep_generations: int, keep_changes: int, states: list[dict[str, Record]]) -> Chain:
    """Generations 1, 2, ... holding these records."""
    made = Chain(keep_generations, keep_changes)
    for number, records in enumerate(states, start=1):
        made.generations.append(Generation(number, number - 1 or None, records))
    return made


A, B = record(X, "a"), record(X, "b")
# x: added in 1, changed in 2, removed in 3, back as in 1 in 4, changed in 5; y untouched.
STATES = [
    {X: A, Y: record(Y, "y")},
    {X: B, Y: record(Y, "y")},
    {Y: record(Y, "y")},
    {X: A, Y: record(Y, "y")},
    {X: B, Y: record(Y, "y"), Z: record(Z, "z", 3)},
]


def test_net_changes_compare_the_two_ends_only() -> None:
    """Changed and changed back, removed and re-added the same: nowhere; the blocks that
    differ, before and after from the two ends."""
    model = chain(2, 10, STATES)
    assert model.since(1, 4) == (200, [])
    assert model.since(2, 3)[1] == [
        {"id": X, "kind": "removed", "blocks": [], "before": B, "after": None}
    ]
    changes = model.since(3)[1]
    assert [(c["id"], c["kind"]) for c in changes] == [(X, "added"), (Z, "added")]
    assert model.since(4)[1][0] == {
        "id": X,
        "kind": "changed",
        "blocks": ["origin"],
        "before": A,
        "after": B,
    }
    assert model.since(5) == (200, [])
    assert net_changes({}, {}) == []


def test_retention_oldest_since_and_errors() -> None:
    """Kept change sets are the newest REGISTRY_KEEP_CHANGES (raised to the generations kept);
    the oldest since is the previous of the oldest, or the first generation itself."""
    assert chain(2, 3, STATES).oldest_since() == 2
    assert chain(2, 5, STATES).oldest_since() == 1  # the first generation's set is kept
    assert chain(2, 9, STATES[:1]).oldest_since() == 1
    assert chain(4, 1, STATES).oldest_since() == 1  # raised to 4: sets of 2..5 kept
    model = chain(2, 3, STATES)
    assert model.since(1)[0] == 410
    assert model.since(1)[1]["details"] == {"since": 1, "oldest_since": 2, "current": 5}
    assert model.since(2)[0] == 200
    assert model.since(6)[1]["details"] == {"since": 6, "current": 5}
    assert model.since(5, 4)[0] == 400
    assert [g["readable"] for g in model.generations_listed()] == [True, True, False]


def test_history_spans_and_retention() -> None:
    """Versions newest first; from/until meet; a null version only after a removal; the
    oldest never null; from null where no kept change set shows the start."""
    whole = chain(2, 10, STATES)
    assert whole.history(X) == [
        {"from": 5, "until": None, "origin": B},
        {"from": 4, "until": 5, "origin": A},
        {"from": 3, "until": 4, "origin": None},
        {"from": 2, "until": 3, "origin": B},
        {"from": 1, "until": 2, "origin": A},
    ]
    assert whole.history(Y) == [{"from": 1, "until": None, "origin": record(Y, "y")}]
    assert whole.history(X, 3) == [
        {"from": 3, "until": None, "origin": None},
        {"from": 2, "until": 3, "origin": B},
        {"from": 1, "until": 2, "origin": A},
    ]
    cut = chain(2, 2, STATES)  # the change sets of 4 and 5 only
    assert cut.history(X) == [
        {"from": 5, "until": None, "origin": B},
        {"from": 4, "until": 5, "origin": A},
    ]
    assert cut.history(Y) == [{"from": None, "until": None, "origin": record(Y, "y")}]
    assert chain(2, 3, STATES).history(X)[-1] == {"from": None, "until": 3, "origin": B}
    assert chain(1, 1, STATES[:3]).history(X) == [
        {"from": 3, "until": None, "origin": None},
        {"from": None, "until": 3, "origin": B},
    ]
    assert chain(2, 1, STATES[:4]).history(Z) is None


def test_applying_changes_rebuilds_the_newer_listing() -> None:
    """The mirror's rule: removed out, changed replaced, added in, listing order."""
    model = chain(2, 10, STATES)
    mirror = apply_changes([STATES[2][Y]], model.since(3)[1])
    assert mirror == [STATES[4][Z], STATES[4][X], STATES[4][Y]]
