"""GET /openapi.json: the OpenAPI document, built from the marshmallow schemas."""

from __future__ import annotations

from flask import Blueprint, Response

from registry.responses import json_response
from schemas.openapi import build_openapi_document

bp = Blueprint("openapi", __name__)


@bp.get("/openapi.json", provide_automatic_options=False)
def openapi_document() -> Response:
    """The interface description, version 1.0.0."""
    return json_response(build_openapi_document())
