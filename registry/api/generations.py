"""Generation headers and conditional requests (docs/api.md, Generations and conditional requests)
for /summary and /registry/*.

Every answer read from the graph carries the generation it came from (Registry-Generation),
a weak ETag of that generation and the URL, Last-Modified (the generation's commit, or for an
answer that a drop changed after it, that drop: `stamped`) and Cache-Control. A request with
If-None-Match or If-Modified-Since is first checked against the current generation with one
tiny query (`not_modified_early`), before any listing or lookup query; whatever that cannot
decide is decided on the full answer (`stamped`). Nothing is cached in the process: a load
commits in another process (and a reader may be another host), so only the database can say
which generation is current.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, TypeVar

import psycopg
from flask import Flask, Response, request
from werkzeug.datastructures import Headers
from werkzeug.http import http_date

from registry.api.admin_token import is_registry_path
from registry.api.connection import get_connection
from registry.api.errors import OriginNotFound, error_response
from registry.database.generations import (
    GenerationDropped,
    GenerationNotProduced,
    Stamp,
    pinned_stamp,
    read_generation,
)

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIEnvironment

JSON = "application/json"
GENERATION_HEADER = "Registry-Generation"
# Beside every Registry-Generation: the digest of that generation (registry.digest).
DIGEST_HEADER = "Registry-Digest"
GONE_ERROR = "Generation no longer available"
NOT_FOUND_ERROR = "Generation not found"
# docs/api.md, Generations and conditional requests: a client may keep /registry answers but must
# revalidate, and no shared cache may store them; /summary is public. Error answers are never
# stored.
PRIVATE = "private, no-cache"
PUBLIC = "public, no-cache"
NO_STORE = "no-store"

T = TypeVar("T")


class OriginNotFoundIn(OriginNotFound):
    """A lookup that matched no origin in a known generation (404 with Registry-Generation)."""

    def __init__(self, message: str, stamp: Stamp):
        super().__init__(message)
        self.stamp = stamp


def etag(generation: int, representation: str = JSON, variant: str = "") -> str:
    """The weak ETag of this request's URL in generation: W/"<generation>-<hash>".

    variant: what else the answer depends on beside its URL and generation (the kept
    generations, for the generation list); folded into the hash."""
    url = request.path.encode() + b"?" + request.query_string + b"\n" + representation.encode()
    if variant:
        url += b"\n" + variant.encode()
    return f'W/"{generation}-{hashlib.blake2b(url, digest_size=6).hexdigest()}"'


@functools.lru_cache(maxsize=16)
def _http_date(committed_at: datetime) -> str:
    """Last-Modified of a generation: the same few commit times are written again and again."""
    return http_date(committed_at)


def generation_headers(
    stamp: Stamp, representation: str = JSON, variant: str = ""
) -> dict[str, str]:
    """Registry-Generation, Registry-Digest, ETag, Last-Modified and Cache-Control of an
    answer from stamp."""
    return {
        **stamp_headers(stamp),
        "ETag": etag(stamp.generation, representation, variant),
        "Last-Modified": _http_date(stamp.committed_at),
        "Cache-Control": PRIVATE if is_registry_path(request.path) else PUBLIC,
    }


def stamp_headers(stamp: Stamp) -> dict[str, str]:
    """Registry-Generation, and the digest of that generation beside it (absent only for a
    generation loaded before digests that no upgrade reached)."""
    headers = {GENERATION_HEADER: str(stamp.generation)}
    if stamp.digest is not None:
        headers[DIGEST_HEADER] = stamp.digest
    return headers


def read(
    generation: int | None, reader: Callable[[psycopg.Connection, str], tuple[Stamp, T]]
) -> tuple[Stamp, T]:
    """reader(conn, schema) run on the generation asked for (None: the newest)."""
    return read_generation(get_connection(), generation, reader)


def stamped(
    response: Response,
    stamp: Stamp,
    representation: str = JSON,
    *,
    variant: str = "",
    changed_at: datetime | None = None,
) -> Response:
    """The answer with its generation headers, or 304 if the request's conditions say so.

    variant: folded into the ETag (etag()). changed_at: a moment after the generation's
    commit when the answer changed (a drop); an If-Modified-Since before it is not a 304, and
    Last-Modified says when it changed (_changed_last), so that the Last-Modified a client
    was given still gets its 304 (docs/api.md, Generations and conditional requests).
    """
    headers = generation_headers(stamp, representation, variant)
    if changed_at is not None and changed_at >= stamp.committed_at:
        headers["Last-Modified"] = http_date(_changed_last(changed_at))
    if response.status_code == 200 and _not_modified(
        stamp, headers["ETag"], certain=True, changed_at=changed_at
    ):
        return not_modified_response(headers)
    response.headers.update(headers)
    return response


def _changed_last(changed_at: datetime) -> datetime:
    """Last-Modified of an answer that changed at changed_at: the first whole second after it
    (an HTTP-date has no fraction, and an If-Modified-Since at or before the change is not a
    304), once that second has come; until then the second of the change, which gets no 304
    yet. A Last-Modified is never later than the answer's own time (RFC 9110 8.8.2.1), so a
    later change is always after it."""
    whole = changed_at.replace(microsecond=0)
    after = whole + timedelta(seconds=1)
    return after if after <= datetime.now(UTC) else whole


def not_modified_early(
    generation: int | None, *, exists: bool = True, representation: str = JSON
) -> Response | None:
    """304 from one tiny query when the request's validators match the generation's answer.

    exists: the URL has an answer in every generation (listings, summaries). A lookup does
    not (its origin may be missing); there only an If-None-Match naming an ETag decides
    early, because this service gave that ETag for a 200 of the same URL and generation.
    Raises GenerationNotProduced or GenerationDropped for a pinned generation not kept.
    """
    if not is_conditional():
        return None
    if not exists and ("If-None-Match" not in request.headers or request.if_none_match.star_tag):
        return None
    stamp = pinned_stamp(get_connection(), generation)
    if stamp is None:
        return None
    return not_modified_on(stamp, representation, certain=exists)


def not_modified_on(
    stamp: Stamp, representation: str = JSON, *, certain: bool = True
) -> Response | None:
    """304 when the request's validators match the answer stamp would give this URL; else
    None. certain: as not_modified_early's exists."""
    headers = generation_headers(stamp, representation)
    if _not_modified(stamp, headers["ETag"], certain=certain):
        return not_modified_response(headers)
    return None


def is_conditional() -> bool:
    """Whether the request asks for a 304 (If-None-Match or If-Modified-Since)."""
    return "If-None-Match" in request.headers or "If-Modified-Since" in request.headers


class NotModifiedResponse(Response):
    """304 that keeps Last-Modified: docs/api.md, Generations and conditional requests sends it on
    304 too, and werkzeug would strip it with the other representation headers (RFC 9110 allows it:
    15.4.5)."""

    def get_wsgi_headers(self, environ: WSGIEnvironment) -> Headers:
        """Werkzeug's 304 headers, with Last-Modified put back."""
        headers = super().get_wsgi_headers(environ)
        modified = self.headers.get("Last-Modified")
        if modified is not None and "Last-Modified" not in headers:
            headers["Last-Modified"] = modified
        return headers


def not_modified_response(headers: dict[str, str]) -> Response:
    """304: no body, the answer's validators and Cache-Control."""
    response = NotModifiedResponse(status=304, headers=headers)
    del response.headers["Content-Type"]
    return response


def _not_modified(
    stamp: Stamp, current: str, *, certain: bool, changed_at: datetime | None = None
) -> bool:
    """RFC 9110 13.2.2 for GET and HEAD: If-None-Match decides; else If-Modified-Since
    (against the commit, or a later change of the answer: changed_at)."""
    if "If-None-Match" in request.headers:
        tags = request.if_none_match
        if tags.star_tag:
            return certain
        return tags.contains_weak(current[3:-1])
    since = request.if_modified_since  # None when absent or not an HTTP-date: ignored
    if since is None:
        return False
    if changed_at is not None and since <= changed_at:
        # changed after the commit: an HTTP-date has no fraction, so the second it changed
        # in is not a 304 either
        return False
    return since >= stamp.committed_at.replace(microsecond=0)


def _generation_dropped(error: GenerationDropped) -> Response:
    """410: the generation asked for was produced but is no longer kept."""
    details = {"generation": error.generation, "current": error.current}
    return error_response(410, GONE_ERROR, details=details)


def _generation_not_produced(error: GenerationNotProduced) -> Response:
    """404: a well-formed generation that this registry never produced."""
    details = {"generation": error.generation, "current": error.current}
    return error_response(404, NOT_FOUND_ERROR, details=details)


def _origin_not_found_in(error: OriginNotFoundIn) -> Response:
    """404 for a lookup, with the generation that has no such origin."""
    return error_response(404, str(error), stamp_headers(error.stamp))


def _errors_are_not_stored(response: Response) -> Response:
    """Error answers of /summary and /registry/* carry Cache-Control: no-store."""
    if response.status_code >= 400 and (
        request.path == "/summary" or is_registry_path(request.path)
    ):
        response.headers["Cache-Control"] = NO_STORE
    return response


def register_generations(app: Flask) -> None:
    """The 410 and 404 answers for pinned generations, and no-store on error answers."""
    app.register_error_handler(GenerationDropped, _generation_dropped)
    app.register_error_handler(GenerationNotProduced, _generation_not_produced)
    app.register_error_handler(OriginNotFoundIn, _origin_not_found_in)
    app.after_request(_errors_are_not_stored)
