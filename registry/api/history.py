"""GET /registry/origins/{originId}/history (contract 12); the admin token hook guards it.

How one origin's record went through the kept change sets, up to the generation answered:
spans of generations, newest first, each with the record as the lookup answered it then (or
null while the origin was absent), read by one statement (registry/database/history.py).
"""

from __future__ import annotations

import re

from flask import Blueprint, Response, request

from registry.api.generations import OriginNotFoundIn, not_modified_early, read, stamped
from registry.api.responses import GET_ROUTE, json_response, now_utc
from registry.database.history import get_origin_history
from schemas.history import OriginHistorySchema
from schemas.origin import RenderedRecords
from schemas.params import ORIGIN_ID_FORMAT, parse_pinned_query

bp = Blueprint("history", __name__, url_prefix="/registry")

ORIGIN_HISTORY = OriginHistorySchema()
_ORIGIN_ID = re.compile(ORIGIN_ID_FORMAT)


def _shown(text: str) -> str:
    """A caller's identifier, cut short for an error message."""
    return text if len(text) <= 100 else text[:97] + "..."


@bp.get("/origins/<origin_id>/history", **GET_ROUTE)
def get_origin_history_route(origin_id: str) -> Response:
    """GET /registry/origins/{originId}/history: svc:origin:<uuid> or the bare uuid."""
    generation = parse_pinned_query(request.args.to_dict(flat=False))
    if (early := not_modified_early(generation, exists=False)) is not None:
        return early
    match = _ORIGIN_ID.fullmatch(origin_id)
    origin_uuid = match.group(2).lower() if match is not None else None
    stamp, history = read(
        generation, lambda conn, schema: get_origin_history(conn, origin_uuid, schema)
    )
    if history is None:
        raise OriginNotFoundIn(f"No origin with id {_shown(origin_id)} nor any history", stamp)
    body = {
        "success": True,
        "generated_at": now_utc(),
        "generation": stamp.generation,
        "oldest_since": history.oldest_since,
        "id": f"svc:origin:{origin_uuid}",
        "versions": RenderedRecords(history.versions_json()),
    }
    return stamped(json_response(ORIGIN_HISTORY.dump(body)), stamp)
