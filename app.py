"""The application factory: defaults, then the environment, then the caller's overlay."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from flask import Flask

from registry.api import (
    changes,
    connection,
    docs,
    export,
    health,
    history,
    openapi,
    operator,
    public,
)
from registry.api.admin_token import register_auth
from registry.api.errors import register_errorhandlers
from registry.api.generations import register_generations
from registry.api.metrics import register_metrics
from registry.api.request_log import register_request_logging
from registry.api.responses import OrjsonProvider
from registry.settings import DEFAULTS, settings_from_environ


def create_app(config: Mapping[str, Any] | None = None) -> Flask:
    """Build the WSGI app; `config` (tests) overrides the environment, which overrides defaults."""
    app = Flask(__name__)
    app.config.from_mapping(DEFAULTS)
    app.config.update(settings_from_environ())
    if config:
        app.config.update(config)
    app.json = OrjsonProvider(app)
    configure_logger(app)
    register_request_logging(app)
    connection.init_app(app)
    export.init_exports(app)
    register_metrics(app)
    register_auth(app)
    register_blueprints(app)
    register_errorhandlers(app)
    register_generations(app)
    return app


def register_blueprints(app: Flask) -> None:
    """The public surface, the registry surface, the OpenAPI document, its page, the probes."""
    app.register_blueprint(public.bp)
    app.register_blueprint(operator.bp)
    app.register_blueprint(changes.bp)
    app.register_blueprint(history.bp)
    app.register_blueprint(openapi.bp)
    app.register_blueprint(docs.bp)
    app.register_blueprint(health.bp)


def configure_logger(app: Flask) -> None:
    """Log at the configured level."""
    logging.getLogger("registry").setLevel(str(app.config["REGISTRY_LOG_LEVEL"]).upper())
