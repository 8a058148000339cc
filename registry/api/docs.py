"""GET /docs: interactive documentation (Swagger UI) over /openapi.json, from packaged assets.

The page and its scripts come from the service itself: Swagger UI's bundle as the
flask-swagger-ui package ships it, and a page and a start-up script of our own (no inline
script, so the Content-Security-Policy can forbid every source but this service). Every URL
in the page carries the deployment's prefix (SCRIPT_NAME), so it works behind nginx at /v1/docs.
The page is HTML by design; everything else here keeps the API's rules: GET and HEAD only,
and an unknown asset is the JSON 404.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from flask import Blueprint, Response, abort, render_template, request, send_from_directory

from registry.api.responses import GET_ROUTE
from schemas.params import refuse_any_query

bp = Blueprint("docs", __name__, template_folder="docs_page")

# Swagger UI as flask-swagger-ui ships it (its own blueprint is not used: it answers OPTIONS,
# serves every file of the folder, and renders an inline script that a strict policy forbids).
_SWAGGER_UI = Path(str(files("flask_swagger_ui") / "dist"))
_OWN = Path(__file__).resolve().parent / "docs_page"
# The only files served under /docs/, and where each one lives.
ASSETS = {
    "swagger-ui.css": _SWAGGER_UI,
    "swagger-ui-bundle.js": _SWAGGER_UI,
    "index.css": _SWAGGER_UI,
    "favicon-32x32.png": _SWAGGER_UI,
    "favicon-16x16.png": _SWAGGER_UI,
    "init.js": _OWN,
}
ASSET_MAX_AGE_S = 3600

# The page may load its own assets, and call this service (the document and "Try it out"),
# and nothing else; Swagger UI's stylesheet draws its icons as data: images.
CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)
PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


@bp.get("/docs", **GET_ROUTE)
def docs_page() -> Response:
    """GET /docs: the Swagger UI page over this deployment's /openapi.json."""
    refuse_any_query(request.args.to_dict(flat=False))
    response = Response(render_template("registry_docs.html"), mimetype="text/html")
    response.headers.update(PAGE_HEADERS)
    response.headers["Cache-Control"] = "no-cache"
    return response


@bp.get("/docs/<name>", **GET_ROUTE)
def docs_asset(name: str) -> Response:
    """GET /docs/<name>: one of the page's own assets; any other name is the JSON 404."""
    folder = ASSETS.get(name)
    if folder is None:
        abort(404)
    refuse_any_query(request.args.to_dict(flat=False))
    response = send_from_directory(folder, name, max_age=ASSET_MAX_AGE_S)
    response.headers.update(PAGE_HEADERS)
    return response
