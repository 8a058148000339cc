"""Placeholder until the token rules land: every /registry request is refused."""

from __future__ import annotations

from flask import Flask, request

from registry.responses import json_response


def register_auth(app: Flask) -> None:
    """Refuse /registry until real verification is in place."""

    @app.before_request
    def require_admin_token():  # type: ignore[no-untyped-def]
        if request.path == "/registry" or request.path.startswith("/registry/"):
            if request.headers.get("X-Placeholder-Admin") != "yes":
                return json_response({"error": "Unauthorized"}, 401)
        return None
