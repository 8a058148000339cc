"""GET /openapi.json: the OpenAPI 3.1 document, generated from the schemas the views dump with."""

from __future__ import annotations

from functools import cache
from typing import Any

from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin
from flask import Blueprint, Response, request

from registry.api.openapi_changes import add_change_paths
from registry.api.openapi_components import (
    COMPOSED_SCHEMAS,
    EXPORT_CONTENT,
    FACET_OPTIONS,
    GENERATION_HEADERS,
    JSON,
    LISTING_FILTERS,
    RESPONSES,
    SCHEMAS,
    comma_lists,
    header,
    inline_json,
    json_body_response,
)
from registry.api.openapi_history import add_history_path
from registry.api.responses import GET_ROUTE, json_response
from schemas.params import (
    ADDRESS_FORMAT,
    ORIGIN_ID_FORMAT,
    PinnedQuerySchema,
    refuse_any_query,
)

bp = Blueprint("openapi", __name__)

API_VERSION = "1.0.0"
SERVER_DESCRIPTION = "the server this document was served from"

_ORIGIN_LINKS = {
    "getOriginByAddress": "address",
    "getOrigin": "originId",
}


_PINNED = {"in": "query", "schema": PinnedQuerySchema}


def _ref(name: str) -> dict[str, str]:
    """A reference to a shared response."""
    return {"$ref": f"#/components/responses/{name}"}


def _operation(
    operation_id: str,
    summary: str,
    ok: dict[str, Any],
    *,
    secured: bool,
    parameters: list[dict[str, Any]] | None = None,
    not_found: bool = False,
    reads_database: bool = True,
    generational: bool = False,
) -> dict[str, Any]:
    """One GET operation with its 200 and every error status it can answer.

    generational: answered from a generation (docs/api.md, Generations and conditional requests):
    generation headers, 304, and on /registry the `generation` parameter's 404 and 410.
    """
    if generational:
        ok = {**ok, "headers": {**ok.get("headers", {}), **GENERATION_HEADERS}}
    responses: dict[str, Any] = {"200": ok}
    if generational:
        responses["304"] = _ref("NotModified")
    responses["400"] = _ref("InvalidParameters")
    if secured:
        responses["401"] = _ref("Unauthorized")
        responses["403"] = _ref("Forbidden")
    if not_found:
        responses["404"] = _ref("OriginNotFound")
    elif generational and secured:
        responses["404"] = _ref("GenerationNotFound")
    if generational and secured:
        responses["410"] = _ref("GenerationGone")
    responses["405"] = _ref("MethodNotAllowed")
    responses["500"] = _ref("InternalServerError")
    if reads_database or secured:
        # The guard answers 503 too, when the key set it needs cannot be fetched.
        responses["503"] = _ref("ServiceUnavailable")
    operation: dict[str, Any] = {
        "operationId": operation_id,
        "summary": summary,
        "tags": ["registry" if secured else "public"],
        "responses": responses,
    }
    if parameters:
        operation["parameters"] = parameters
    if secured:
        # Either credential is enough: the header is checked first, then the cookie.
        operation["security"] = [{"bearerAuth": []}, {"cookieAuth": []}]
    return operation


def _path_parameter(name: str, description: str, pattern: str, example: str) -> dict[str, Any]:
    """A required path parameter."""
    return {
        "in": "path",
        "name": name,
        "required": True,
        "description": description,
        "schema": {"type": "string", "pattern": pattern},
        "example": example,
    }


def _links(pointers: dict[str, str]) -> dict[str, Any]:
    """Links from a response to the lookups, by operationId -> JSON pointer into the body."""
    return {
        operation_id: {
            "operationId": operation_id,
            "parameters": {_ORIGIN_LINKS[operation_id]: f"$response.body#{pointer}"},
        }
        for operation_id, pointer in pointers.items()
    }


def _origin_envelope(description: str) -> dict[str, Any]:
    """The 200 of a lookup, linked to the other lookup of the same origin."""
    response = json_body_response("OriginEnvelope", description)
    response["links"] = _links(
        {"getOrigin": "/origin/origin/id", "getOriginByAddress": "/origin/bans/address"}
    )
    return response


@cache
def build_openapi_document() -> dict[str, Any]:
    """The whole document (built once per process)."""
    spec = APISpec(
        title="Broadcast Registry Read API",
        version=API_VERSION,
        openapi_version="3.1.0",
        plugins=[MarshmallowPlugin()],
        info={
            "description": "A read-only API over a broadcast graph: each canonical origin once, "
            "with its identity, governance, address allocation, publication state and resolved "
            "presentations. Every response body is JSON, except the listing's two export "
            "representations (NDJSON and CSV), chosen with Accept."
        },
        # Each answer names the server it was served from (served_document).
        servers=[{"url": "/", "description": SERVER_DESCRIPTION}],
        tags=[
            {"name": "public", "description": "no authentication"},
            {"name": "registry", "description": "domain-administrator token required"},
            {"name": "health", "description": "probes for load balancers and supervisors"},
        ],
    )
    spec.components.security_scheme(
        "bearerAuth", {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}
    )
    spec.components.security_scheme(
        "cookieAuth", {"type": "apiKey", "in": "cookie", "name": "access_token"}
    )
    for name, schema in SCHEMAS:
        spec.components.schema(name, schema=schema)
    for name, component in COMPOSED_SCHEMAS.items():
        spec.components.schema(name, component=component)
    for name, response in RESPONSES.items():
        spec.components.response(name, response)

    spec.path(
        "/summary",
        operations={
            "get": _operation(
                "getIntegrationStatus",
                "Broadcast-feed integration status (unrelated to the registry counts)",
                json_body_response("IntegrationStatus", "the status"),
                secured=False,
                generational=True,
            )
        },
    )
    spec.path(
        "/registry/summary",
        operations={
            "get": _operation(
                "getRegistrySummary",
                "Counts over canonical origins and catalog carriages",
                json_body_response("RegistrySummary", "the counts"),
                secured=True,
                parameters=[_PINNED],
                generational=True,
            )
        },
    )
    listing = json_body_response(
        "OriginList",
        "one page of origins, by allocated address then origin id; a page past the end is "
        "empty and still carries the true total",
        {
            # Not required: only the JSON page has one; an export has no pages to link.
            "Link": {
                **header(
                    'with every JSON page, and only there: RFC 8288 links rel="first", "prev", '
                    '"next", "last"; filters and limit kept, and '
                    "generation=<Registry-Generation>, so following them sweeps one "
                    "generation. An NDJSON or CSV export has no pages and sends none"
                ),
                "required": False,
            },
            # docs/export.md, Capacity: only an export has one.
            "Registry-Total": {
                **header(
                    "with every NDJSON or CSV export, and only there: the number of rows that "
                    "follow (NDJSON lines, CSV rows after the header), from the export's own "
                    "generation, so a client can check it received all of them",
                    "integer",
                ),
                "required": False,
            },
        },
    )
    listing["links"] = _links(
        {"getOrigin": "/origins/0/origin/id", "getOriginByAddress": "/origins/0/bans/address"}
    )
    listing["description"] += (
        ". With Accept: application/x-ndjson or text/csv, every origin the filters match "
        "instead, streamed in one answer (page and limit are then a 400)"
    )
    listing["content"].update(EXPORT_CONTENT)
    listing_operation = _operation(
        "listOrigins",
        "Canonical origins, one page at a time, or all of them as NDJSON or CSV; filters "
        "combine with AND",
        listing,
        secured=True,
        parameters=[{"in": "query", "schema": LISTING_FILTERS}, FACET_OPTIONS],
        generational=True,
    )
    listing_operation["responses"]["406"] = _ref("NotAcceptable")
    spec.path(
        "/registry/origins",
        operations={"get": listing_operation},
    )
    origin_id = _path_parameter(
        "originId",
        "svc:origin:<uuid>, or the bare <uuid>; hex digits in either case",
        ORIGIN_ID_FORMAT,
        "svc:origin:3b2f1e0d-9c8b-4a7f-8e6d-5c4b3a291807",
    )
    spec.path(
        "/registry/origins/{originId}",
        operations={
            "get": _operation(
                "getOrigin",
                "One origin with all its presentations, by id",
                _origin_envelope("the origin"),
                secured=True,
                parameters=[origin_id, _PINNED],
                not_found=True,
                generational=True,
            )
        },
    )
    add_history_path(spec, _operation, [origin_id, _PINNED])
    spec.path(
        "/registry/addresses/{address}",
        operations={
            "get": _operation(
                "getOriginByAddress",
                "The origin holding a channel-tier address",
                _origin_envelope("the origin holding the address"),
                secured=True,
                parameters=[
                    _path_parameter(
                        "address",
                        "<network>.<station>.<channel>, each in plain decimal (no sign, no "
                        "leading zeros), each at most 2147483647",
                        ADDRESS_FORMAT,
                        "9.10.3",
                    ),
                    _PINNED,
                ],
                not_found=True,
                generational=True,
            )
        },
    )
    add_change_paths(spec, _operation, _PINNED)
    spec.path(
        "/openapi.json",
        operations={
            "get": _operation(
                "getOpenApiDocument",
                "This document: the interface description, version 1.0.0",
                {
                    "description": "the OpenAPI 3.1 document",
                    "content": {JSON: {"schema": {"type": "object"}}},
                },
                secured=False,
                reads_database=False,
            )
        },
    )
    healthz = _operation(
        "getLiveness",
        "Liveness: the process answers (never touches the database)",
        inline_json(
            "the process is up",
            {"success": {"const": True}, "status": {"const": "ok"}},
        ),
        secured=False,
        reads_database=False,
    )
    healthz["tags"] = ["health"]
    readyz = _operation(
        "getReadiness",
        "Readiness: the database answers with the schema version this code expects",
        inline_json(
            "ready to serve",
            {
                "success": {"const": True},
                "ready": {"const": True},
                "schema_version": {"type": "integer"},
                "loaded_at": {"type": ["string", "null"], "format": "date-time"},
            },
        ),
        secured=False,
    )
    readyz["tags"] = ["health"]
    readyz["responses"]["503"] = inline_json(
        "not ready: the database cannot be reached, is over its time budget, or holds another "
        "schema version",
        {
            "success": {"const": False},
            "error": {"type": "string"},
            "ready": {"const": False},
            "reason": {"type": "string"},
        },
        {"Retry-After": header("seconds to wait before retrying", "integer")},
    )
    spec.path("/healthz", operations={"get": healthz})
    spec.path("/readyz", operations={"get": readyz})
    return comma_lists(spec.to_dict())


@bp.get("/openapi.json", **GET_ROUTE)
def openapi_document() -> Response:
    """The interface description, version 1.0.0 (public, like /summary)."""
    refuse_any_query(request.args.to_dict(flat=False))
    root = request.script_root
    if request.host:
        root = f"{request.scheme}://{request.host}{root}"
    return json_response(served_document(root or "/"))


def served_document(root: str) -> dict[str, Any]:
    """The document naming root, the absolute root the request reached, as its server.

    Tools that do not resolve a relative server URL (openapi-core) need an absolute one.
    Behind nginx the root is the forwarded scheme and the /v1 prefix, which gunicorn takes
    only from a peer in forwarded_allow_ips (as for the Link header), and the Host nginx
    passes on. With no valid Host (werkzeug then gives none) the root is the path alone.
    """
    return {
        **build_openapi_document(),
        "servers": [{"url": root, "description": SERVER_DESCRIPTION}],
    }
