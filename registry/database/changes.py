"""The change sets of generations (docs/api.md, Changes between generations): pages, exports and the
list of generations.

Each generation stores its change set beside its graph (sql/load/build_changes.sql, numbered
by sql/load/number_changes.sql): changes, change_blocks, change_counts and the change_lines
view that writes each change as the API sends it. A page is a range of one index, chosen by
the filter: changes' pos (no filter), (kind, kind_pos), or change_blocks' (block, block_pos).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql

from registry.database.exports import ExportRead, OpenedExport, open_export
from registry.database.generations import LIVE_SCHEMA, Stamp, row_stamp
from registry.database.queries import QUERIES
from registry.database.rows import all_rows, one_row, scalar

_LIST = {
    "all": "changes/list_changes",
    "kind": "changes/list_changes_by_kind",
    "block": "changes/list_changes_by_block",
}
_EXPORT = {
    "all": "changes/export_changes",
    "kind": "changes/export_changes_by_kind",
    "block": "changes/export_changes_by_block",
}


@dataclass(frozen=True, slots=True)
class ChangePage:
    """One page of a generation's changes, with the generation's previous and counts."""

    total: int
    returned: int
    records: str
    previous: int | None
    counts: dict[str, int | None]


@dataclass(frozen=True, slots=True)
class GenerationRow:
    """One listed generation, as GET /registry/generations lists it."""

    generation: int
    previous: int | None
    committed_at: datetime
    origins: int
    counts: dict[str, int | None]
    readable: bool
    digest: str | None


@dataclass(frozen=True, slots=True)
class GenerationList:
    """The generations listed, the oldest since, and when a drop last changed the list."""

    rows: list[GenerationRow]
    oldest_since: int
    dropped_at: datetime | None

    def fingerprint(self) -> str:
        """What the list holds, for the answer's ETag: it changes whenever the list does."""
        kept = ",".join(f"{row.generation}{'' if row.readable else '-'}" for row in self.rows)
        return f"{kept};{self.oldest_since}"


def filter_path(filters: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Which index serves the filters, and the parameters: a block implies kind changed, and
    a filtered path names both (block null for a kind alone), as the net changes' statements
    of one kind read them (sql/changes/list_net_changes_of_kind.sql)."""
    if "block" in filters:
        return "block", {"kind": "changed", "block": filters["block"]}
    if "kind" in filters:
        return "kind", {"kind": filters["kind"], "block": None}
    return "all", {}


def change_statement(name: str, schema: str, column: str = "line") -> str:
    """The SQL file name with its {graph} (and {column}) placeholders filled in."""
    composed = sql.SQL(QUERIES[name]).format(
        graph=sql.Identifier(schema), column=sql.Identifier(column)
    )
    return composed.as_string(None)


def list_changes(
    conn: psycopg.Connection,
    filters: dict[str, Any],
    limit: int,
    offset: int,
    schema: str = LIVE_SCHEMA,
) -> tuple[Stamp, ChangePage]:
    """(stamp, page) of the changes of the generation in schema that match the filters."""
    path, params = filter_path(filters)
    row = one_row(
        conn, change_statement(_LIST[path], schema), {**params, "limit": limit, "offset": offset}
    )
    counts = {kind: row[kind] for kind in ("added", "removed", "changed")}
    page = ChangePage(
        int(row["total"]), int(row["returned"]), row["records"], row["previous"], counts
    )
    return row_stamp(row), page


def export_changes_query(
    filters: dict[str, Any], schema: str, csv_rows: bool
) -> tuple[str, dict[str, Any]]:
    """The statement streaming every matching change (JSON objects, or CSV rows)."""
    path, params = filter_path(filters)
    return change_statement(_EXPORT[path], schema, "csv_line" if csv_rows else "line"), params


def list_generations(
    conn: psycopg.Connection, schema: str = LIVE_SCHEMA
) -> tuple[Stamp, GenerationList]:
    """The stamp of the generation in schema and every generation up to it whose change set
    or graph is kept, newest first (docs/api.md, Changes since any generation)."""
    rows = all_rows(conn, change_statement("changes/list_generations", schema))
    assert rows  # the generation read is kept
    listed = [
        GenerationRow(
            int(row["generation"]),
            None if row["previous"] is None else int(row["previous"]),
            row["committed_at"],
            int(row["origins"]),
            {kind: row[kind] for kind in ("added", "removed", "changed")},
            bool(row["readable"]),
            row["digest"],
        )
        for row in rows
    ]
    first = rows[0]
    stamp = Stamp(int(first["current"]), first["current_committed_at"], first["current_digest"])
    return stamp, GenerationList(listed, int(first["oldest_since"]), first["dropped_at"])


def open_change_export(
    conn: psycopg.Connection,
    filters: dict[str, Any],
    generation: int | None,
    first: int,
    csv_rows: bool,
) -> OpenedExport:
    """Begin the export of every change the filters match: JSON objects, or CSV rows."""

    def plan(conn: psycopg.Connection, schema: str) -> ExportRead:
        """The filtered total and the export statement, in the export's snapshot."""
        total = list_changes(conn, filters, 0, 0, schema)[1].total
        statement, params = export_changes_query(filters, schema, csv_rows)
        return ExportRead(total, statement, params, csv_rows)

    return open_export(conn, generation, first, plan)


def oldest_since(conn: psycopg.Connection, generation: int) -> int | None:
    """The oldest since of generation (docs/api.md, Changes since any generation): the smallest m
    such that the change set of every generation after m, up to generation, is kept; None when none
    was produced."""
    since = scalar(conn, QUERIES["changes/get_oldest_since"], {"generation": generation})
    return None if since is None else int(since)
