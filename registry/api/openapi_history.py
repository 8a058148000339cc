"""/openapi.json: GET /registry/origins/{originId}/history (docs/api.md, An origin's history), its
components and its answers. `registry.api.openapi` calls `add_history_path` with its own operation
builder."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from apispec import APISpec

from registry.api.openapi_components import json_body_response
from schemas.history import OriginHistorySchema, OriginVersionSchema

HISTORY_PATH = "/registry/origins/{originId}/history"
HISTORY_SCHEMAS = (("OriginVersion", OriginVersionSchema), ("OriginHistory", OriginHistorySchema))


def add_history_path(
    spec: APISpec, operation: Callable[..., dict[str, Any]], parameters: list[dict[str, Any]]
) -> None:
    """The history's component schemas and its path, built with operation (the document's
    operation builder) and parameters (the origin id in the path, and generation)."""
    for name, schema in HISTORY_SCHEMAS:
        spec.components.schema(name, schema=schema)
    history = operation(
        "getOriginHistory",
        "How one origin's record went through the kept change sets, newest first",
        json_body_response(
            "OriginHistory",
            "the origin's versions up to the generation answered: spans of generations over "
            "which its record stayed the same, or it was absent after a removal",
        ),
        secured=True,
        parameters=parameters,
        not_found=True,
        generational=True,
    )
    history["responses"]["404"] = json_body_response(
        "LookupNotFound",
        "the origin is absent from the generation answered and no kept change set up to it "
        "names it (a malformed id names none, so it is a 404 too), or generation names one "
        "this registry never produced (the GenerationNotFound body)",
    )
    spec.path(HISTORY_PATH, operations={"get": history})
