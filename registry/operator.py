"""The registry (operator) surface under /registry; the admin token hook guards all of it."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlencode

from flask import Blueprint, Response, request

from registry import repository
from registry.db import get_connection
from registry.errors import OriginNotFound
from registry.responses import json_response, now_utc
from schemas.origin import OriginEnvelopeSchema, OriginListSchema
from schemas.params import FILTER_NAMES, parse_origin_list_query
from schemas.summary import RegistrySummarySchema

bp = Blueprint("registry", __name__, url_prefix="/registry")

REGISTRY_SUMMARY = RegistrySummarySchema()
ORIGIN_ENVELOPE = OriginEnvelopeSchema()
ORIGIN_LIST = OriginListSchema()

_ORIGIN_ID = re.compile(
    r"(?:svc:origin:)?([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\Z"
)
# Plain decimal: no sign, no leading zeros, ASCII digits only.
_ADDRESS = re.compile(r"(0|[1-9][0-9]{0,9})\.(0|[1-9][0-9]{0,9})\.(0|[1-9][0-9]{0,9})\Z")
_INT32_MAX = 2_147_483_647


def _shown(text: str) -> str:
    """A caller's identifier, cut short for an error message."""
    return text if len(text) <= 100 else text[:97] + "..."


@bp.get("/summary", provide_automatic_options=False)
def registry_summary() -> Response:
    """GET /registry/summary: counts over origins and catalog carriages."""
    summary = repository.get_registry_summary(get_connection())
    return json_response(
        REGISTRY_SUMMARY.dump({"success": True, "generated_at": now_utc(), **summary})
    )


@bp.get("/origins", provide_automatic_options=False)
def list_origins() -> Response:
    """GET /registry/origins: one page of origins in address order, filters ANDed."""
    query = parse_origin_list_query(request.args.to_dict(flat=False))
    page, limit = query.pop("page"), query.pop("limit")
    offset = (page - 1) * limit
    total, origins = repository.list_origins(get_connection(), query, limit, offset)
    body = {
        "success": True,
        "generated_at": now_utc(),
        "page": {
            "page": page,
            "limit": limit,
            "offset": offset,
            "returned": len(origins),
            "total": total,
        },
        "filters_applied": query,
        "origins": origins,
    }
    return json_response(ORIGIN_LIST.dump(body), headers={"Link": _page_links(query, page, limit, total)})


@bp.get("/origins/<origin_id>", provide_automatic_options=False)
def get_origin(origin_id: str) -> Response:
    """GET /registry/origins/{originId}: svc:origin:<uuid> or the bare uuid."""
    match = _ORIGIN_ID.match(origin_id)
    origin = None
    if match is not None:
        origin = repository.get_origin_by_id(get_connection(), match.group(1).lower())
    if origin is None:
        raise OriginNotFound(f"No origin with id {_shown(origin_id)}")
    return json_response(
        ORIGIN_ENVELOPE.dump({"success": True, "generated_at": now_utc(), "origin": origin})
    )


@bp.get("/addresses/<address>", provide_automatic_options=False)
def get_origin_by_address(address: str) -> Response:
    """GET /registry/addresses/{address}: the origin holding network.station.channel."""
    match = _ADDRESS.match(address)
    origin = None
    if match is not None:
        network, station, channel = (int(part) for part in match.groups())
        if max(network, station, channel) <= _INT32_MAX:
            origin = repository.get_origin_by_address(get_connection(), network, station, channel)
    if origin is None:
        raise OriginNotFound(f"No origin holds address {_shown(address)}")
    return json_response(
        ORIGIN_ENVELOPE.dump({"success": True, "generated_at": now_utc(), "origin": origin})
    )


def _query_value(value: Any) -> str:
    """A parsed filter written back as it goes in a URL."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _page_links(filters: dict[str, Any], page: int, limit: int, total: int) -> str:
    """RFC 8288 first, prev, next and last links that keep the filters."""
    last = max(1, -(-total // limit))
    base = request.script_root + request.path
    kept = [(name, _query_value(filters[name])) for name in FILTER_NAMES if name in filters]

    def link(target: int, rel: str) -> str:
        query = urlencode([*kept, ("page", str(target)), ("limit", str(limit))])
        return f'<{base}?{query}>; rel="{rel}"'

    links = [link(1, "first")]
    if page > 1:
        links.append(link(min(page - 1, last), "prev"))
    if page < last:
        links.append(link(page + 1, "next"))
    links.append(link(last, "last"))
    return ", ".join(links)
