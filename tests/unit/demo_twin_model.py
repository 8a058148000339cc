"""What the API answers per origin (docs/api.md, Records), worked out from a graph document with
plain loops and no import from the service: the demo's twin is checked against it, as the change
set of docs/api.md, Changes between generations would see the two documents."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

Record = dict[str, Any]
BLOCKS = ("origin", "governance", "bans", "presentations")


def answers(records: list[Record]) -> dict[str, dict[str, Any]]:
    """Each origin's four blocks as the API answers them (docs/api.md, Records), by origin id."""
    of_type: dict[str, list[Record]] = defaultdict(list)
    for record in records:
        of_type[record["type"]].append(record)
    networks = {network["id"]: network["name"] for network in of_type["network"]}
    reviewed = {origin["id"] for origin in of_type["origin"] if origin["reviewed"]}
    active = Counter(edge["origin_id"] for edge in of_type["governance_edge"] if edge["active"])
    allocations = {allocation["origin_id"]: allocation for allocation in of_type["allocation"]}
    shown: dict[str, list[Record]] = defaultdict(list)
    for carriage in of_type["carriage"]:
        if carriage["origin_id"] in reviewed:
            fields = ("id", "transport", "provider", "source", "availability")
            shown[carriage["origin_id"]].append({name: carriage[name] for name in fields})
    view = {}
    for origin in of_type["origin"]:
        key, allocation = origin["id"], allocations.get(origin["id"])
        bans = None
        if allocation is not None:
            status = allocation["publication_status"]
            held = (
                (allocation["held_at"], allocation.get("held_reason")) if status == "held" else None
            )
            bans = (
                allocation["network"],
                allocation["station"],
                allocation["channel"],
                status,
                held,
            )
        view[key] = {
            "origin": (
                origin["name"],
                origin["registry_id"],
                origin["network_id"],
                networks.get(origin["network_id"]),
            ),
            "governance": active[key],
            "bans": bans,
            "presentations": sorted(shown[key], key=lambda carriage: carriage["id"]),
        }
    return view


def differences(before: list[Record], after: list[Record]) -> tuple[dict[str, int], Counter]:
    """Origins per kind of change, and changed origins per block, from the two documents."""
    old, new = answers(before), answers(after)
    blocks: Counter = Counter()
    changed = 0
    for key in old.keys() & new.keys():
        differ = [block for block in BLOCKS if old[key][block] != new[key][block]]
        assert len(differ) <= 1, (key, differ)
        changed += len(differ)
        blocks.update(differ)
    kinds = {"added": len(new.keys() - old.keys()), "removed": len(old.keys() - new.keys())}
    return {**kinds, "changed": changed}, blocks
