"""The OpenAPI 3.1 document, generated from the schemas the service serializes with."""

from __future__ import annotations

from functools import cache
from typing import Any

from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin

from schemas.origin import (
    ErrorSchema,
    ForbiddenSchema,
    OriginEnvelopeSchema,
    OriginListSchema,
    UnauthorizedSchema,
)
from schemas.params import OriginListQuerySchema
from schemas.summary import IntegrationStatusSchema, RegistrySummarySchema

_JSON = "application/json"


def _body(schema: str, description: str, headers: dict[str, Any] | None = None) -> dict[str, Any]:
    """A response with a JSON body of the named component schema."""
    response: dict[str, Any] = {
        "description": description,
        "content": {_JSON: {"schema": {"$ref": f"#/components/schemas/{schema}"}}},
    }
    if headers:
        response["headers"] = headers
    return response


_RETRY_AFTER = {"Retry-After": {"schema": {"type": "integer"}, "description": "seconds"}}
_WWW_AUTHENTICATE = {"WWW-Authenticate": {"schema": {"type": "string"}}}
_COMMON_ERRORS = {
    "405": _body("Error", "method other than GET or HEAD", {"Allow": {"schema": {"type": "string"}}}),
    "500": _body("Error", "unexpected failure (no internals shown)"),
    "503": _body("Error", "database unreachable or over its time budget", _RETRY_AFTER),
}
_AUTH_ERRORS = {
    "401": _body("Unauthorized", "token missing or invalid: refresh it and retry", _WWW_AUTHENTICATE),
    "403": _body("Forbidden", "authenticated, but neither global nor domain admin"),
}
_LINK = {"Link": {"schema": {"type": "string"}, "description": "RFC 8288 first, prev, next, last"}}


def _operation(summary: str, ok: dict[str, Any], *, secured: bool, **extra: Any) -> dict[str, Any]:
    """One GET operation with its 200 and every error it can answer."""
    responses = {"200": ok, **_COMMON_ERRORS}
    if secured:
        responses.update(_AUTH_ERRORS)
    responses.update(extra.pop("responses", {}))
    operation: dict[str, Any] = {"summary": summary, "responses": responses, **extra}
    if secured:
        operation["security"] = [{"bearerAuth": []}, {"cookieAuth": []}]
    return operation


def _path_parameter(name: str, description: str, pattern: str | None = None) -> dict[str, Any]:
    """A required path parameter."""
    schema: dict[str, Any] = {"type": "string"}
    if pattern:
        schema["pattern"] = pattern
    return {"in": "path", "name": name, "required": True, "description": description, "schema": schema}


@cache
def build_openapi_document() -> dict[str, Any]:
    """The whole document (built once per process)."""
    spec = APISpec(
        title="Broadcast Registry Read API",
        version="1.0.0",
        openapi_version="3.1.0",
        plugins=[MarshmallowPlugin()],
        info={
            "description": "A read-only API over a broadcast graph: canonical origins with their "
            "governance, address allocation, publication state and delivery forms."
        },
        servers=[{"url": "/"}],
    )
    spec.components.security_scheme("bearerAuth", {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"})
    spec.components.security_scheme("cookieAuth", {"type": "apiKey", "in": "cookie", "name": "access_token"})
    for name, schema in (
        ("IntegrationStatus", IntegrationStatusSchema),
        ("RegistrySummary", RegistrySummarySchema),
        ("OriginEnvelope", OriginEnvelopeSchema),
        ("OriginList", OriginListSchema),
        ("Error", ErrorSchema),
        ("Unauthorized", UnauthorizedSchema),
        ("Forbidden", ForbiddenSchema),
    ):
        spec.components.schema(name, schema=schema)

    not_found = {"404": _body("Error", "no origin matches")}
    spec.path(
        "/summary",
        operations={"get": _operation("Broadcast-feed integration status",
                                      _body("IntegrationStatus", "the status"), secured=False)},
    )
    spec.path(
        "/registry/summary",
        operations={"get": _operation("Counts over canonical origins and catalog carriages",
                                      _body("RegistrySummary", "the counts"), secured=True)},
    )
    spec.path(
        "/registry/origins",
        operations={
            "get": _operation(
                "Canonical origins, one page at a time, by address then id",
                _body("OriginList", "one page", _LINK),
                secured=True,
                parameters=[{"in": "query", "schema": OriginListQuerySchema}],
                responses={"400": _body("Error", "a query parameter is invalid")},
            )
        },
    )
    spec.path(
        "/registry/origins/{originId}",
        operations={
            "get": _operation(
                "One origin by id",
                _body("OriginEnvelope", "the origin"),
                secured=True,
                parameters=[_path_parameter("originId", "svc:origin:<uuid>, or the bare <uuid>")],
                responses=not_found,
            )
        },
    )
    spec.path(
        "/registry/addresses/{address}",
        operations={
            "get": _operation(
                "The origin holding a channel-tier address",
                _body("OriginEnvelope", "the origin"),
                secured=True,
                parameters=[_path_parameter("address", "<network>.<station>.<channel>")],
                responses=not_found,
            )
        },
    )
    return spec.to_dict()
