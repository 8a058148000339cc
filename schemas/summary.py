"""GET /summary (IntegrationStatus, docs/api.md, Summaries) and GET /registry/summary (docs/api.md,
Summaries)."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from schemas.origin import EnvelopeSchema, always


def _count(description: str, *, nullable: bool = False, required: bool = True) -> fields.Integer:
    """A count of origins, allocations or carriages: never negative."""
    # A nullable count is still always present (docs/api.md, Records), so `required` stays true.
    return fields.Integer(
        required=required,
        allow_none=nullable,
        validate=validate.Range(min=0),
        metadata={"description": description},
    )


def _feed_count(description: str) -> fields.Integer:
    """A count reported by the feed, passed on as loaded; left out when the feed has none."""
    return fields.Integer(metadata={"description": description})


class IntegrationStatusSchema(Schema):
    """The broadcast-feed integration status; absent counts are left out, never null."""

    success = always(True)
    connected = fields.Boolean(
        required=True, metadata={"description": "whether the broadcast feed is connected"}
    )
    networks = _feed_count("networks in the feed")
    iptv_networks = _feed_count("IPTV networks in the feed")
    ovp_networks = _feed_count("OVP networks in the feed")
    channels = _feed_count("channels in the feed")
    programs = _feed_count("programs in the feed")
    reviews = _feed_count("reviews in the feed")
    pending_reviews = _feed_count("reviews still pending")
    generated_at = fields.DateTime(
        format="iso", metadata={"description": "when the response was built (UTC)"}
    )


class TransportInventorySchema(Schema):
    """Catalog carriages by transport; null where the catalog does not classify it."""

    iptv = _count("IPTV carriages", nullable=True)
    ovp = _count("OVP carriages", nullable=True)
    ota = _count("OTA carriages", nullable=True)
    fast = _count("FAST carriages", nullable=True)


class ResolvedPresentationsSchema(Schema):
    """Carriages resolved to an origin, by transport."""

    iptv = _count("resolved IPTV carriages")
    ovp = _count("resolved OVP carriages")
    ota = _count("resolved OTA carriages")
    fast = _count("resolved FAST carriages")


class RegistrySummarySchema(EnvelopeSchema):
    """Platform-wide counts over canonical origins and catalog carriages."""

    canonical_origins = _count("total canonical origins")
    reviewed_origins = _count("origins with a reviewed crosswalk (their presentations resolve)")
    governed_origins = _count("origins with an active governance edge")
    eligible_unallocated = _count("governed origins with no address allocation", required=False)
    bans_allocated = _count("allocation total")
    published = _count("allocations in publication state published")
    held = _count("allocations in publication state held")
    catalog_carriages = _count(
        "total catalog carriages; null when no catalog is connected", nullable=True
    )
    resolved_carriages = _count(
        "carriages resolved to an origin; null when no catalog is connected",
        nullable=True,
    )
    unresolved_carriages = _count(
        "carriages not resolved to an origin; null when no catalog is connected",
        nullable=True,
    )
    transport_inventory = fields.Nested(TransportInventorySchema, required=True)
    resolved_presentations = fields.Nested(ResolvedPresentationsSchema, required=True)
