"""The public surface: the broadcast-feed integration status (no authentication)."""

from __future__ import annotations

from flask import Blueprint, Response, request

from registry.api.generations import not_modified_early, read, stamped
from registry.api.responses import GET_ROUTE, json_response, now_utc
from registry.database import repository
from schemas.params import refuse_any_query
from schemas.summary import IntegrationStatusSchema

bp = Blueprint("public", __name__)

INTEGRATION_STATUS = IntegrationStatusSchema()


@bp.get("/summary", **GET_ROUTE)
def integration_status() -> Response:
    """GET /summary: the feed record, or connected false when there is none."""
    refuse_any_query(request.args.to_dict(flat=False))
    if (early := not_modified_early(None)) is not None:
        return early
    stamp, feed = read(None, repository.get_integration_status)
    return stamped(
        json_response(
            INTEGRATION_STATUS.dump(
                {"success": True, **(feed or {"connected": False}), "generated_at": now_utc()}
            )
        ),
        stamp,
    )
