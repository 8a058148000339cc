"""An origin's history through the kept change sets (docs/api.md, An origin's history): the answer's
shape."""

from __future__ import annotations

from typing import Any

import orjson
from marshmallow import Schema, fields

from schemas.origin import EnvelopeSchema, RenderedOrigin, RenderedRecords


class OriginVersionSchema(Schema):
    """A span of generations over which the origin's record stayed the same, or it was absent."""

    from_ = fields.Integer(
        data_key="from", required=True, allow_none=True,
        metadata={"description": "the generation whose kept change set began the span "
                  "(included); null when no kept change set shows when it began"},
    )  # fmt: skip
    until = fields.Integer(
        required=True, allow_none=True,
        metadata={"description": "the generation that ended the span (excluded); null when "
                  "the record is still so at the generation answered"},
    )  # fmt: skip
    origin = RenderedOrigin(
        required=True, allow_none=True,
        metadata={"description": "the record as /registry/origins/{originId} answered it over "
                  "the span; null while the origin was absent (after a removal)"},
    )  # fmt: skip


class RenderedVersions(fields.List):
    """versions[]: joined as JSON text from the stored records (RenderedRecords), passed through."""

    def __init__(self, **kwargs: Any):
        super().__init__(fields.Nested(OriginVersionSchema), **kwargs)

    def _serialize(self, value: Any, attr: Any, obj: Any, **kwargs: Any) -> Any:
        if isinstance(value, RenderedRecords):
            return orjson.Fragment(value.json)
        return super()._serialize(value, attr, obj, **kwargs)


class OriginHistorySchema(EnvelopeSchema):
    """GET /registry/origins/{originId}/history."""

    generation = fields.Integer(
        required=True, metadata={"description": "the generation answered: history up to it"}
    )
    oldest_since = fields.Integer(
        required=True,
        metadata={"description": "the oldest generation from which every later change set is "
                  "kept (docs/api.md, Changes since any generation)"},
    )  # fmt: skip
    id = fields.String(required=True, metadata={"description": "svc:origin:<uuid>"})
    versions = RenderedVersions(
        required=True,
        metadata={"description": "newest first; consecutive versions meet (until of the older "
                  "is from of the newer) and differ"},
    )  # fmt: skip
