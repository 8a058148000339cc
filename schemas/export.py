"""The query of an export (docs/export.md): the listing's filters, never a page."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from marshmallow import Schema, ValidationError

from schemas.params import FACET_PARAMETERS, OriginListQuerySchema

PAGING = ("page", "limit")
NOT_IN_EXPORT = "not taken by an export, which streams every match; leave it out"
# Facets are counted in the JSON listing only (docs/api.md, Facets and ids).
NOT_IN_ORIGIN_EXPORT = (*PAGING, *FACET_PARAMETERS)

ORIGIN_EXPORT_QUERY = OriginListQuerySchema(exclude=NOT_IN_ORIGIN_EXPORT)


def parse_origin_export_query(args: Mapping[str, list[str]]) -> dict[str, Any]:
    """The filters from name -> values given; ValidationError names each bad one, page too."""
    return parse_export_query(ORIGIN_EXPORT_QUERY, args, NOT_IN_ORIGIN_EXPORT)


def parse_export_query(
    schema: Schema, args: Mapping[str, list[str]], not_taken: tuple[str, ...] = PAGING
) -> dict[str, Any]:
    """What schema (a listing's query without the not_taken names: page and limit) loads from
    name -> values given; ValidationError names each bad parameter, not_taken ones too."""
    refused = {name: [NOT_IN_EXPORT] for name in not_taken if name in args}
    rest = {name: values for name, values in args.items() if name not in refused}
    try:
        filters: dict[str, Any] = schema.load(rest)
    except ValidationError as error:
        messages = error.messages if isinstance(error.messages, dict) else {}
        raise ValidationError({**messages, **refused}) from None
    if refused:
        raise ValidationError(refused)
    return filters
