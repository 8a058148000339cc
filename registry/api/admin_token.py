"""The admin token hook on /registry (docs/authentication.md): find, verify, decide.

A `before_request` hook guards every path under /registry, routed or not, before any view,
query or database connection. Verification itself is registry.tokens; this module turns its
verdict into 401, 403 or 503. See docs/authentication.md for the decisions.
"""

from __future__ import annotations

import logging
import re

from flask import Flask, Response, current_app, g, request

from registry.api.errors import service_unavailable
from registry.api.metrics import count_token_rejection, count_unavailable, rejection_reason
from registry.api.responses import json_response
from registry.tokens.keys import KeySourceUnavailable
from registry.tokens.verifier import TokenRejected, TokenVerifier, find_token

log = logging.getLogger("registry.auth")

COOKIE_NAME = "access_token"
FORBIDDEN_ERROR = "Domain admin access required"


def is_registry_path(path: str) -> bool:
    """True for /registry and everything under it, however many slashes separate segments."""
    # Werkzeug merges repeated slashes by redirecting, so //registry/x must be guarded too,
    # or the redirect would tell an anonymous caller that the route exists.
    collapsed = re.sub(r"/{2,}", "/", path) if "//" in path else path
    return collapsed == "/registry" or collapsed.startswith("/registry/")


def unauthorized(presented: bool) -> Response:
    """401 exactly as docs/authentication.md has it; no token, no reason in the body."""
    challenge = 'Bearer error="invalid_token"' if presented else "Bearer"
    return json_response({"error": "Unauthorized"}, 401, {"WWW-Authenticate": challenge})


def forbidden(roles_claim: str) -> Response:
    """403: authenticated, but the roles claim names neither admin role."""
    message = (
        f"This endpoint requires the global_admin or domain_admin role in the token's "
        f"{roles_claim} claim."
    )
    return json_response({"error": FORBIDDEN_ERROR, "message": message}, 403)


def require_admin_token() -> Response | None:
    """Guard /registry: 401, 403 or 503 here, before routing errors, views or the database."""
    if not is_registry_path(request.path):
        return None
    verifier: TokenVerifier = current_app.extensions["registry_auth"]
    # WSGI gives a header one environ entry (a server joins repeated ones), so this is what
    # request.headers.getlist("Authorization") returns, without walking every header.
    environ = request.environ
    authorization = environ.get("HTTP_AUTHORIZATION")
    cookies = request.cookies.getlist(COOKIE_NAME) if "HTTP_COOKIE" in environ else []
    found = find_token([] if authorization is None else [authorization], cookies)
    if found.token is None:
        count_token_rejection("malformed" if found.presented else "missing")
        return unauthorized(found.presented)
    try:
        claims = verifier.verify(found.token)
    except TokenRejected as rejected:
        log.debug("token rejected: %s", rejected.reason)
        count_token_rejection(rejection_reason(rejected.reason))
        return unauthorized(presented=True)
    except KeySourceUnavailable:
        count_token_rejection("jwks_unavailable")
        count_unavailable("jwks_unavailable")
        return service_unavailable()
    if not verifier.is_admin(claims):
        count_token_rejection("forbidden_role")
        return forbidden(verifier.roles_claim)
    g.registry_claims = claims
    return None


def register_auth(app: Flask) -> None:
    """Build the verifier once from app.config (bad settings refuse to start) and add the hook."""
    app.extensions["registry_auth"] = TokenVerifier.from_settings(app.config)
    app.before_request(require_admin_token)
