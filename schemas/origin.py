"""The per-origin record (spec §2.3–§2.5) and its envelopes (§2.6)."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

TRANSPORTS = ("iptv", "ovp", "ota", "fast")


def nullable_string(description: str, **extra: object) -> fields.String:
    """A string field that is always present and may be null."""
    return fields.String(required=True, allow_none=True, metadata={"description": description, **extra})


class NetworkRefSchema(Schema):
    """The origin's network: both fields null when it has none."""

    id = nullable_string("network id")
    name = nullable_string("network name")


class OriginIdentitySchema(Schema):
    """The identity block (field `origin`)."""

    id = fields.String(
        required=True,
        metadata={"description": "per-origin key, svc:origin:<uuid>", "pattern": "^svc:origin:"},
    )
    name = fields.String(required=True)
    registry_id = nullable_string(
        "network-tier address, shared by sibling origins; not a per-origin key"
    )
    network = fields.Nested(NetworkRefSchema, required=True)


class GovernanceSchema(Schema):
    """The governance block."""

    state = fields.String(required=True, validate=validate.OneOf(["governed", "ungoverned"]))
    active_edges = fields.Integer(
        required=True,
        validate=validate.Range(min=0),
        metadata={"description": "count of active governance edges"},
    )


class HeldSchema(Schema):
    """When and why an allocation is held."""

    at = fields.String(required=True, metadata={"format": "date-time"})
    reason = nullable_string("why it is held")


class BansAllocationSchema(Schema):
    """Address allocation and publication (field `bans`)."""

    allocated = fields.Boolean(required=True)
    address = nullable_string(
        "<network>.<station>.<channel>, dot-separated integers", pattern=r"^\d+\.\d+\.\d+$"
    )
    network = fields.Integer(required=True, allow_none=True)
    station = fields.Integer(required=True, allow_none=True)
    channel = fields.Integer(required=True, allow_none=True)
    publication_status = fields.String(
        required=True,
        allow_none=True,
        validate=validate.OneOf(["published", "held"]),
    )
    held = fields.Nested(HeldSchema, required=True, allow_none=True)


class PresentationSchema(Schema):
    """One resolved delivery form of the origin."""

    carriage_id = fields.String(required=True)
    transport = fields.String(required=True, validate=validate.OneOf(TRANSPORTS))
    provider = nullable_string("delivery provider")
    source = nullable_string("where the carriage was found")
    availability = nullable_string("reachability telemetry; null when unknown, never inferred")


class OriginSchema(Schema):
    """One canonical origin with everything about it."""

    origin = fields.Nested(OriginIdentitySchema, required=True)
    governance = fields.Nested(GovernanceSchema, required=True)
    bans = fields.Nested(BansAllocationSchema, required=True)
    presentations = fields.List(fields.Nested(PresentationSchema), required=True)


class EnvelopeSchema(Schema):
    """What every successful registry response starts with."""

    success = fields.Boolean(required=True, metadata={"description": "always true"})
    generated_at = fields.DateTime(format="iso", metadata={"description": "when it was built"})


class OriginEnvelopeSchema(EnvelopeSchema):
    """GET /registry/origins/{originId} and GET /registry/addresses/{address}."""

    origin = fields.Nested(OriginSchema, required=True)


class PageSchema(Schema):
    """Where this page sits in the listing."""

    page = fields.Integer(required=True, metadata={"description": "current page number"})
    limit = fields.Integer(required=True, metadata={"description": "page size in effect"})
    offset = fields.Integer(required=True, metadata={"description": "origins skipped"})
    returned = fields.Integer(required=True, metadata={"description": "origins in this page"})
    total = fields.Integer(
        required=True, metadata={"description": "matching origins before pagination"}
    )


class OriginListSchema(EnvelopeSchema):
    """GET /registry/origins."""

    page = fields.Nested(PageSchema, required=True)
    filters_applied = fields.Dict(
        keys=fields.String(), metadata={"description": "the filters given, with parsed values"}
    )
    origins = fields.List(fields.Nested(OriginSchema), required=True)


class ErrorSchema(Schema):
    """Every error body but 401 and 403."""

    success = fields.Boolean(required=True, metadata={"description": "always false"})
    error = fields.String(required=True)
    details = fields.Dict(
        keys=fields.String(),
        values=fields.List(fields.String()),
        metadata={"description": "400 only: why each named parameter was refused"},
    )


class UnauthorizedSchema(Schema):
    """401: no token, or not a valid one."""

    error = fields.String(required=True, validate=validate.Equal("Unauthorized"))


class ForbiddenSchema(Schema):
    """403: a valid token without an admin role."""

    error = fields.String(required=True, validate=validate.Equal("Domain admin access required"))
    message = fields.String()
