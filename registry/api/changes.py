"""Changes between generations under /registry (contract 10); the admin token hook guards them.

GET /registry/changes pages through the change set a generation recorded at load (by origin
id, filtered by kind and block), or streams all of it as NDJSON or CSV as the origins export
does; GET /registry/generations lists every kept generation with its change counts.
"""

from __future__ import annotations

from typing import Any

import psycopg
from flask import Blueprint, Response, request

from registry.api.export import (
    CSV,
    FIRST_BATCH,
    JSON,
    Layout,
    negotiated_type,
    not_acceptable,
    stream_export,
)
from registry.api.generations import not_modified_early, read, stamped
from registry.api.operator import page_links
from registry.api.origin_csv import stored_rows
from registry.api.responses import GET_ROUTE, json_response, now_utc
from registry.database.changes import list_changes, list_generations, open_change_export
from registry.database.exports import OpenedExport
from schemas.changes import (
    ChangeListSchema,
    GenerationListSchema,
    parse_change_export_query,
    parse_change_list_query,
)
from schemas.origin import RenderedRecords
from schemas.params import parse_pinned_query

bp = Blueprint("changes", __name__, url_prefix="/registry")

CHANGE_LIST = ChangeListSchema()
GENERATION_LIST = GenerationListSchema()
FILTERS = ("kind", "block")
# The CSV of changes (contract 10): these columns, in this order.
CSV_HEADER = b"id,kind,blocks,name,address\r\n"


def _query() -> dict[str, list[str]]:
    """The request's query: name -> every value given under it, in order."""
    return request.args.to_dict(flat=False)


def _ndjson(lines: list[bytes]) -> bytes:
    """One change per line."""
    return b"\n".join(lines) + b"\n"


def _layout(representation: str) -> Layout:
    """NDJSON of the changes' objects, or their CSV rows (as stored) under the header."""

    def layout(_opened: OpenedExport) -> tuple[bytes, Any]:
        if representation == CSV:
            return CSV_HEADER, stored_rows
        return b"", _ndjson

    return layout


@bp.get("/changes", **GET_ROUTE)
def list_changes_route() -> Response:
    """GET /registry/changes: one page of a generation's changes by origin id.

    With Accept asking for NDJSON or CSV: every matching change, streamed.
    """
    representation = negotiated_type()
    if representation is None:
        return not_acceptable()
    if representation != JSON:
        return _export(representation, parse_change_export_query(_query()))
    query = parse_change_list_query(_query())
    page, limit = query.pop("page"), query.pop("limit")
    generation = query.pop("generation", None)
    if (early := not_modified_early(generation)) is not None:
        early.vary.add("Accept")
        return early
    offset = (page - 1) * limit
    stamp, found = read(
        generation, lambda conn, schema: list_changes(conn, query, limit, offset, schema)
    )
    body = {
        "success": True,
        "generated_at": now_utc(),
        "generation": stamp.generation,
        "previous": found.previous,
        "counts": found.counts,
        "filters_applied": query,
        "page": {
            "page": page,
            "limit": limit,
            "offset": offset,
            "returned": found.returned,
            "total": found.total,
        },
        "changes": RenderedRecords(found.records),
    }
    links = page_links(query, page, limit, found.total, stamp.generation, FILTERS)
    response = stamped(json_response(CHANGE_LIST.dump(body), headers={"Link": links}), stamp)
    response.vary.add("Accept")
    return response


def _export(representation: str, query: dict[str, Any]) -> Response:
    """Every change the filters match, streamed in one snapshot (contract 8 and 10)."""
    generation = query.pop("generation", None)

    def opener(conn: psycopg.Connection) -> OpenedExport:
        return open_change_export(conn, query, generation, FIRST_BATCH, representation == CSV)

    return stream_export(representation, generation, opener, _layout(representation), "changes")


@bp.get("/generations", **GET_ROUTE)
def list_generations_route() -> Response:
    """GET /registry/generations: every kept generation, newest first, with its counts.

    With generation=n (contract 7): answered from generation n, the kept ones up to it.
    """
    generation = parse_pinned_query(_query())
    if (early := not_modified_early(generation)) is not None:
        return early
    stamp, kept = read(generation, list_generations)
    body = {
        "success": True,
        "generated_at": now_utc(),
        "current": stamp.generation,
        "generations": [
            {
                "generation": row.generation,
                "previous": row.previous,
                "committed_at": row.committed_at,
                "canonical_origins": row.origins,
                "counts": row.counts,
            }
            for row in kept
        ],
    }
    return stamped(json_response(GENERATION_LIST.dump(body)), stamp)
