"""A plain-Python model of catching up (docs/api.md, Changes since any generation and An origin's
history), for the tests of `since` and history.

A chain of committed generations, each with its Origin records (computed by the properties
model from the document loaded, never by the service), and the two retention settings. From
them, in plain loops and exactly in the words of docs/api.md:
- which change sets are kept and the *oldest since*;
- what `GET /registry/changes?since=m` answers: the net changes (the record at m against the
  record at n, as docs/api.md, Changes between generations compares a generation with its previous),
  or a 400, 404 or 410;
- an origin's history: the spans of generations over which its record stayed the same;
- what a consumer does with the answers: the changes since m applied to the export of m.
No import from the service, so that the model cannot inherit its mistakes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.properties.change_model import BLOCKS
from tests.properties.model import Record, RegistryModel, _contract_order

Records = dict[str, Record]  # origin id -> Origin record, as the API answers it


def net_changes(at_m: Records, at_n: Records) -> list[Record]:
    """The net changes from the records at m to the records at n, by origin id in plain
    string order: added (absent at m), removed (absent at n), changed (present at both,
    records differ, with the blocks that differ); absent at both or the same: nowhere."""
    changes: list[Record] = []
    for origin_id in sorted(at_m.keys() | at_n.keys()):
        before, after = at_m.get(origin_id), at_n.get(origin_id)
        if before == after:
            continue  # the same record at both ends, whatever happened in between
        if before is None:
            kind, blocks = "added", []
        elif after is None:
            kind, blocks = "removed", []
        else:
            kind, blocks = "changed", [b for b in BLOCKS if before[b] != after[b]]
        changes.append(
            {"id": origin_id, "kind": kind, "blocks": blocks, "before": before, "after": after}
        )
    return changes


def apply_changes(export: list[Record], changes: list[Record]) -> list[Record]:
    """What a mirror holding `export` (Origin records in listing order) holds once it applies
    `changes`: removed ones gone, changed ones replaced, added ones in, in listing order."""
    held = {record["origin"]["id"]: record for record in export}
    for change in changes:
        if change["kind"] == "removed":
            assert change["id"] in held, f"removed, but not in the mirror: {change['id']}"
            del held[change["id"]]
        elif change["kind"] == "added":
            assert change["id"] not in held, f"added, but already in the mirror: {change['id']}"
            held[change["id"]] = change["after"]
        else:
            assert held.get(change["id"]) == change["before"], f"changed from what? {change}"
            held[change["id"]] = change["after"]
    return sorted(held.values(), key=_contract_order)


def listing_order(records: Records) -> list[Record]:
    """Records in listing order (docs/api.md, Listing origins): what an export of them streams."""
    return sorted(records.values(), key=_contract_order)


@dataclass
class Generation:
    """One committed generation: its number, its previous (None for the first) and records."""

    number: int
    previous: int | None
    records: Records


@dataclass
class Chain:
    """The generations a database committed, oldest first, and what it keeps of them."""

    keep_generations: int
    keep_changes: int
    generations: list[Generation] = field(default_factory=list)

    def commit(self, number: int, document: list[Record]) -> Generation:
        """A load of `document` committed as generation `number`."""
        assert not self.generations or number > self.generations[-1].number
        previous = self.generations[-1].number if self.generations else None
        generation = Generation(number, previous, RegistryModel(document).records)
        self.generations.append(generation)
        return generation

    # --- retention (docs/api.md, Generations and conditional requests and Changes since any
    # generation) --------------------------------------------------------------

    @property
    def current(self) -> int:
        """The newest generation."""
        return self.generations[-1].number

    def produced(self, number: int) -> bool:
        """Whether this database ever committed generation `number`."""
        return any(g.number == number for g in self.generations)

    def changes_kept(self) -> list[Generation]:
        """The generations whose change sets are kept, oldest first: the newest
        REGISTRY_KEEP_CHANGES, raised to REGISTRY_KEEP_GENERATIONS when below it."""
        keep = min(max(self.keep_changes, self.keep_generations), 1000)
        return self.generations[-keep:]

    def readable(self, number: int) -> bool:
        """Whether generation `number`'s graph is kept (generation=n answers)."""
        return number in {g.number for g in self.generations[-self.keep_generations :]}

    def oldest_since(self) -> int:
        """The previous of the oldest kept change set, or the first generation itself when
        that change set is the first generation's."""
        oldest = self.changes_kept()[0]
        return oldest.number if oldest.previous is None else oldest.previous

    def at(self, number: int) -> Records:
        """The records of a generation (the model keeps every one)."""
        return next(g.records for g in self.generations if g.number == number)

    # --- GET /registry/changes?since=m[&generation=n] ------------------------------------

    def since(self, m: int, n: int | None = None) -> tuple[int, Any]:
        """(status, what the answer holds): 200 and the net changes; 400 for an m produced
        newer than n; 404 for an m never produced; 410 for an m older than the oldest since.
        The error bodies are the interface's, whole."""
        n = self.current if n is None else n
        c = self.current
        if not self.produced(m):
            return 404, {
                "success": False,
                "error": "Generation not found",
                "details": {"since": m, "current": c},
            }
        if m > n:
            return 400, None  # details under `since`; their wording is the service's
        oldest = self.oldest_since()
        if m < oldest:
            return 410, {
                "success": False,
                "error": "Changes no longer available",
                "details": {"since": m, "oldest_since": oldest, "current": c},
            }
        return 200, net_changes(self.at(m), self.at(n))

    def generations_listed(self) -> list[dict[str, Any]]:
        """What /registry/generations must list beside its own fields: every generation whose
        change set is kept, newest first, with previous and readable."""
        return [
            {"generation": g.number, "previous": g.previous, "readable": self.readable(g.number)}
            for g in reversed(self.changes_kept())
        ]

    # --- GET /registry/origins/{id}/history -----------------------------------------------

    def history(self, origin_id: str, n: int | None = None) -> list[Record] | None:
        """The versions of an origin up to generation n (newest first), or None for a 404."""
        n = self.current if n is None else n
        kept = [g for g in self.changes_kept() if g.number <= n]
        record = self.at(n).get(origin_id)
        # Walk the kept change sets from n back: each one that changed the origin ends the
        # span of the version after it (from) and begins the one before it (until).
        versions: list[Record] = [{"from": None, "until": None, "origin": record}]
        for generation in reversed(kept):
            before = (
                self.at(generation.previous).get(origin_id)
                if generation.previous is not None
                else None
            )
            after = generation.records.get(origin_id)
            if before == after:
                continue  # not in this generation's change set
            assert versions[-1]["origin"] == after
            versions[-1]["from"] = generation.number
            versions.append({"from": None, "until": generation.number, "origin": before})
        # The oldest version is never null: absence before an addition is not a version
        # unless a kept removal began it (and then the walk already gave it its `from`).
        if versions[-1]["origin"] is None:
            versions.pop()
        if not versions:
            return None  # absent at n and in no kept change set up to n
        return versions
