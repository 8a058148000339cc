"""`registry demo --changes F`: the seed's document with a fraction F of its origins changed.

The twin is written by the demo's own writer from the same plan and the same draws, so it is
`registry demo`'s document for the same origins and seed, record for record, except for
round(F x origins) origins (at least one), chosen and altered with draws of their own:

- a quarter (rounded down) are **removed**: the origin, its governance edges, its allocation
  and the carriages naming it; its unresolved carriages stay;
- a quarter are **added**: each just after a seed origin and in that origin's network, drawn
  like the demo's later origins, with carriage ids of their own (`<prefix>twin-<n>`) and any
  allocation at a free address;
- the rest are **changed**, in exactly one block each, the four blocks taking turns
  (origin, governance, bans, presentations), and each block's ways of changing taking turns
  within it:
  - `origin`: the origin renamed (" Plus" appended); every second time, while there are
    networks of a single origin, such an origin's network renamed instead ("<brand>
    Partners"), which changes that origin and no other;
  - `governance`: an edge flipped active/inactive, or an active edge added (always when the
    origin has none);
  - `bans`: the allocation moved to a free address, dropped, or its publication status
    changed (published to unpublished, unpublished or held to published); an origin
    without an allocation gets one (published, at a free address);
  - `presentations`: a resolved carriage's availability changed, or a carriage added (an
    unreviewed origin becomes reviewed, so the new carriage is a presentation).

Each change alters what the API answers in its block, and no other block, so the change set
of loading the twin over the seed's document is exactly `TwinDocument.changes` and
`TwinDocument.blocks`. A free address is station 0 of the allocation's own network number:
the demo's stations start at 1, and each free address takes the next channel, so addresses
stay unique. Every draw comes from random.Random seeded with (seed, F): the same origins,
seed and F give the same bytes.
"""

from __future__ import annotations

import io
import random
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from registry.loader.demo import (
    AVAILABILITY_TABLE,
    CARRIAGE_ID_PREFIXES,
    NETWORKLESS_ADDRESS,
    SHOWCASE,
    SOURCE_TABLE,
    TRANSPORT_TABLE,
    DemoWriter,
    Network,
    origin_slots,
    write_planned,
)
from registry.loader.progress import LoadProgress
from schemas.changes import BLOCKS, KINDS

# The governor of the edges the twin adds: no demo origin has it.
TWIN_GOVERNOR = "svc:domain:twin-review-board"

Record = dict[str, Any]
Lines = list[tuple[str, Record]]


def check_fraction(fraction: float) -> float:
    """fraction itself when 0 < fraction <= 1; ValueError otherwise (NaN included)."""
    if not 0 < fraction <= 1:
        raise ValueError(
            f"the fraction of origins changed must be above 0 and at most 1, not {fraction}"
        )
    return fraction


@dataclass
class TwinPlan:
    """Which seed origins (by index in document order) the twin removes, changes or follows
    with an added origin, and which networks it renames."""

    removed: set[int] = field(default_factory=set)
    # index -> (way, turn): way is a block name, or "network" (the origin block, through its
    # network's name); turn counts that block's changes, to take turns between its ways.
    changed: dict[int, tuple[str, int]] = field(default_factory=dict)
    added_after: set[int] = field(default_factory=set)
    renamed_networks: set[int] = field(default_factory=set)


@dataclass(frozen=True)
class TwinDocument:
    """What write_twin_document wrote: records per type, origins per kind of change, and the
    changed origins per block (each changed origin differs in exactly one block)."""

    counts: dict[str, int]
    changes: dict[str, int]
    blocks: dict[str, int]


def plan_twin(plan_seed: int, origins: int, fraction: float, rng: random.Random) -> TwinPlan:
    """Choose the origins the twin of the demo planned by plan_seed removes, changes, adds."""
    total = max(1, round(origins * fraction)) if origins else 0
    removing = adding = total // 4
    changing = total - removing - adding
    turns = [(BLOCKS[number % 4], number // 4) for number in range(changing)]
    # Origins alone in their network, whose network's name can change only them.
    singles = [
        (index, network.serial)
        for index, (network, _) in enumerate(origin_slots(plan_seed, origins))
        if network is not None and network.size == 1
    ]
    by_network = sum(1 for block, turn in turns if block == "origin" and turn % 2 == 1)
    networks = rng.sample(singles, min(by_network, len(singles)))
    taken = {index for index, _ in networks}
    drawn = rng.sample(range(origins), removing + changing)
    others = [index for index in drawn if index not in taken][: len(drawn) - len(networks)]
    plan = TwinPlan(removed=set(others[:removing]))
    rest, network_picks = iter(others[removing:]), iter(networks)
    for block, turn in turns:
        pick = next(network_picks, None) if block == "origin" and turn % 2 == 1 else None
        if pick is not None:
            plan.changed[pick[0]] = ("network", turn)
            plan.renamed_networks.add(pick[1])
        else:
            plan.changed[next(rest)] = (block, turn)
    plan.added_after = set(rng.sample(range(origins), adding))
    return plan


class _Newcomers(DemoWriter):
    """Draws the added origins (and their records) from the twin's generator, keeping them."""

    def __init__(self, rng: random.Random):
        """Nothing written: emit keeps the records in `captured`."""
        super().__init__(io.BytesIO(), rng)
        self.origin_index = SHOWCASE  # drawn like the demo's later origins
        self.captured: Lines = []

    def emit(self, kind: str, record: Record) -> None:
        """Keep the record."""
        self.captured.append((kind, record))


class TwinWriter(DemoWriter):
    """The demo's writer, each origin's records held back and altered as the plan says."""

    def __init__(self, out: BinaryIO, rng: random.Random, plan: TwinPlan, twin: random.Random):
        """Write to out what the demo draws from rng, altered with draws from twin."""
        super().__init__(out, rng)
        self.plan = plan
        self.twin = twin
        self.newcomers = _Newcomers(twin)
        self.held: Lines | None = None
        self.free_channels = 0
        self.twin_carriages = 0

    def emit(self, kind: str, record: Record) -> None:
        """Hold the record while an origin is being written; else write it."""
        if self.held is None:
            super().emit(kind, record)
        else:
            self.held.append((kind, record))

    def network(self, network: Network) -> None:
        """The network record, renamed when the plan says so."""
        if network.serial in self.plan.renamed_networks:
            network = network._replace(name=f"{network.brand} Partners")
        super().network(network)

    def origin(self, network: Network | None, position: int) -> None:
        """The seed's origin as the plan leaves it, then any origin added after it."""
        index = self.origin_index
        self.held = []
        super().origin(network, position)
        lines, self.held = self.held, None
        if index in self.plan.removed:
            lines = [line for line in lines if line[0] == "carriage" and not line[1]["origin_id"]]
        elif index in self.plan.changed:
            self.change(lines, network, *self.plan.changed[index])
        if index in self.plan.added_after:
            lines += self.newcomer(network)
        for kind, record in lines:
            self.emit(kind, record)

    def newcomer(self, network: Network | None) -> Lines:
        """An added origin in network: drawn afresh, with carriage ids and an address of its own."""
        self.newcomers.captured = []
        self.newcomers.origin(network, 0)
        for kind, record in self.newcomers.captured:
            if kind == "allocation":
                self.free_address(record)
            elif kind == "carriage":
                self.twin_carriages += 1
                record["id"] = f"{record['id'].rstrip('0123456789')}twin-{self.twin_carriages:08d}"
        return self.newcomers.captured

    def free_address(self, allocation: Record) -> None:
        """Move allocation to station 0 of its network number, at the next unused channel."""
        allocation["station"] = 0
        allocation["channel"] = self.free_channels
        self.free_channels += 1

    def change(self, lines: Lines, network: Network | None, way: str, turn: int) -> None:
        """Alter one origin's lines in place so that exactly the block of `way` differs."""
        origin = lines[0][1]
        edges = [record for kind, record in lines if kind == "governance_edge"]
        after_edges = 1 + len(edges)
        allocation = next((record for kind, record in lines if kind == "allocation"), None)
        if way == "origin":
            origin["name"] = f"{origin['name']} Plus"
        elif way == "governance":
            if edges and turn % 2 == 0:
                edges[0]["active"] = not edges[0]["active"]
            else:
                edge = {"origin_id": origin["id"], "governor_id": TWIN_GOVERNOR, "active": True}
                lines.insert(after_edges, ("governance_edge", {"type": "governance_edge", **edge}))
        elif way == "bans":
            self.change_bans(lines, origin, network, allocation, turn)
        elif way == "presentations":
            named = [record for kind, record in lines if kind == "carriage" and record["origin_id"]]
            if origin["reviewed"] and named and turn % 2 == 1:
                reachable = named[0]["availability"] == "reachable"
                named[0]["availability"] = "degraded" if reachable else "reachable"
            else:
                origin["reviewed"] = True
                lines.append(("carriage", self.new_carriage(origin["id"])))

    def change_bans(
        self,
        lines: Lines,
        origin: Record,
        network: Network | None,
        allocation: Record | None,
        turn: int,
    ) -> None:
        """Move, drop or republish the allocation; give one to an origin without."""
        if allocation is None:
            record: Record = {
                "type": "allocation",
                "origin_id": origin["id"],
                "network": NETWORKLESS_ADDRESS if network is None else network.address,
                "station": 0,
                "channel": 0,
                "publication_status": "published",
                "held_at": None,
                "held_reason": None,
            }
            self.free_address(record)
            edges = sum(1 for kind, _ in lines if kind == "governance_edge")
            lines.insert(1 + edges, ("allocation", record))
        elif turn % 3 == 0:
            self.free_address(allocation)
        elif turn % 3 == 1:
            lines.remove(("allocation", allocation))
        elif allocation["publication_status"] == "published":
            allocation["publication_status"] = None
        else:
            allocation.update(publication_status="published", held_at=None)
            if "held_reason" in allocation:
                allocation["held_reason"] = None

    def new_carriage(self, origin_id: str) -> Record:
        """A carriage naming origin_id, on a transport of the catalog, with a twin id."""
        draw = self.twin.random
        transport = TRANSPORT_TABLE[int(draw() * len(TRANSPORT_TABLE))]
        choices = CARRIAGE_ID_PREFIXES[transport]
        provider, prefix = choices[int(draw() * len(choices))]
        self.twin_carriages += 1
        return {
            "type": "carriage",
            "id": f"{prefix}twin-{self.twin_carriages:08d}",
            "transport": transport,
            "provider": provider,
            "source": SOURCE_TABLE[int(draw() * len(SOURCE_TABLE))],
            "availability": AVAILABILITY_TABLE[int(draw() * len(AVAILABILITY_TABLE))],
            "origin_id": origin_id,
        }


def write_twin_document(
    out: BinaryIO,
    origins: int = 10_000,
    seed: int = 1,
    fraction: float = 0.02,
    progress: LoadProgress | None = None,
) -> TwinDocument:
    """Write the changed twin of the demo document of (origins, seed) to out; what it holds."""
    if origins < 0:
        raise ValueError(f"origins must be at least 0, not {origins}")
    check_fraction(fraction)
    rng = random.Random(seed)
    plan_seed = rng.getrandbits(64)
    twin = random.Random(f"registry demo --changes {fraction!r} --seed {seed}")
    plan = plan_twin(plan_seed, origins, fraction, twin)
    counts = write_planned(TwinWriter(out, rng, plan, twin), origins, plan_seed, progress)
    blocks = dict.fromkeys(BLOCKS, 0)
    for way, _ in plan.changed.values():
        blocks["origin" if way == "network" else way] += 1
    changes = {
        "added": len(plan.added_after),
        "removed": len(plan.removed),
        "changed": len(plan.changed),
    }
    return TwinDocument(counts, changes, blocks)


def changes_line(twin: TwinDocument) -> str:
    """`added N, removed N, changed N (origin N, governance N, bans N, presentations N)`."""
    kinds = ", ".join(f"{kind} {twin.changes[kind]}" for kind in KINDS)
    return f"{kinds} ({', '.join(f'{block} {n}' for block, n in twin.blocks.items())})"
