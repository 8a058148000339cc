"""The registry (operator) surface under /registry; the admin token hook guards all of it."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlencode

import psycopg
from flask import Blueprint, Response, request

from registry.api.export import JSON, export_origins, negotiated_type, not_acceptable
from registry.api.generations import OriginNotFoundIn, not_modified_early, read, stamped
from registry.api.responses import GET_ROUTE, json_response, now_utc
from registry.database import repository
from registry.database.facets import Facets, count_facets
from registry.database.generations import Stamp
from schemas.export import parse_origin_export_query
from schemas.facets import FacetedOriginListSchema
from schemas.origin import INT32_MAX, OriginEnvelopeSchema, RenderedRecords
from schemas.params import (
    ADDRESS_FORMAT,
    FACET_PARAMETERS,
    FACET_SIZE_DEFAULT,
    FILTER_NAMES,
    ORIGIN_ID_FORMAT,
    parse_origin_list_query,
    parse_pinned_query,
)
from schemas.summary import RegistrySummarySchema

bp = Blueprint("registry", __name__, url_prefix="/registry")

REGISTRY_SUMMARY = RegistrySummarySchema()
ORIGIN_ENVELOPE = OriginEnvelopeSchema()
ORIGIN_LIST = FacetedOriginListSchema()
# A page and its facets are read by two statements; when a load swapped the graph between
# them, both are read again, at most this often.
_FACET_ATTEMPTS = 3

_ORIGIN_ID = re.compile(ORIGIN_ID_FORMAT)
_ADDRESS = re.compile(ADDRESS_FORMAT)


def shown(text: str) -> str:
    """A caller's identifier, cut short for an error message."""
    return text if len(text) <= 100 else text[:97] + "..."


def origin_uuid(origin_id: str) -> str | None:
    """The lower-case uuid of a path's originId (svc:origin:<uuid> or the bare uuid); None
    for a malformed one, which names no origin (a 404, docs/api.md, Errors)."""
    match = _ORIGIN_ID.fullmatch(origin_id)
    return match.group(2).lower() if match is not None else None


def _query() -> dict[str, list[str]]:
    """The request's query: name -> every value given under it, in order."""
    return request.args.to_dict(flat=False)


@bp.get("/summary", **GET_ROUTE)
def registry_summary() -> Response:
    """GET /registry/summary: counts over origins and catalog carriages."""
    generation = parse_pinned_query(_query())
    if (early := not_modified_early(generation)) is not None:
        return early
    stamp, summary = read(generation, repository.get_registry_summary)
    return stamped(
        json_response(
            REGISTRY_SUMMARY.dump({"success": True, "generated_at": now_utc(), **summary})
        ),
        stamp,
    )


@bp.get("/origins", **GET_ROUTE)
def list_origins() -> Response:
    """GET /registry/origins: one page of origins in address order, filters ANDed.

    With Accept asking for NDJSON or CSV: every matching origin, streamed (docs/export.md).
    """
    representation = negotiated_type()
    if representation is None:
        return not_acceptable()
    if representation != JSON:
        return export_origins(representation, parse_origin_export_query(_query()))
    filters = parse_origin_list_query(_query())
    page, limit = filters.pop("page"), filters.pop("limit")
    generation = filters.pop("generation", None)
    shaping = {name: filters.pop(name) for name in FACET_PARAMETERS if name in filters}
    if (early := not_modified_early(generation)) is not None:
        early.vary.add("Accept")
        return early
    offset = (page - 1) * limit
    names = shaping.get("facet")
    size = shaping.get("facet_size", FACET_SIZE_DEFAULT)

    def page_and_facets(
        conn: psycopg.Connection, schema: str
    ) -> tuple[Stamp, tuple[repository.Page, Facets | None]]:
        """The page and, when asked for, its facets, both from one generation."""
        for _ in range(_FACET_ATTEMPTS):
            stamp, found = repository.list_origins(conn, filters, limit, offset, schema)
            if names is None:
                return stamp, (found, None)
            counted, facets = count_facets(conn, filters, names, size, stamp, schema)
            if counted == stamp:
                return stamp, (found, facets)
        # Loads swapped the graph between the two statements every time: ask for a retry.
        raise psycopg.errors.QueryCanceled("the graph moved between a page and its facets")

    stamp, (found, facets) = read(generation, page_and_facets)
    body: dict[str, Any] = {
        "success": True,
        "generated_at": now_utc(),
        "page": {
            "page": page,
            "limit": limit,
            "offset": offset,
            "returned": found.returned,
            "total": found.total,
        },
        "filters_applied": filters,
        "origins": RenderedRecords(found.records),
    }
    if facets is not None:
        body["facets"] = facets
    links = page_links({**filters, **shaping}, page, limit, found.total, stamp.generation)
    response = stamped(json_response(ORIGIN_LIST.dump(body), headers={"Link": links}), stamp)
    response.vary.add("Accept")
    return response


@bp.get("/origins/<origin_id>", **GET_ROUTE)
def get_origin(origin_id: str) -> Response:
    """GET /registry/origins/{originId}: svc:origin:<uuid> or the bare uuid."""
    generation = parse_pinned_query(_query())
    if (early := not_modified_early(generation, exists=False)) is not None:
        return early
    uuid = origin_uuid(origin_id)
    stamp, origin = read(
        generation,
        lambda conn, schema: repository.get_origin_by_id(conn, uuid, schema),
    )
    if origin is None:
        raise OriginNotFoundIn(f"No origin with id {shown(origin_id)}", stamp)
    return _origin_response(origin, stamp)


@bp.get("/addresses/<address>", **GET_ROUTE)
def get_origin_by_address(address: str) -> Response:
    """GET /registry/addresses/{address}: the origin holding network.station.channel."""
    generation = parse_pinned_query(_query())
    if (early := not_modified_early(generation, exists=False)) is not None:
        return early
    match = _ADDRESS.fullmatch(address)
    # A malformed or out-of-range address is held by no origin: look up one that never is,
    # so the 404 still says which generation answered.
    network, station, channel = (int(part) for part in match.groups()) if match else (-1, -1, -1)
    if max(network, station, channel) > INT32_MAX:
        network = station = channel = -1
    stamp, origin = read(
        generation,
        lambda conn, schema: repository.get_origin_by_address(
            conn, network, station, channel, schema
        ),
    )
    if origin is None:
        raise OriginNotFoundIn(f"No origin holds address {shown(address)}", stamp)
    return _origin_response(origin, stamp)


def _origin_response(origin: str, stamp: Stamp) -> Response:
    """200 with one origin record and its generation headers."""
    return stamped(
        json_response(
            ORIGIN_ENVELOPE.dump({"success": True, "generated_at": now_utc(), "origin": origin})
        ),
        stamp,
    )


def _query_value(value: Any) -> str:
    """A parsed filter written back as it goes in a URL (a list: comma-separated)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(value)
    return str(value)


def page_links(
    filters: dict[str, Any],
    page: int,
    limit: int,
    total: int,
    generation: int,
    names: tuple[str, ...] = (*FILTER_NAMES, *FACET_PARAMETERS),
) -> str:
    """RFC 8288 first, prev, next and last links that keep the filters (names, in that order)
    and the limit.

    Each carries the answer's generation, so following them sweeps that one generation.
    """
    last = max(1, -(-total // limit))
    base = request.script_root + request.path
    # The filters are encoded once; page, limit and generation are plain integers.
    # Commas and colons stay as they are (RFC 3986 allows both in a query), so that a list of
    # 100 ids keeps each of the four links short enough (deploy/nginx.conf, docs/api.md).
    kept = urlencode(
        [(name, _query_value(filters[name])) for name in names if name in filters], safe=",:"
    )
    prefix = f"<{base}?{kept}&page=" if kept else f"<{base}?page="
    tail = f"&limit={limit}&generation={generation}>; rel="

    def link(target: int, rel: str) -> str:
        """One link-value to page target."""
        return f'{prefix}{target}{tail}"{rel}"'

    links = [link(1, "first")]
    if page > 1:
        # Past the end, the previous page worth having is the last one.
        links.append(link(min(page - 1, last), "prev"))
    if page < last:
        links.append(link(page + 1, "next"))
    links.append(link(last, "last"))
    return ", ".join(links)
