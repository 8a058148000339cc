"""The components of /openapi.json: its schemas, shared responses and response headers.

Built from the marshmallow schemas the views dump with; `registry.api.openapi` puts them
together with the paths that use them.
"""

from __future__ import annotations

from typing import Any

from schemas.changes import ChangeListSchema, ChangeSchema, GenerationListSchema
from schemas.errors import (
    ChangesGoneSchema,
    ErrorSchema,
    ForbiddenSchema,
    GenerationGoneSchema,
    GenerationNotFoundSchema,
    InvalidParametersSchema,
    ServiceUnavailableSchema,
    SinceNotFoundSchema,
    UnauthorizedSchema,
)
from schemas.facets import FacetedOriginListSchema
from schemas.origin import OriginEnvelopeSchema
from schemas.params import (
    FACET_NAMES,
    FACET_PARAMETERS,
    FACET_SIZE_DEFAULT,
    FACET_SIZE_MAX,
    OriginListQuerySchema,
)
from schemas.summary import IntegrationStatusSchema, RegistrySummarySchema

JSON = "application/json"

SCHEMAS = (
    ("IntegrationStatus", IntegrationStatusSchema),
    ("RegistrySummary", RegistrySummarySchema),
    ("OriginEnvelope", OriginEnvelopeSchema),
    ("OriginList", FacetedOriginListSchema),
    ("Error", ErrorSchema),
    ("ServiceUnavailable", ServiceUnavailableSchema),
    ("InvalidParameters", InvalidParametersSchema),
    ("Unauthorized", UnauthorizedSchema),
    ("Forbidden", ForbiddenSchema),
    ("GenerationGone", GenerationGoneSchema),
    ("GenerationNotFound", GenerationNotFoundSchema),
    ("SinceNotFound", SinceNotFoundSchema),
    ("ChangesGone", ChangesGoneSchema),
    ("Change", ChangeSchema),
    ("ChangeList", ChangeListSchema),
    ("GenerationList", GenerationListSchema),
)
# Component schemas composed of the ones above: a lookup's 404 is either body.
COMPOSED_SCHEMAS = {
    "LookupNotFound": {
        "oneOf": [
            {"$ref": "#/components/schemas/Error"},
            {"$ref": "#/components/schemas/GenerationNotFound"},
        ]
    },
    # /registry/changes: generation=n or since=m names what was never produced, or is gone.
    "ChangesNotFound": {
        "oneOf": [
            {"$ref": "#/components/schemas/GenerationNotFound"},
            {"$ref": "#/components/schemas/SinceNotFound"},
        ]
    },
    "ChangesGoneOrGenerationGone": {
        "oneOf": [
            {"$ref": "#/components/schemas/GenerationGone"},
            {"$ref": "#/components/schemas/ChangesGone"},
        ]
    },
}


def header(description: str, schema_type: str = "string") -> dict[str, Any]:
    """A response header the service always sends with that response."""
    return {"description": description, "required": True, "schema": {"type": schema_type}}


def json_body_response(
    schema: str, description: str, headers: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A response with a JSON body of the named component schema."""
    response: dict[str, Any] = {
        "description": description,
        "content": {JSON: {"schema": {"$ref": f"#/components/schemas/{schema}"}}},
    }
    if headers:
        response["headers"] = headers
    return response


# Shared responses, referenced by name from each operation.
RESPONSES = {
    "InvalidParameters": json_body_response(
        "InvalidParameters",
        "a query parameter is unknown, repeated, empty, or has a value outside its type or "
        "bounds; details names each one",
    ),
    "Unauthorized": json_body_response(
        "Unauthorized",
        "token missing or invalid: refresh it and retry",
        {"WWW-Authenticate": header('Bearer, with error="invalid_token" when a token was given')},
    ),
    "Forbidden": json_body_response(
        "Forbidden", "authenticated, but neither a global nor a domain administrator"
    ),
    "OriginNotFound": json_body_response(
        "LookupNotFound",
        "no origin matches (a malformed value matches none, so it is a 404 too), or "
        "generation names one this registry never produced (the GenerationNotFound body)",
    ),
    "MethodNotAllowed": json_body_response(
        "Error", "a method other than GET or HEAD", {"Allow": header("GET, HEAD")}
    ),
    "InternalServerError": json_body_response("Error", "an unexpected failure; no internals shown"),
    "NotAcceptable": json_body_response(
        "Error", "Accept admits none of application/json, application/x-ndjson and text/csv"
    ),
    "ServiceUnavailable": json_body_response(
        "ServiceUnavailable",
        "the database is unreachable or over its time budget (on /registry, also when the "
        "token key set cannot be fetched; on the listing, also an NDJSON or CSV export when "
        "REGISTRY_MAX_EXPORTS exports already stream on this instance, with a message naming "
        "that limit)",
        {"Retry-After": header("seconds to wait before retrying", "integer")},
    ),
}

# The listing's export representations (docs/export.md), chosen with Accept.
EXPORT_CONTENT = {
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

# docs/api.md, Generations and conditional requests: what every answer read from the graph carries,
# 200 and 304 alike.
GENERATION_HEADERS = {
    "Registry-Generation": header(
        "the generation (committed load) this answer came from; pass it as `generation` to "
        "keep reading that generation",
        "integer",
    ),
    "Registry-Digest": {
        **header(
            "the digest of that generation: the sum modulo 2^256 of the SHA-256 of each of its "
            "origins' records in RFC 8785 canonical form, as 64 lowercase hex digits; a copy "
            "that holds every record of the generation computes the same (docs/mirror.md)"
        ),
        "schema": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
    },
    "ETag": header('weak: W/"<generation>-<hash of the URL>"; the same within a generation'),
    "Last-Modified": header("the moment the generation was committed (HTTP-date)"),
    "Cache-Control": header(
        "`private, no-cache` on /registry/*, `public, no-cache` on /summary; errors `no-store`"
    ),
}
RESPONSES["NotModified"] = {
    "description": "If-None-Match matches the ETag (weak comparison; lists and * honoured), or "
    "without If-None-Match, If-Modified-Since is at or after Last-Modified: no body",
    "headers": GENERATION_HEADERS,
}
RESPONSES["GenerationGone"] = json_body_response(
    "GenerationGone",
    "generation names one this registry produced but no longer keeps (details say which is "
    "current)",
)
RESPONSES["GenerationNotFound"] = json_body_response(
    "GenerationNotFound",
    "generation is well-formed but names one this registry never produced (details say "
    "which is current); a malformed one is a 400",
)


def inline_json(
    description: str, properties: dict[str, Any], headers: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A response whose small JSON body is described in place, every property required."""
    response: dict[str, Any] = {
        "description": description,
        "content": {
            JSON: {
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


CHANGE_EXPORT_CONTENT = {
    "application/x-ndjson": {
        "schema": {
            "$ref": "#/components/schemas/Change",
            "description": "newline-delimited JSON: one Change (as in changes[]) per line, each "
            "line ending in a newline, by origin id, all from one generation",
        },
    },
    "text/csv": {
        "schema": {
            "type": "string",
            "description": "RFC 4180 CSV, UTF-8, CRLF line ends, a header row; the columns id, "
            "kind, blocks (joined by ';'), name and address (of the record after the change, "
            "or before it for a removed origin; address empty when unallocated); a name "
            "beginning with =, +, -, @, tab or carriage return is written with a ' in front",
        },
        "example": "id,kind,blocks,name,address\r\n",
    },
}


def comma_lists(document: dict[str, Any]) -> dict[str, Any]:
    """The document with every array-valued query parameter (`facet`, `id`: one value, its
    items comma-separated, schemas/params.py CommaList) said to be form style, not exploded."""
    for operations in document["paths"].values():
        for operation in operations.values():
            for parameter in operation.get("parameters", ()):
                if parameter.get("in") == "query" and parameter["schema"].get("type") == "array":
                    parameter["style"] = "form"
                    parameter["explode"] = False
    return document


# The listing's parameters but facet and facet_size, which FACET_OPTIONS describes together.
LISTING_FILTERS = OriginListQuerySchema(exclude=FACET_PARAMETERS)
_FACET_NAME = "|".join(FACET_NAMES)
# facet and facet_size as one exploded object (?facet=a,b&facet_size=3), as CHANGE_FILTERS
# does for kind and block: a list of parameters cannot say that facet_size needs facet
# (docs/api.md, Facets and ids). facet is its comma-separated list (form style, not exploded), each
# name once.
FACET_OPTIONS = {
    "in": "query",
    "name": "facet_options",
    "required": False,
    "style": "form",
    "explode": True,
    "description": "facet and facet_size, each optional: facet_size only with facet",
    # Empty, so that the /docs page's "Try it out" sends neither until the caller fills them
    # in (otherwise it makes an example up from the schema: a facet list from the pattern).
    "example": {},
    "schema": {
        "type": "object",
        "properties": {
            "facet": {
                "type": "string",
                "description": "count the matching origins (all pages) per value of each named "
                "field, in the answer's `facets`; comma-separated, each name once",
                "pattern": f"^({_FACET_NAME})(,({_FACET_NAME}))*$",
                "not": {"pattern": f"(^|,)({_FACET_NAME}),(.*,)?\\2(,|$)"},
            },
            "facet_size": {
                "type": "integer",
                "minimum": 1,
                "maximum": FACET_SIZE_MAX,
                "default": FACET_SIZE_DEFAULT,
                "description": "at most this many values of the network_id and station_id facets",
            },
        },
        "additionalProperties": False,
        "dependentRequired": {"facet_size": ["facet"]},
    },
}
