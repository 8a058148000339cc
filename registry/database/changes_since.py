"""Net changes since any kept generation (docs/api.md, Changes since any generation): pages, exports
and the since's checks.

The load that produces generation n builds its net changes from every kept since
(registry_meta.build_net_changes, migration 004): net_changes holds, per origin, each version
of its record that differs from its record at n with the sinces it answers for, and
net_counts their counts per since. A page is a range of one net_changes index filtered on the
since, an export the same walk through a server-side cursor; nothing is counted or compared
at request time. Every statement also says whether the since was produced, n's oldest since
and the newest generation, so that the answer and its checks come from one snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

from registry.database.changes import change_statement, filter_path
from registry.database.exports import OpenedExport, open_export
from registry.database.generations import LIVE_SCHEMA, Stamp, row_stamp
from registry.database.rows import one_row

_LIST = {
    "all": "changes/list_net_changes",
    "kind": "changes/list_net_changes_by_kind",
    "block": "changes/list_net_changes_by_block",
}
_EXPORT = {
    "all": "changes/export_net_changes",
    "kind": "changes/export_net_changes_by_kind",
    "block": "changes/export_net_changes_by_block",
}


class SinceNotProduced(Exception):
    """since=m, well-formed, that this registry never produced (404, docs/api.md, Changes since any
    generation)."""

    def __init__(self, since: int, current: int | None):
        super().__init__(f"generation {since} was never produced")
        self.since = since
        self.current = current


class SinceNewer(Exception):
    """since=m, a generation produced after the one answered (400, docs/api.md, Changes since any
    generation)."""

    def __init__(self, since: int, generation: int):
        super().__init__(f"generation {since} is newer than the generation answered ({generation})")
        self.since = since
        self.generation = generation


class ChangesDropped(Exception):
    """since=m older than the oldest since of the generation answered (410, docs/api.md, Changes
    since any generation)."""

    def __init__(self, since: int, oldest_since: int, current: int | None):
        super().__init__(f"the changes since generation {since} are no longer kept")
        self.since = since
        self.oldest_since = oldest_since
        self.current = current


@dataclass(frozen=True, slots=True)
class SincePage:
    """One page of the net changes since a generation, with what the checks need."""

    since: int
    total: int
    returned: int
    records: str
    previous: int | None
    counts: dict[str, int]
    produced: bool
    oldest_since: int
    current: int | None

    def check(self, generation: int) -> None:
        """Raise SinceNotProduced, SinceNewer or ChangesDropped unless the since answers for
        generation (docs/api.md, Changes since any generation: 404 whatever its size, then 400, then
        410)."""
        if not self.produced:
            raise SinceNotProduced(self.since, self.current)
        if self.since > generation:
            raise SinceNewer(self.since, generation)
        if self.since < self.oldest_since:
            raise ChangesDropped(self.since, self.oldest_since, self.current)


def list_changes_since(
    conn: psycopg.Connection,
    filters: dict[str, Any],
    since: int,
    limit: int,
    offset: int,
    schema: str = LIVE_SCHEMA,
) -> tuple[Stamp, SincePage]:
    """(stamp, page) of the net changes from since to the generation in schema that match
    the filters. The page is not checked: call its check() with the stamp's generation."""
    path, params = filter_path(filters)
    row = one_row(
        conn,
        change_statement(_LIST[path], schema),
        {**params, "since": since, "limit": limit, "offset": offset},
    )
    previous, current = row["previous"], row["current"]
    page = SincePage(
        since,
        int(row["total"]),
        int(row["returned"]),
        row["records"],
        None if previous is None else int(previous),
        {kind: int(row[kind] or 0) for kind in ("added", "removed", "changed")},
        bool(row["produced"]),
        int(row["oldest_since"]),
        None if current is None else int(current),
    )
    return row_stamp(row), page


def open_change_export_since(
    conn: psycopg.Connection,
    filters: dict[str, Any],
    since: int,
    generation: int | None,
    first: int,
    csv_rows: bool,
) -> OpenedExport:
    """Begin the export of every net change since the filters match: JSON objects, or CSV
    rows. Raises as SincePage.check does, from the export's own snapshot."""

    def plan(conn: psycopg.Connection, schema: str) -> tuple[int, str, dict[str, Any], bool]:
        """The filtered total and the export statement, in the export's snapshot."""
        stamp, page = list_changes_since(conn, filters, since, 0, 0, schema)
        if generation is None or stamp.generation == generation:
            # (a pinned export that found another generation here is tried again elsewhere)
            page.check(stamp.generation)
        path, params = filter_path(filters)
        column = "csv_line" if csv_rows else "line"
        statement = change_statement(_EXPORT[path], schema, column)
        return page.total, statement, {**params, "since": since}, csv_rows

    return open_export(conn, generation, first, plan)
