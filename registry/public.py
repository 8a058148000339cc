"""The public surface: the broadcast-feed integration status (no authentication)."""

from __future__ import annotations

from flask import Blueprint, Response

from registry import repository
from registry.db import get_connection
from registry.responses import json_response, now_utc
from schemas.summary import IntegrationStatusSchema

bp = Blueprint("public", __name__)

INTEGRATION_STATUS = IntegrationStatusSchema()


@bp.get("/summary", provide_automatic_options=False)
def integration_status() -> Response:
    """GET /summary: the feed record, or connected false when there is none."""
    feed = repository.get_integration_status(get_connection()) or {"connected": False}
    return json_response(
        INTEGRATION_STATUS.dump({"success": True, **feed, "generated_at": now_utc()})
    )
