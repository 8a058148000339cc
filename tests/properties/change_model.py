"""A plain-Python model of the change set (docs/api.md, Changes between generations), for the
property tests.

Each side's Origin records come from the properties suite's own model (RegistryModel, docs/api.md,
Records), never from the service; the change set is then what docs/api.md, Changes between
generations says, in plain loops: per origin id, `added` (in the new document only), `removed` (in
the old one only) or `changed` (in both, with a different record), with the top-level blocks that
differ, in the documented order.
"""

from __future__ import annotations

from typing import Any

from tests.properties.model import Record, RegistryModel

KINDS = ("added", "removed", "changed")
BLOCKS = ("origin", "governance", "bans", "presentations")
# The CSV columns of docs/api.md, Changes between generations, as documented.
CSV_COLUMNS = ("id", "kind", "blocks", "name", "address")


def change_set(previous: list[Record] | None, current: list[Record]) -> list[Record]:
    """The changes that take the graph of `previous` (None: nothing before) to `current`,
    ordered by origin id in plain string (code point) order."""
    before = RegistryModel(previous).records if previous is not None else {}
    after = RegistryModel(current).records
    changes: list[Record] = []
    for origin_id in sorted(before.keys() | after.keys()):
        old, new = before.get(origin_id), after.get(origin_id)
        if old is None:
            kind, blocks = "added", []
        elif new is None:
            kind, blocks = "removed", []
        else:
            blocks = [block for block in BLOCKS if old[block] != new[block]]
            if not blocks:
                continue  # the same record: no change at all
            kind = "changed"
        changes.append(
            {"id": origin_id, "kind": kind, "blocks": blocks, "before": old, "after": new}
        )
    return changes


def counts(changes: list[Record]) -> dict[str, int]:
    """How many changes of each kind."""
    return {kind: sum(1 for change in changes if change["kind"] == kind) for kind in KINDS}


def matching(changes: list[Record], kind: str | None, block: str | None) -> list[Record]:
    """The changes a `kind` and `block` filter select (block: changed ones naming it)."""
    return [
        change
        for change in changes
        if (kind is None or change["kind"] == kind)
        and (block is None or (change["kind"] == "changed" and block in change["blocks"]))
    ]


def csv_row(change: Record) -> list[str]:
    """A change's CSV row: blocks joined by `;`, name and address of after (of before when
    removed), null as an empty field."""
    shown: dict[str, Any] = change["after"] if change["after"] is not None else change["before"]
    address = shown["bans"]["address"]
    return [
        change["id"],
        change["kind"],
        ";".join(change["blocks"]),
        shown["origin"]["name"],
        "" if address is None else address,
    ]
