"""GET /openapi.json: the OpenAPI 3.1 document, generated from the schemas the views dump with."""

from __future__ import annotations

from functools import cache
from typing import Any

from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin
from flask import Blueprint, Response, request

from registry.api.responses import GET_ROUTE, json_response
from schemas.errors import (
    ErrorSchema,
    ForbiddenSchema,
    GenerationGoneSchema,
    InvalidParametersSchema,
    UnauthorizedSchema,
)
from schemas.origin import OriginEnvelopeSchema, OriginListSchema
from schemas.params import (
    ADDRESS_FORMAT,
    ORIGIN_ID_FORMAT,
    OriginListQuerySchema,
    PinnedQuerySchema,
    refuse_any_query,
)
from schemas.summary import IntegrationStatusSchema, RegistrySummarySchema

bp = Blueprint("openapi", __name__)

API_VERSION = "1.0.0"
_JSON = "application/json"

_SCHEMAS = (
    ("IntegrationStatus", IntegrationStatusSchema),
    ("RegistrySummary", RegistrySummarySchema),
    ("OriginEnvelope", OriginEnvelopeSchema),
    ("OriginList", OriginListSchema),
    ("Error", ErrorSchema),
    ("InvalidParameters", InvalidParametersSchema),
    ("Unauthorized", UnauthorizedSchema),
    ("Forbidden", ForbiddenSchema),
    ("GenerationGone", GenerationGoneSchema),
)


def _header(description: str, schema_type: str = "string") -> dict[str, Any]:
    """A response header the service always sends with that response."""
    return {"description": description, "required": True, "schema": {"type": schema_type}}


def _json_response(
    schema: str, description: str, headers: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A response with a JSON body of the named component schema."""
    response: dict[str, Any] = {
        "description": description,
        "content": {_JSON: {"schema": {"$ref": f"#/components/schemas/{schema}"}}},
    }
    if headers:
        response["headers"] = headers
    return response


# Shared responses, referenced by name from each operation.
_RESPONSES = {
    "InvalidParameters": _json_response(
        "InvalidParameters",
        "a query parameter is unknown, repeated, empty, or has a value outside its type or "
        "bounds; details names each one",
    ),
    "Unauthorized": _json_response(
        "Unauthorized",
        "token missing or invalid: refresh it and retry",
        {"WWW-Authenticate": _header('Bearer, with error="invalid_token" when a token was given')},
    ),
    "Forbidden": _json_response(
        "Forbidden", "authenticated, but neither a global nor a domain administrator"
    ),
    "OriginNotFound": _json_response(
        "Error", "no origin matches; a malformed value matches none, so it is a 404 too"
    ),
    "MethodNotAllowed": _json_response(
        "Error", "a method other than GET or HEAD", {"Allow": _header("GET, HEAD")}
    ),
    "InternalServerError": _json_response("Error", "an unexpected failure; no internals shown"),
    "NotAcceptable": _json_response(
        "Error", "Accept admits none of application/json, application/x-ndjson and text/csv"
    ),
    "ServiceUnavailable": _json_response(
        "Error",
        "the database is unreachable or over its time budget (on /registry, also when the "
        "token key set cannot be fetched)",
        {"Retry-After": _header("seconds to wait before retrying", "integer")},
    ),
}

# The listing's export representations (contract 8), chosen with Accept.
_EXPORT_CONTENT = {
    "application/x-ndjson": {
        "schema": {
            "$ref": "#/components/schemas/Origin",
            "description": "newline-delimited JSON: one Origin (as in origins[]) per line, "
            "each line ending in a newline, in listing order, all from one generation",
        },
    },
    "text/csv": {
        "schema": {
            "type": "string",
            "description": "RFC 4180 CSV, UTF-8, CRLF line ends, a header row; the columns id, "
            "name, registry_id, network_id, network_name, governance_state, active_edges, "
            "allocated, address, network, station, channel, publication_status, held_at, "
            "held_reason, transports (its presentations' distinct transports joined by ';', in "
            "the order iptv, ovp, ota, fast), presentations (their count); booleans true/false, "
            "null an empty field; a text field beginning with =, +, -, @, tab or carriage return "
            "is written with a ' in front, so spreadsheets do not run it as a formula",
        },
        "example": "id,name,registry_id,network_id,network_name,governance_state,"
        "active_edges,allocated,address,network,station,channel,publication_status,held_at,"
        "held_reason,transports,presentations\r\n",
    },
}

# Contract 7: what every answer read from the graph carries, 200 and 304 alike.
_GENERATION_HEADERS = {
    "Registry-Generation": _header(
        "the generation (committed load) this answer came from; pass it as `generation` to "
        "keep reading that generation",
        "integer",
    ),
    "ETag": _header('weak: W/"<generation>-<hash of the URL>"; the same within a generation'),
    "Last-Modified": _header("the moment the generation was committed (HTTP-date)"),
    "Cache-Control": _header(
        "`private, no-cache` on /registry/*, `public, no-cache` on /summary; errors `no-store`"
    ),
}
_RESPONSES["NotModified"] = {
    "description": "If-None-Match matches the ETag (weak comparison; lists and * honoured), or "
    "without If-None-Match, If-Modified-Since is at or after Last-Modified: no body",
    "headers": _GENERATION_HEADERS,
}
_RESPONSES["GenerationGone"] = _json_response(
    "GenerationGone",
    "generation names one this registry produced but no longer keeps (details say which is "
    "current); a generation it never produced is a 400",
)

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

    generational: answered from a generation (contract 7): generation headers, 304, and on
    /registry the `generation` parameter's 410.
    """
    if generational:
        ok = {**ok, "headers": {**ok.get("headers", {}), **_GENERATION_HEADERS}}
    responses: dict[str, Any] = {"200": ok}
    if generational:
        responses["304"] = _ref("NotModified")
    responses["400"] = _ref("InvalidParameters")
    if secured:
        responses["401"] = _ref("Unauthorized")
        responses["403"] = _ref("Forbidden")
    if not_found:
        responses["404"] = _ref("OriginNotFound")
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
    response = _json_response("OriginEnvelope", description)
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
        # Relative to where the document is served, so it stays right behind a path prefix
        # (nginx maps /v1/ onto the server root).
        servers=[{"url": ".", "description": "the server this document is served from"}],
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
    for name, schema in _SCHEMAS:
        spec.components.schema(name, schema=schema)
    for name, response in _RESPONSES.items():
        spec.components.response(name, response)

    spec.path(
        "/summary",
        operations={
            "get": _operation(
                "getIntegrationStatus",
                "Broadcast-feed integration status (unrelated to the registry counts)",
                _json_response("IntegrationStatus", "the status"),
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
                _json_response("RegistrySummary", "the counts"),
                secured=True,
                parameters=[_PINNED],
                generational=True,
            )
        },
    )
    listing = _json_response(
        "OriginList",
        "one page of origins, by allocated address then origin id; a page past the end is "
        "empty and still carries the true total",
        {
            "Link": _header(
                'RFC 8288 links rel="first", "prev", "next", "last"; filters and limit kept, '
                "and generation=<Registry-Generation>, so following them sweeps one generation"
            )
        },
    )
    listing["links"] = _links(
        {"getOrigin": "/origins/0/origin/id", "getOriginByAddress": "/origins/0/bans/address"}
    )
    listing["description"] += (
        ". With Accept: application/x-ndjson or text/csv, every origin the filters match "
        "instead, streamed in one answer (page and limit are then a 400)"
    )
    listing["content"].update(_EXPORT_CONTENT)
    listing_operation = _operation(
        "listOrigins",
        "Canonical origins, one page at a time, or all of them as NDJSON or CSV; filters "
        "combine with AND",
        listing,
        secured=True,
        parameters=[{"in": "query", "schema": OriginListQuerySchema}],
        generational=True,
    )
    listing_operation["responses"]["406"] = _ref("NotAcceptable")
    spec.path(
        "/registry/origins",
        operations={"get": listing_operation},
    )
    spec.path(
        "/registry/origins/{originId}",
        operations={
            "get": _operation(
                "getOrigin",
                "One origin with all its presentations, by id",
                _origin_envelope("the origin"),
                secured=True,
                parameters=[
                    _path_parameter(
                        "originId",
                        "svc:origin:<uuid>, or the bare <uuid>; hex digits in either case",
                        ORIGIN_ID_FORMAT,
                        "svc:origin:3b2f1e0d-9c8b-4a7f-8e6d-5c4b3a291807",
                    ),
                    _PINNED,
                ],
                not_found=True,
                generational=True,
            )
        },
    )
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
    spec.path(
        "/openapi.json",
        operations={
            "get": _operation(
                "getOpenApiDocument",
                "This document: the interface description, version 1.0.0",
                {
                    "description": "the OpenAPI 3.1 document",
                    "content": {_JSON: {"schema": {"type": "object"}}},
                },
                secured=False,
                reads_database=False,
            )
        },
    )
    healthz = _operation(
        "getLiveness",
        "Liveness: the process answers (never touches the database)",
        _inline_json(
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
        _inline_json(
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
    readyz["responses"]["503"] = _inline_json(
        "not ready: the database cannot be reached, is over its time budget, or holds another "
        "schema version",
        {
            "success": {"const": False},
            "error": {"type": "string"},
            "ready": {"const": False},
            "reason": {"type": "string"},
        },
        {"Retry-After": _header("seconds to wait before retrying", "integer")},
    )
    spec.path("/healthz", operations={"get": healthz})
    spec.path("/readyz", operations={"get": readyz})
    return spec.to_dict()


def _inline_json(
    description: str, properties: dict[str, Any], headers: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A response whose small JSON body is described in place, every property required."""
    response: dict[str, Any] = {
        "description": description,
        "content": {
            _JSON: {
                "schema": {
                    "type": "object",
                    "properties": properties,
                    "required": list(properties),
                    "additionalProperties": False,
                }
            }
        },
    }
    if headers:
        response["headers"] = headers
    return response


@bp.get("/openapi.json", **GET_ROUTE)
def openapi_document() -> Response:
    """The interface description, version 1.0.0 (public, like /summary)."""
    refuse_any_query(request.args.to_dict(flat=False))
    return json_response(build_openapi_document())
