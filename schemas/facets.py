"""The `facets` member of a listing (docs/api.md, Facets and ids), as a JSON Schema for the OpenAPI
document.

The service builds the member itself (registry/database/facets.py) and the envelope passes
it through; this says exactly what each facet holds, so that schemathesis and openapi-core
check every answer that has one.
"""

from __future__ import annotations

from typing import Any

from marshmallow import fields

from schemas.origin import INT32_MAX, TRANSPORTS, OriginListSchema
from schemas.params import FACET_SIZE_MAX


def _facet(value: dict[str, Any], *, ranked: bool = False) -> dict[str, Any]:
    """One facet: its values, each with its count, and whether values were left out."""
    properties: dict[str, Any] = {
        "value": value,
        "count": {"type": "integer", "minimum": 1 if ranked else 0},
    }
    if value.get("title") == "network":
        properties["name"] = {
            "type": ["string", "null"],
            "description": "the network's name; null for origins with no network",
        }
    item = {
        "type": "object",
        "required": list(properties),
        "additionalProperties": False,
        "properties": properties,
    }
    values: dict[str, Any] = {"type": "array", "items": item}
    if ranked:
        values["maxItems"] = FACET_SIZE_MAX
    return {
        "type": "object",
        "required": ["values", "truncated"],
        "additionalProperties": False,
        "properties": {
            "values": values,
            "truncated": {
                "type": "boolean",
                "description": "more values have a count above 0 than facet_size shows",
            },
        },
    }


FACETS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "with facet only: per facet asked for, in that order, how many of the "
    "matching origins (all pages) have each value. governance_state, allocation_state, "
    "publication_status, has_presentations and transport list every value, 0 included (one "
    "origin may count under several transports); network_id and station_id the values with a "
    "count above 0, by count descending then value ascending (null last), at most facet_size",
    "properties": {
        "governance_state": _facet({"enum": ["governed", "ungoverned"]}),
        "allocation_state": _facet({"enum": ["allocated", "unallocated"]}),
        "publication_status": _facet({"enum": ["published", "held", None]}),
        "transport": _facet({"enum": list(TRANSPORTS)}),
        "has_presentations": _facet({"type": "boolean"}),
        "network_id": _facet(
            {"title": "network", "type": ["string", "null"], "minLength": 1}, ranked=True
        ),
        "station_id": _facet(
            {"type": ["integer", "null"], "minimum": 0, "maximum": INT32_MAX}, ranked=True
        ),
    },
}


class FacetedOriginListSchema(OriginListSchema):
    """GET /registry/origins, with `facets` when facet was given."""

    facets = fields.Raw(metadata=FACETS_SCHEMA)
