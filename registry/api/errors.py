"""Every error as JSON (docs/api.md, Errors): 400, 404, 405, 500 and 503."""

from __future__ import annotations

import logging
from typing import Any

import psycopg
from flask import Flask, Response, current_app
from marshmallow import ValidationError
from psycopg_pool import PoolTimeout, TooManyRequests
from werkzeug.exceptions import HTTPException, MethodNotAllowed

from registry.api.metrics import count_unavailable
from registry.api.responses import json_response
from schemas.errors import INVALID_PARAMETERS

log = logging.getLogger("registry.errors")

# Failures that mean "the database cannot answer now", not "the service is broken": a pool
# with no connection to give, a server that is down or over statement_timeout, a database
# that has never had a graph loaded into it, and a generation built before a column this
# code reads was added to the graph's layout (UndefinedColumn: a filter on a column of its
# own read in a generation kept from before it, whose migration did not add the column).
# That last is a 503 too, never a fallback that would ignore the filter (a wrong answer),
# nor a bare 500: the live graph answers again once the next load rebuilds it, an older
# generation once retention drops it, and registry_unavailable_total{cause="graph_layout"}
# tells the operator which it is (ARCHITECTURE.md, "Adding a filter or a facet").
DATABASE_UNAVAILABLE: tuple[type[Exception], ...] = (
    PoolTimeout,
    TooManyRequests,
    psycopg.OperationalError,
    psycopg.errors.QueryCanceled,
    psycopg.errors.UndefinedTable,
    psycopg.errors.InvalidSchemaName,
    psycopg.errors.UndefinedColumn,
)


class OriginNotFound(Exception):
    """A lookup matched no origin; the message says what was looked for."""


def error_response(
    status: int, error: str, headers: dict[str, str] | None = None, **extra: Any
) -> Response:
    """The documented error body: success false and what went wrong."""
    return json_response({"success": False, "error": error, **extra}, status, headers)


def _invalid_parameters(error: ValidationError) -> Response:
    """400: name each bad query parameter and why."""
    return error_response(400, INVALID_PARAMETERS, details=error.messages)


def _origin_not_found(error: OriginNotFound) -> Response:
    """404 for a lookup, saying what was looked for."""
    return error_response(404, str(error))


def _http_error(error: HTTPException) -> Response:
    """Werkzeug's own errors (404 no route, 405, malformed requests) as JSON."""
    headers = {}
    if isinstance(error, MethodNotAllowed) and error.valid_methods:
        headers["Allow"] = ", ".join(sorted(error.valid_methods))
    return error_response(error.code or 500, error.name, headers)


def service_unavailable() -> Response:
    """503 with Retry-After: the database is unreachable or over its time budget."""
    retry = str(current_app.config["REGISTRY_RETRY_AFTER_S"])
    return error_response(503, "Service Unavailable", {"Retry-After": retry})


def unavailable_cause(error: Exception, database_down: bool) -> str:
    """The metrics label of a database failure: pool timeout, statement timeout, down, no
    graph, or a generation without a column of this code's layout."""
    if isinstance(error, psycopg.errors.QueryCanceled):
        return "statement_timeout"
    if isinstance(error, psycopg.errors.UndefinedColumn):
        return "graph_layout"
    if isinstance(error, psycopg.errors.UndefinedTable | psycopg.errors.InvalidSchemaName):
        return "no_graph"
    if not database_down and isinstance(error, PoolTimeout | TooManyRequests):
        return "pool_timeout"
    return "database_down"


def _database_unavailable(error: Exception) -> Response:
    """The database failed us: say so briefly in the log, 503 to the caller.

    While the pool knows the database is down it has already logged that once (and will log
    its return), so each refused request is only a debug line then, not thousands a second.
    """
    database = current_app.extensions.get("registry_db")
    down = database is not None and database.unreachable
    count_unavailable(unavailable_cause(error, down))
    if isinstance(error, psycopg.errors.UndefinedColumn):
        # Not the database's fault but the layout's: said at the level of a defect, once a
        # request, with what to do.
        log.error(
            "a generation lacks a column this code reads (built before the column was added;"
            " a migration must add it to the generations kept, or the next load replaces the"
            " live one): %s",
            str(error).strip()[:300],
        )
        return service_unavailable()
    level = logging.DEBUG if down else logging.WARNING
    log.log(level, "database unavailable: %s: %s", type(error).__name__, str(error).strip()[:300])
    return service_unavailable()


def _unexpected(error: Exception) -> Response:
    """500 with no internals; the traceback goes to the server log only."""
    log.exception("unhandled error")
    return error_response(500, "Internal Server Error")


def register_errorhandlers(app: Flask) -> None:
    """Make every error JSON."""
    app.register_error_handler(ValidationError, _invalid_parameters)
    app.register_error_handler(OriginNotFound, _origin_not_found)
    app.register_error_handler(HTTPException, _http_error)
    for database_error in DATABASE_UNAVAILABLE:
        app.register_error_handler(database_error, _database_unavailable)
    app.register_error_handler(Exception, _unexpected)
