"""GET /summary (IntegrationStatus, spec §2.1) and GET /registry/summary (§2.2)."""

from __future__ import annotations

from marshmallow import Schema, fields

from schemas.origin import EnvelopeSchema


def _count(description: str = "", *, nullable: bool = False, required: bool = True) -> fields.Integer:
    """A count field."""
    return fields.Integer(
        required=required, allow_none=nullable, metadata={"description": description} if description else {}
    )


class IntegrationStatusSchema(Schema):
    """The broadcast-feed integration status; absent counts are left out, never null."""

    success = fields.Boolean(required=True, metadata={"description": "always true"})
    connected = fields.Boolean(required=True)
    networks = fields.Integer()
    iptv_networks = fields.Integer()
    ovp_networks = fields.Integer()
    channels = fields.Integer()
    programs = fields.Integer()
    reviews = fields.Integer()
    pending_reviews = fields.Integer()
    generated_at = fields.DateTime(format="iso")


class TransportInventorySchema(Schema):
    """Catalog carriages by transport; null where the catalog does not classify it."""

    iptv = _count(nullable=True)
    ovp = _count(nullable=True)
    ota = _count(nullable=True)
    fast = _count(nullable=True)


class ResolvedPresentationsSchema(Schema):
    """Carriages resolved to an origin, by transport."""

    iptv = _count()
    ovp = _count()
    ota = _count()
    fast = _count()


class RegistrySummarySchema(EnvelopeSchema):
    """Platform-wide counts over canonical origins and catalog carriages."""

    canonical_origins = _count("total canonical origins")
    reviewed_origins = _count("origins with a reviewed crosswalk")
    governed_origins = _count("origins with an active governance edge")
    eligible_unallocated = fields.Integer(
        metadata={"description": "governed origins with no address allocation"}
    )
    bans_allocated = _count("allocation total")
    published = _count("allocations in publication state published")
    held = _count("allocations in publication state held")
    catalog_carriages = _count("total catalog carriages", nullable=True, required=False)
    resolved_carriages = _count("carriages resolved to an origin", nullable=True, required=False)
    unresolved_carriages = _count(
        "carriages not resolved to an origin", nullable=True, required=False
    )
    transport_inventory = fields.Nested(TransportInventorySchema, required=True)
    resolved_presentations = fields.Nested(ResolvedPresentationsSchema, required=True)
