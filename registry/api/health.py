"""Health probes, public and JSON: /healthz (the process answers) and /readyz (it can serve).

/healthz touches nothing: a process manager restarts the service only when this fails, and a
database outage must not make it restart healthy workers. /readyz asks the database for the
schema version, through the same pool and time budgets as every request: a load balancer takes
the instance out of rotation while it fails, and puts it back when it passes.
"""

from __future__ import annotations

from datetime import UTC

import psycopg
from flask import Blueprint, Response, current_app, request

from registry.api.connection import get_connection
from registry.api.errors import DATABASE_UNAVAILABLE, error_response
from registry.api.responses import GET_ROUTE, json_response
from registry.database.migrations import SCHEMA_VERSION
from registry.database.repository import get_schema_state
from schemas.params import refuse_any_query

bp = Blueprint("health", __name__)

# Probes must see the present, never a cached answer.
_NO_STORE = {"Cache-Control": "no-store"}
# Failures meaning the schema is not there at all (never migrated, or no graph loaded).
_NOT_SET_UP = (psycopg.errors.UndefinedTable, psycopg.errors.InvalidSchemaName)


def not_ready(reason: str) -> Response:
    """503 with Retry-After, saying why the instance cannot serve."""
    headers = {"Retry-After": str(current_app.config["REGISTRY_RETRY_AFTER_S"]), **_NO_STORE}
    return error_response(503, "Service Unavailable", headers, ready=False, reason=reason)


@bp.get("/healthz", **GET_ROUTE)
def healthz() -> Response:
    """GET /healthz: 200 while the process answers; no database."""
    refuse_any_query(request.args.to_dict(flat=False))
    return json_response({"success": True, "status": "ok"}, headers=_NO_STORE)


@bp.get("/readyz", **GET_ROUTE)
def readyz() -> Response:
    """GET /readyz: 200 when the database answers with the schema this code expects."""
    refuse_any_query(request.args.to_dict(flat=False))
    try:
        state = get_schema_state(get_connection())
    except _NOT_SET_UP:
        return not_ready("the database has no registry schema: run `registry db upgrade`")
    except psycopg.errors.QueryCanceled:
        return not_ready("the database is over its time budget")
    except DATABASE_UNAVAILABLE:
        return not_ready("the database cannot be reached")
    for name in ("migrations_version", "graph_version"):
        if state[name] != SCHEMA_VERSION:
            found = "none" if state[name] is None else state[name]
            return not_ready(f"{name} is {found}, this code expects {SCHEMA_VERSION}")
    body = {
        "success": True,
        "ready": True,
        "schema_version": SCHEMA_VERSION,
        "loaded_at": state["loaded_at"].astimezone(UTC) if state["loaded_at"] else None,
    }
    return json_response(body, headers=_NO_STORE)
