"""Changes between generations (docs/api.md, Changes between generations): the query and the
answers' shapes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from schemas.export import PAGING, parse_export_query
from schemas.origin import (
    INT32_MAX,
    EnvelopeSchema,
    PageSchema,
    RenderedOrigin,
    RenderedRecords,
)
from schemas.params import (
    GENERATION_MAX,
    Choice,
    DecimalInteger,
    StrictQuerySchema,
    generation_parameter,
)

KINDS = ("added", "removed", "changed")
BLOCKS = ("origin", "governance", "bans", "presentations")
BLOCK_WITHOUT_CHANGED = "only changed origins have blocks: give kind=changed or leave kind out"


class ChangeListQuerySchema(StrictQuerySchema):
    """GET /registry/changes: kind, block, the page wanted, the generation, the since."""

    kind = Choice(KINDS, "added (in this generation only), removed (in the previous only) or "
                  "changed (in both, with a different record)")  # fmt: skip
    block = Choice(BLOCKS, "changed origins whose record differs in this top-level block")
    page = DecimalInteger(
        1, INT32_MAX, "1-based page number", load_default=1, metadata={"default": 1}
    )
    limit = DecimalInteger(1, 200, "changes per page", load_default=50, metadata={"default": 50})
    generation = generation_parameter()
    since = DecimalInteger(
        1,
        GENERATION_MAX,
        "the net changes from this generation (the Registry-Generation a client last saw) to "
        "the generation answered (docs/api.md, Changes since any generation): 410 once older than "
        "the oldest since, 404 if never produced, 400 if newer than the generation answered; "
        "default its previous",
    )

    @validates_schema
    def _block_needs_changed(self, data: dict[str, Any], **kwargs: Any) -> None:
        """block with kind added or removed is a 400 (docs/api.md, Changes between generations)."""
        if "block" in data and data.get("kind", "changed") != "changed":
            raise ValidationError(BLOCK_WITHOUT_CHANGED, "block")


CHANGE_LIST_QUERY = ChangeListQuerySchema()
CHANGE_EXPORT_QUERY = ChangeListQuerySchema(exclude=PAGING)


def parse_change_list_query(args: Mapping[str, list[str]]) -> dict[str, Any]:
    """kind, block, page, limit and generation (when given); ValidationError names each bad one."""
    return CHANGE_LIST_QUERY.load(dict(args))


def parse_change_export_query(args: Mapping[str, list[str]]) -> dict[str, Any]:
    """kind, block and generation; page and limit are refused as in an origins export."""
    return parse_export_query(CHANGE_EXPORT_QUERY, args)


def _count(description: str) -> fields.Integer:
    """A count of changes; null for a generation loaded before change sets were recorded."""
    return fields.Integer(
        required=True, allow_none=True, validate=validate.Range(min=0),
        metadata={"description": description},
    )  # fmt: skip


class ChangeCountsSchema(Schema):
    """How many origins a generation added, removed and changed (the whole generation)."""

    added = _count("origins in this generation only")
    removed = _count("origins in the previous generation only")
    changed = _count("origins in both, with a different record")


class ChangeSchema(Schema):
    """How one origin differs from the previous generation."""

    id = fields.String(required=True, metadata={"description": "svc:origin:<uuid>"})
    kind = fields.String(required=True, validate=validate.OneOf(KINDS))
    blocks = fields.List(
        fields.String(validate=validate.OneOf(BLOCKS)),
        required=True,
        metadata={"description": "the top-level blocks that differ, in record order; [] for "
                  "added and removed"},
    )  # fmt: skip
    before = RenderedOrigin(
        required=True, allow_none=True,
        metadata={"description": "the record as the previous generation answered it"},
    )  # fmt: skip
    after = RenderedOrigin(
        required=True, allow_none=True,
        metadata={"description": "the record as this generation answers it"},
    )  # fmt: skip


class RenderedChanges(fields.List):
    """changes[]: the page's objects joined by the statement (RenderedRecords), passed through."""

    def __init__(self, **kwargs: Any):
        super().__init__(fields.Nested(ChangeSchema), **kwargs)

    def _serialize(self, value: Any, attr: Any, obj: Any, **kwargs: Any) -> Any:
        if isinstance(value, RenderedRecords):
            return orjson.Fragment(value.json)
        return super()._serialize(value, attr, obj, **kwargs)


class ChangeListSchema(EnvelopeSchema):
    """GET /registry/changes."""

    generation = fields.Integer(required=True, metadata={"description": "whose changes"})
    previous = fields.Integer(
        required=True, allow_none=True,
        metadata={"description": "the generation committed just before; null for the first"},
    )  # fmt: skip
    since = fields.Integer(
        required=True, allow_none=True,
        metadata={"description": "the generation compared with (docs/api.md, Changes since any "
                                 "generation): since= as given, else previous"},
    )  # fmt: skip
    counts = fields.Nested(ChangeCountsSchema, required=True)
    filters_applied = fields.Dict(
        keys=fields.String(), metadata={"description": "kind and block, as given"}
    )
    page = fields.Nested(PageSchema, required=True)
    changes = RenderedChanges(required=True)


class GenerationSchema(Schema):
    """One generation whose change set (or graph) is kept."""

    generation = fields.Integer(required=True)
    previous = fields.Integer(required=True, allow_none=True)
    committed_at = fields.DateTime(format="iso", required=True)
    canonical_origins = fields.Integer(required=True, validate=validate.Range(min=0))
    counts = fields.Nested(ChangeCountsSchema, required=True)
    readable = fields.Boolean(
        required=True,
        metadata={"description": "its graph is kept: generation=<generation> answers (else "
                  "only its change set is, for since=)"},
    )  # fmt: skip
    digest = fields.String(
        required=True, allow_none=True, validate=validate.Regexp("^[0-9a-f]{64}$"),
        metadata={"description": "the generation's digest, as its Registry-Digest header "
                  "says (docs/mirror.md); null when unknown: loaded before digests, its graph "
                  "gone before an upgrade could compute it",
                  "pattern": "^[0-9a-f]{64}$"},
    )  # fmt: skip


class GenerationListSchema(EnvelopeSchema):
    """GET /registry/generations: every generation whose change set is kept, newest first."""

    current = fields.Integer(required=True, allow_none=True)
    oldest_since = fields.Integer(
        required=True,
        metadata={"description": "the oldest since=m the generation answered still answers "
                  "for (docs/api.md, Changes since any generation)"},
    )  # fmt: skip
    generations = fields.List(fields.Nested(GenerationSchema), required=True)
