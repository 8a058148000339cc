"""Changes between generations under /registry (docs/api.md, Changes between generations and Changes
since any generation); the admin token hook guards them.

GET /registry/changes pages through the change set a generation recorded at load (by origin
id, filtered by kind and block), or with since=m through the net changes from m to it, or
streams all of them as NDJSON or CSV as the origins export does; GET /registry/generations
lists every kept generation with its change counts.
"""

from __future__ import annotations

from typing import Any

import psycopg
from flask import Blueprint, Response, request

from registry.api.errors import error_response
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
from registry.database.changes_since import (
    ChangesDropped,
    SinceNewer,
    SinceNotProduced,
    list_changes_since,
    open_change_export_since,
)
from registry.database.exports import OpenedExport
from registry.database.generations import Stamp
from schemas.changes import (
    ChangeListSchema,
    GenerationListSchema,
    parse_change_export_query,
    parse_change_list_query,
)
from schemas.errors import INVALID_PARAMETERS
from schemas.origin import RenderedRecords
from schemas.params import parse_pinned_query

bp = Blueprint("changes", __name__, url_prefix="/registry")

CHANGE_LIST = ChangeListSchema()
GENERATION_LIST = GenerationListSchema()
FILTERS = ("kind", "block")
# Every Link of an answer since m carries since=m too (docs/api.md, Changes since any generation).
FILTERS_AND_SINCE = ("kind", "block", "since")
CHANGES_GONE_ERROR = "Changes no longer available"
SINCE_NOT_FOUND_ERROR = "Generation not found"
# The CSV of changes (docs/api.md, Changes between generations): these columns, in this order.
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
    """GET /registry/changes: one page of a generation's changes by origin id; with since=m,
    of the net changes from generation m to it (docs/api.md, Changes since any generation).

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
    since = query.pop("since", None)
    if since is not None:
        return _list_since(query, since, page, limit, generation)
    if (early := not_modified_early(generation)) is not None:
        early.vary.add("Accept")
        return early
    offset = (page - 1) * limit
    stamp, found = read(
        generation, lambda conn, schema: list_changes(conn, query, limit, offset, schema)
    )
    body = _body(stamp.generation, found.previous, found.previous, found.counts, query)
    body["page"] = _page(page, limit, offset, found.returned, found.total)
    body["changes"] = RenderedRecords(found.records)
    links = page_links(query, page, limit, found.total, stamp.generation, FILTERS)
    response = stamped(json_response(CHANGE_LIST.dump(body), headers={"Link": links}), stamp)
    response.vary.add("Accept")
    return response


def _list_since(
    query: dict[str, Any], since: int, page: int, limit: int, generation: int | None
) -> Response:
    """One page of the net changes from since to the generation answered (docs/api.md, Changes since
    any generation).

    No early 304: an answer since m of a pinned generation can turn into a 410 when change
    sets are dropped, under the same URL and generation; whether it still answers is decided
    first, then the validators.
    """
    offset = (page - 1) * limit
    stamp, found = read(
        generation,
        lambda conn, schema: list_changes_since(conn, query, since, limit, offset, schema),
    )
    found.check(stamp.generation)
    body = _body(stamp.generation, found.previous, since, found.counts, query)
    body["page"] = _page(page, limit, offset, found.returned, found.total)
    body["changes"] = RenderedRecords(found.records)
    links = page_links(
        {**query, "since": since}, page, limit, found.total, stamp.generation, FILTERS_AND_SINCE
    )
    response = stamped(json_response(CHANGE_LIST.dump(body), headers={"Link": links}), stamp)
    response.vary.add("Accept")
    return response


def _body(
    generation: int,
    previous: int | None,
    since: int | None,
    counts: dict[str, Any],
    query: dict[str, Any],
) -> dict[str, Any]:
    """The envelope of an answer of /registry/changes, without its page and changes."""
    return {
        "success": True,
        "generated_at": now_utc(),
        "generation": generation,
        "previous": previous,
        "since": since,
        "counts": counts,
        "filters_applied": query,
    }


def _page(page: int, limit: int, offset: int, returned: int, total: int) -> dict[str, int]:
    """The page member (docs/api.md, Listing origins)."""
    return {"page": page, "limit": limit, "offset": offset, "returned": returned, "total": total}


def _export(representation: str, query: dict[str, Any]) -> Response:
    """Every change the filters match, streamed in one snapshot (docs/export.md; docs/api.md,
    Changes between generations and Changes since any generation)."""
    generation = query.pop("generation", None)
    since = query.pop("since", None)

    def opener(conn: psycopg.Connection) -> OpenedExport:
        csv_rows = representation == CSV
        if since is None:
            return open_change_export(conn, query, generation, FIRST_BATCH, csv_rows)
        return open_change_export_since(conn, query, since, generation, FIRST_BATCH, csv_rows)

    def check_since() -> Stamp:
        """The 404, 400 or 410 of a since that answers nothing, before an export slot is
        taken (a page of none: one light query), else the stamp of the answer, on which a
        304 is decided; the export checks it again in its own snapshot, as a load may
        commit in between."""
        assert since is not None
        stamp, found = read(
            generation,
            lambda conn, schema: list_changes_since(conn, query, since, 0, 0, schema),
        )
        found.check(stamp.generation)
        return stamp

    return stream_export(
        representation,
        generation,
        opener,
        _layout(representation),
        "changes",
        check=None if since is None else check_since,
    )


@bp.app_errorhandler(SinceNotProduced)
def _since_not_produced(error: SinceNotProduced) -> Response:
    """404: since names a generation this registry never produced."""
    details = {"since": error.since, "current": error.current}
    return error_response(404, SINCE_NOT_FOUND_ERROR, details=details)


@bp.app_errorhandler(SinceNewer)
def _since_newer(error: SinceNewer) -> Response:
    """400: since names a generation newer than the generation answered."""
    return error_response(400, INVALID_PARAMETERS, details={"since": [str(error)]})


@bp.app_errorhandler(ChangesDropped)
def _changes_dropped(error: ChangesDropped) -> Response:
    """410: the changes since that generation are no longer kept; start from an export."""
    details = {
        "since": error.since,
        "oldest_since": error.oldest_since,
        "current": error.current,
    }
    return error_response(410, CHANGES_GONE_ERROR, details=details)


@bp.get("/generations", **GET_ROUTE)
def list_generations_route() -> Response:
    """GET /registry/generations: every generation whose change set or graph is kept, newest
    first, with its counts and whether it is readable, and the oldest since (docs/api.md, Changes
    since any generation).

    With generation=n (docs/api.md, Generations and conditional requests): answered from generation
    n, the ones up to it. The list changes without a new generation when a drop lands after a
    commit, so its validators are decided on the answer itself: the ETag folds in what the list
    holds, and an If-Modified-Since before the last drop that changed it is not a 304.
    """
    generation = parse_pinned_query(_query())
    stamp, kept = read(generation, list_generations)
    body = {
        "success": True,
        "generated_at": now_utc(),
        "current": stamp.generation,
        "oldest_since": kept.oldest_since,
        "generations": [
            {
                "generation": row.generation,
                "previous": row.previous,
                "committed_at": row.committed_at,
                "canonical_origins": row.origins,
                "counts": row.counts,
                "readable": row.readable,
                "digest": row.digest,
            }
            for row in kept.rows
        ],
    }
    response = json_response(GENERATION_LIST.dump(body))
    return stamped(response, stamp, variant=kept.fingerprint(), changed_at=kept.dropped_at)
