"""Fixtures of the HTTP tests. Authentication fixtures are named auth_*; add yours below."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.ec import EllipticCurvePrivateKey
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from flask import Flask

from tests.api.api_support import CheckedClient, GraphBuilder, OpenApiConformance
from tests.conftest import app_config, load_records

# -- authentication ------------------------------------------------------------------------

AUTH_AUDIENCE = "registry-api"
AUTH_ISSUER = "https://sso.example.test"


@dataclass(frozen=True)
class AuthKeys:
    """Real key pairs generated once per run: ours (RSA and EC) and an attacker's."""

    rsa: RSAPrivateKey
    ec: EllipticCurvePrivateKey
    attacker_rsa: RSAPrivateKey
    attacker_ec: EllipticCurvePrivateKey

    @staticmethod
    def public_pem(key: RSAPrivateKey | EllipticCurvePrivateKey) -> str:
        """The PEM text of a private key's public half."""
        return (
            key.public_key()
            .public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            .decode()
        )


@pytest.fixture(scope="session")
def auth_keys() -> AuthKeys:
    """RSA-2048 and P-256 key pairs, ours and an attacker's."""
    return AuthKeys(
        rsa=rsa.generate_private_key(public_exponent=65537, key_size=2048),
        ec=ec.generate_private_key(ec.SECP256R1()),
        attacker_rsa=rsa.generate_private_key(public_exponent=65537, key_size=2048),
        attacker_ec=ec.generate_private_key(ec.SECP256R1()),
    )


@pytest.fixture(scope="session")
def auth_app(example_db: str) -> Iterator[Flask]:
    """The app over the worked example, HS256 with the test secret, aud and iss required."""
    from app import create_app

    app = create_app(
        app_config(example_db, REGISTRY_JWT_AUDIENCE=AUTH_AUDIENCE, REGISTRY_JWT_ISSUER=AUTH_ISSUER)
    )
    yield app
    app.extensions["registry_db"].close()


@pytest.fixture
def auth_app_factory(example_db: str) -> Iterator[Callable[..., Flask]]:
    """Build apps over the worked example with extra settings; their pools close afterwards."""
    from app import create_app

    made: list[Flask] = []

    def make(**settings: Any) -> Flask:
        """An app with these settings over the test configuration."""
        config = app_config(example_db)
        config.update(settings)
        app = create_app(config)
        made.append(app)
        return app

    yield make
    for app in made:
        app.extensions["registry_db"].close()


class AuthJwksServer:
    """A JWKS document served over HTTP on loopback; the test edits `document` to rotate."""

    def __init__(self) -> None:
        """Start serving an empty key set in a thread."""
        self.document: dict[str, Any] = {"keys": []}
        self.requests = 0
        state = self

        class Handler(BaseHTTPRequestHandler):
            """Answers every GET with the current document."""

            def do_GET(self) -> None:
                """Serve the current document and count the request."""
                state.requests += 1
                body = json.dumps(state.document).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                """Keep the test output quiet."""

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{port}/.well-known/jwks.json"
        self.running = True

    def stop(self) -> None:
        """Stop serving and free the port: later fetches are refused."""
        if self.running:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join()
            self.running = False


@pytest.fixture
def auth_jwks_server() -> Iterator[AuthJwksServer]:
    """A JWKS server on 127.0.0.1 (port 0), stopped at the end of the test."""
    server = AuthJwksServer()
    yield server
    server.stop()


# -- the HTTP surface: fixtures named api_* ---------------------------------------------------


@pytest.fixture(scope="session")
def api_document(example_app: Flask) -> dict[str, Any]:
    """The OpenAPI document exactly as GET /openapi.json serves it."""
    response = example_app.test_client().get("/openapi.json")
    assert response.status_code == 200
    return orjson.loads(response.get_data())


@pytest.fixture(scope="session")
def api_conformance(api_document: dict[str, Any]) -> OpenApiConformance:
    """Checks responses against the served document."""
    return OpenApiConformance(api_document)


@pytest.fixture
def api_public(example_app: Flask, api_conformance: OpenApiConformance) -> CheckedClient:
    """A checked client over the worked example, with no credentials."""
    return CheckedClient(example_app.test_client(), api_conformance)


@pytest.fixture
def api_admin(
    example_app: Flask, api_conformance: OpenApiConformance, admin_headers: dict[str, str]
) -> CheckedClient:
    """A checked client over the worked example, as a domain admin."""
    return CheckedClient(example_app.test_client(), api_conformance, admin_headers)


# Module-scoped: each app's pool holds connections until closed, so apps close when the
# module that made them is done; kept for the whole run, a run's apps outgrew the server's
# max_connections.
@pytest.fixture(scope="module")
def api_app_factory() -> Iterator[Callable[..., Flask]]:
    """Build apps over any database with extra settings; their pools close after the
    module."""
    from app import create_app

    made: list[Flask] = []

    def make(conninfo: str, **settings: Any) -> Flask:
        """An app over conninfo with the test settings and these."""
        app = create_app(app_config(conninfo, **settings))
        made.append(app)
        return app

    yield make
    for app in made:
        app.extensions["registry_db"].close()


@pytest.fixture(scope="module")
def api_graph_factory(
    database_factory: Callable[[], str],
    api_app_factory: Callable[..., Flask],
    api_conformance: OpenApiConformance,
    admin_headers: dict[str, str],
) -> Callable[[GraphBuilder | list[dict[str, Any]]], CheckedClient]:
    """Load a purpose-built graph into a fresh database; a checked admin client over it."""

    def make(graph: GraphBuilder | list[dict[str, Any]]) -> CheckedClient:
        """A fresh database holding graph, and a checked admin client over it."""
        records = graph.records if isinstance(graph, GraphBuilder) else graph
        conninfo = database_factory()
        load_records(conninfo, records)
        app = api_app_factory(conninfo)
        return CheckedClient(app.test_client(), api_conformance, admin_headers)

    return make
