"""GET /registry/origins/{originId}/history (docs/api.md, An origin's history); the admin token hook
guards it.

How one origin's record went through the kept change sets, up to the generation answered:
spans of generations, newest first, each with the record as the lookup answered it then (or
null while the origin was absent), read by one statement (registry/database/history.py).
A change set dropped after a commit changes the answer within its generation, so the
validators fold in which change sets were read (as the list of generations does).
"""

from __future__ import annotations

from flask import Blueprint, Response, request

from registry.api.generations import OriginNotFoundIn, read, stamped
from registry.api.operator import origin_uuid, shown
from registry.api.responses import GET_ROUTE, json_response, now_utc
from registry.database.history import get_origin_history
from schemas.history import OriginHistorySchema
from schemas.origin import RenderedRecords
from schemas.params import parse_pinned_query

bp = Blueprint("history", __name__, url_prefix="/registry")

ORIGIN_HISTORY = OriginHistorySchema()


@bp.get("/origins/<origin_id>/history", **GET_ROUTE)
def get_origin_history_route(origin_id: str) -> Response:
    """GET /registry/origins/{originId}/history: svc:origin:<uuid> or the bare uuid."""
    generation = parse_pinned_query(request.args.to_dict(flat=False))
    uuid = origin_uuid(origin_id)
    stamp, history = read(generation, lambda conn, schema: get_origin_history(conn, uuid, schema))
    if history is None:
        raise OriginNotFoundIn(f"No origin with id {shown(origin_id)} nor any history", stamp)
    body = {
        "success": True,
        "generated_at": now_utc(),
        "generation": stamp.generation,
        "oldest_since": history.oldest_since,
        "id": f"svc:origin:{uuid}",
        "versions": RenderedRecords(history.versions_json()),
    }
    # Dropping a change set changes the answer within a generation: the ETag folds in which
    # change sets were read (those after the oldest since, and whether the first generation's
    # own is still among them: the newest drop up to n says both), and If-Modified-Since is
    # judged against that drop too. So the 304 is decided on the answer, never early.
    response = json_response(ORIGIN_HISTORY.dump(body))
    dropped = "" if history.changed_at is None else history.changed_at.isoformat()
    variant = f"since {history.oldest_since} {dropped}"
    return stamped(response, stamp, variant=variant, changed_at=history.changed_at)
