"""The query of an export (contract 8): the listing's filters, never a page."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from marshmallow import Schema, ValidationError

from schemas.params import OriginListQuerySchema

PAGING = ("page", "limit")
NOT_IN_EXPORT = "not taken by an export, which streams every match; leave it out"

ORIGIN_EXPORT_QUERY = OriginListQuerySchema(exclude=PAGING)


def parse_origin_export_query(args: Mapping[str, list[str]]) -> dict[str, Any]:
    """The filters from name -> values given; ValidationError names each bad one, page too."""
    return parse_export_query(ORIGIN_EXPORT_QUERY, args)


def parse_export_query(schema: Schema, args: Mapping[str, list[str]]) -> dict[str, Any]:
    """What schema (a listing's query without page and limit) loads from name -> values given;
    ValidationError names each bad parameter, page and limit too."""
    refused = {name: [NOT_IN_EXPORT] for name in PAGING if name in args}
    rest = {name: values for name, values in args.items() if name not in refused}
    try:
        filters: dict[str, Any] = schema.load(rest)
    except ValidationError as error:
        messages = error.messages if isinstance(error.messages, dict) else {}
        raise ValidationError({**messages, **refused}) from None
    if refused:
        raise ValidationError(refused)
    return filters
