"""The per-origin record and its envelopes (docs/api.md, Records).

Validators here are never run on dump; they carry the documented bounds and formats into the
OpenAPI document, which is generated from these same classes.

The Origin record's fields are declared in sorted order at every level: a dump then holds its
keys as RFC 8785 sorts them, so the record the loader writes and sends is its canonical form,
the bytes its digest hashes (docs/api.md, "Digests"). The loader's compiled dump refuses a
schema declared otherwise (schemas/compiled.py, canonical=True).
"""

from __future__ import annotations

from typing import Any

import orjson
from marshmallow import Schema, fields, validate

TRANSPORTS = ("iptv", "ovp", "ota", "fast")
INT32_MAX = 2_147_483_647

# The id as the service writes it: the prefix and a lower-case uuid.
ORIGIN_ID_PATTERN = r"^svc:origin:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
# Plain decimal, as the service writes an address: no sign, no leading zeros.
ADDRESS_PATTERN = r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$"


def nullable_string(description: str, **extra: object) -> fields.String:
    """A string field that is always present and may be null."""
    return fields.String(
        required=True, allow_none=True, metadata={"description": description, **extra}
    )


def address_part(description: str) -> fields.Integer:
    """One integer of an allocated address; null without an allocation."""
    return fields.Integer(
        required=True,
        allow_none=True,
        validate=validate.Range(min=0, max=INT32_MAX),
        metadata={"description": description},
    )


def always(value: bool) -> fields.Boolean:
    """The envelope's `success`, which never varies within one kind of body."""
    return fields.Boolean(
        required=True,
        validate=validate.Equal(value),
        metadata={"description": f"always {str(value).lower()}"},
    )


class NetworkRefSchema(Schema):
    """The origin's network: both fields null when it has none."""

    id = nullable_string("network id")
    name = nullable_string("network name")


class OriginIdentitySchema(Schema):
    """The identity block (field `origin`)."""

    id = fields.String(
        required=True,
        validate=validate.Regexp(ORIGIN_ID_PATTERN),
        metadata={"description": "per-origin key, svc:origin:<uuid>"},
    )
    name = fields.String(required=True)
    network = fields.Nested(NetworkRefSchema, required=True)
    registry_id = nullable_string(
        "network-tier address, shared by sibling origins; not a per-origin key"
    )


class GovernanceSchema(Schema):
    """The governance block."""

    active_edges = fields.Integer(
        required=True,
        validate=validate.Range(min=0),
        metadata={"description": "count of active governance edges"},
    )
    state = fields.String(
        required=True,
        validate=validate.OneOf(["governed", "ungoverned"]),
        metadata={"description": "governed when there is at least one active edge"},
    )


class HeldSchema(Schema):
    """When and why an allocation is held."""

    at = fields.String(required=True, metadata={"format": "date-time"})
    reason = nullable_string("why it is held")


class BansAllocationSchema(Schema):
    """Address allocation and publication (field `bans`)."""

    address = fields.String(
        required=True,
        allow_none=True,
        validate=validate.Regexp(ADDRESS_PATTERN),
        metadata={"description": "<network>.<station>.<channel>, dot-separated integers"},
    )
    allocated = fields.Boolean(required=True)
    channel = address_part("channel number of the address")
    held = fields.Nested(
        HeldSchema,
        required=True,
        allow_none=True,
        metadata={"description": "when and why, if held; else null"},
    )
    network = address_part("network number of the address")
    publication_status = fields.String(
        required=True,
        allow_none=True,
        validate=validate.OneOf(["published", "held"]),
        metadata={"description": "null when there is no allocation status"},
    )
    station = address_part("station number of the address")


class PresentationSchema(Schema):
    """One resolved delivery form of the origin."""

    availability = nullable_string("reachability telemetry; null when unknown, never inferred")
    carriage_id = fields.String(required=True)
    provider = nullable_string("delivery provider")
    source = nullable_string("where the carriage was found")
    transport = fields.String(required=True, validate=validate.OneOf(TRANSPORTS))


class OriginSchema(Schema):
    """One canonical origin with everything about it."""

    bans = fields.Nested(BansAllocationSchema, required=True)
    governance = fields.Nested(GovernanceSchema, required=True)
    origin = fields.Nested(OriginIdentitySchema, required=True)
    presentations = fields.List(
        fields.Nested(PresentationSchema),
        required=True,
        metadata={"description": "every resolved presentation, by carriage_id"},
    )


class RenderedOrigin(fields.Nested):
    """An Origin already serialized by OriginSchema when the graph was loaded.

    The loader dumps every origin once with OriginSchema (registry/loader/rendering.py) and keeps
    the JSON; an envelope passes that JSON through untouched instead of rebuilding it per
    request. A plain dict is still dumped with OriginSchema.
    """

    def __init__(self, **kwargs: Any):
        super().__init__(OriginSchema, **kwargs)

    def _serialize(self, nested_obj: Any, attr: Any, obj: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        if isinstance(nested_obj, str | bytes):
            return orjson.Fragment(nested_obj)
        return super()._serialize(nested_obj, attr, obj, **kwargs)


class RenderedRecords:
    """Origins already serialized by OriginSchema, joined into one JSON array text.

    A listing's statement joins its page's records in position order; the answer passes the
    array through untouched, as RenderedOrigin does one record.
    """

    __slots__ = ("json",)

    def __init__(self, json: str):
        self.json = json


class RenderedOrigins(fields.List):
    """A list of Origin records: RenderedRecords passed through, anything else listed."""

    def __init__(self, **kwargs: Any):
        super().__init__(RenderedOrigin(), **kwargs)

    def _serialize(self, value: Any, attr: Any, obj: Any, **kwargs: Any) -> Any:
        if isinstance(value, RenderedRecords):
            return orjson.Fragment(value.json)
        return super()._serialize(value, attr, obj, **kwargs)


class EnvelopeSchema(Schema):
    """What every successful response starts with."""

    success = always(True)
    generated_at = fields.DateTime(
        format="iso", metadata={"description": "when the response was built (UTC)"}
    )


class OriginEnvelopeSchema(EnvelopeSchema):
    """GET /registry/origins/{originId} and GET /registry/addresses/{address}."""

    origin = RenderedOrigin(required=True)


class PageSchema(Schema):
    """Where this page sits in the listing."""

    page = fields.Integer(
        required=True,
        validate=validate.Range(min=1),
        metadata={"description": "current page number"},
    )
    limit = fields.Integer(
        required=True,
        validate=validate.Range(min=1, max=200),
        metadata={"description": "page size in effect"},
    )
    offset = fields.Integer(
        required=True,
        validate=validate.Range(min=0),
        metadata={"description": "origins skipped"},
    )
    returned = fields.Integer(
        required=True,
        validate=validate.Range(min=0, max=200),
        metadata={"description": "origins in this page"},
    )
    total = fields.Integer(
        required=True,
        validate=validate.Range(min=0),
        metadata={"description": "matching origins before pagination"},
    )


class OriginListSchema(EnvelopeSchema):
    """GET /registry/origins."""

    page = fields.Nested(PageSchema, required=True)
    filters_applied = fields.Dict(
        keys=fields.String(),
        metadata={
            "description": "the filters given, by parameter name, with their parsed values "
            "(has_presentations a boolean, station_id an integer); page and limit never"
        },
    )
    origins = RenderedOrigins(required=True)
