"""The admin token rules on /registry through the HTTP surface (docs/authentication.md).

Every endpoint, plus an unknown path and a bad parameter, against a table of token cases;
then RS256, ES256 and JWKS end to end with real keys, and the database-stopped proof.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from flask import Flask
from flask.testing import FlaskClient
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from tests.api.conftest import AUTH_AUDIENCE, AUTH_ISSUER, AuthJwksServer, AuthKeys
from tests.conftest import TEST_SECRET, make_token

ORIGIN_ID = "3b2f1e0d-9c8b-4a7f-8e6d-5c4b3a291807"
# Each path with the status an admin gets: the guard answers first on all of them.
ENDPOINTS = [
    pytest.param("/registry/summary", 200, id="summary"),
    pytest.param("/registry/origins", 200, id="origins"),
    pytest.param(f"/registry/origins/svc:origin:{ORIGIN_ID}", 200, id="origin"),
    pytest.param("/registry/addresses/9.10.3", 200, id="address"),
    pytest.param("/registry/nope", 404, id="no-route"),
    pytest.param("/registry/origins?limit=0", 400, id="bad-parameter"),
]
FORBIDDEN_BODY = {
    "error": "Domain admin access required",
    "message": "This endpoint requires the global_admin or domain_admin role in the token's "
    "roles claim.",
}
DEAD_DATABASE = "postgresql://postgres@127.0.0.1:1/none?connect_timeout=1"
DROP = object()


class Outcome(Enum):
    """What the guard decides."""

    MISSING = "401, no token presented"
    INVALID = "401, invalid token"
    FORBIDDEN = "403"
    ALLOWED = "the endpoint's own answer"


def check(response: Any, outcome: Outcome, allowed_status: int) -> None:
    """Assert the exact status, body and WWW-Authenticate header of an outcome."""
    if outcome is Outcome.ALLOWED:
        assert response.status_code == allowed_status, response.get_data(as_text=True)
        assert "WWW-Authenticate" not in response.headers
        return
    assert response.content_type == "application/json"
    if outcome is Outcome.FORBIDDEN:
        assert response.status_code == 403
        assert response.get_json() == FORBIDDEN_BODY
        assert "WWW-Authenticate" not in response.headers
        return
    assert response.status_code == 401
    assert response.get_json() == {"error": "Unauthorized"}
    expected = 'Bearer error="invalid_token"' if outcome is Outcome.INVALID else "Bearer"
    assert response.headers.getlist("WWW-Authenticate") == [expected]


def client_of(app: Flask) -> FlaskClient:
    """A test client that sends our Cookie header as given (its own cookie jar would not)."""
    return app.test_client(use_cookies=False)


# -- building tokens -------------------------------------------------------------------------


def b64(data: bytes) -> str:
    """base64url without padding, as JWS has it."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def claims(**overrides: Any) -> dict[str, Any]:
    """Claims of a valid admin token for the auth app; DROP removes a claim."""
    body: dict[str, Any] = {
        "sub": "tester",
        "roles": ["domain_admin"],
        "aud": AUTH_AUDIENCE,
        "iss": AUTH_ISSUER,
        "exp": int(time.time()) + 600,
    }
    for name, value in overrides.items():
        if value is DROP:
            body.pop(name, None)
        else:
            body[name] = value
    return body


def token(**overrides: Any) -> str:
    """A real HS256 token for the auth app (aud and iss set), through the shared helper."""
    return make_token(**{"aud": AUTH_AUDIENCE, "iss": AUTH_ISSUER, **overrides})


def forge(
    header: Any, payload: Any, key: bytes = TEST_SECRET.encode(), hash_name: str = "sha256"
) -> str:
    """A token built by hand, HMAC-signed: for headers and claims PyJWT would not encode."""
    signing_input = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(payload).encode())}"
    signature = hmac.new(key, signing_input.encode(), getattr(hashlib, hash_name)).digest()
    return f"{signing_input}.{b64(signature)}"


def unsigned(alg: str) -> str:
    """An `alg: none`-style token with an empty signature."""
    header = b64(json.dumps({"alg": alg, "typ": "JWT"}).encode())
    return f"{header}.{b64(json.dumps(claims()).encode())}."


def tampered() -> str:
    """A viewer's token with an admin payload pasted over its payload."""
    header, _, signature = token(roles=["viewer"]).split(".")
    return f"{header}.{b64(json.dumps(claims()).encode())}.{signature}"


def jwk_of(key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey, **fields: Any) -> dict[str, Any]:
    """The public JWK of a private key, with extra fields (kid, alg, use)."""
    if isinstance(key, rsa.RSAPrivateKey):
        data = RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
    else:
        data = ECAlgorithm.to_jwk(key.public_key(), as_dict=True)
    return {**data, **fields}


@dataclass
class Credentials:
    """What a request carries: an Authorization header value and access_token cookies."""

    authorization: str | None = None
    cookies: tuple[str, ...] = ()

    def headers(self) -> dict[str, str]:
        """The request headers."""
        headers: dict[str, str] = {}
        if self.authorization is not None:
            headers["Authorization"] = self.authorization
        if self.cookies:
            headers["Cookie"] = "; ".join(f"access_token={value}" for value in self.cookies)
        return headers


def bearer(value: str) -> Credentials:
    """An Authorization: Bearer header."""
    return Credentials(authorization=f"Bearer {value}")


Build = Callable[[AuthKeys], Credentials]
ALLOWED, INVALID, FORBIDDEN, MISSING = (
    Outcome.ALLOWED,
    Outcome.INVALID,
    Outcome.FORBIDDEN,
    Outcome.MISSING,
)
SQL_KID = "x' OR '1'='1'; DROP TABLE origins; --"
PATH_KID = "../../../../etc/passwd"

TOKEN_CASES: list[Any] = [
    # finding the token
    pytest.param(lambda k: Credentials(), MISSING, id="no-credentials"),
    pytest.param(lambda k: Credentials(authorization=""), MISSING, id="empty-authorization-header"),
    pytest.param(lambda k: Credentials(authorization="Bearer"), INVALID, id="empty-bearer"),
    pytest.param(lambda k: Credentials(authorization="Bearer   "), INVALID, id="bearer-and-spaces"),
    pytest.param(
        lambda k: Credentials(authorization="Basic dXNlcjpwYXNz"), INVALID, id="basic-scheme"
    ),
    pytest.param(
        lambda k: Credentials(authorization=f"Token {token()}"), INVALID, id="token-scheme"
    ),
    pytest.param(lambda k: Credentials(authorization=token()), INVALID, id="no-scheme"),
    pytest.param(
        lambda k: Credentials(authorization=f"bearer {token()}"), ALLOWED, id="scheme-lower"
    ),
    pytest.param(
        lambda k: Credentials(authorization=f"BEARER {token()}"), ALLOWED, id="scheme-upper"
    ),
    pytest.param(
        lambda k: Credentials(authorization=f"BeArEr {token()}"), ALLOWED, id="scheme-mixed"
    ),
    pytest.param(lambda k: bearer(f"{token()} {token()}"), INVALID, id="two-tokens"),
    pytest.param(lambda k: bearer(f"{token()}, Bearer {token()}"), INVALID, id="two-bearers"),
    # malformed tokens
    pytest.param(lambda k: bearer("garbage"), INVALID, id="garbage"),
    pytest.param(
        lambda k: bearer("\u00e9t\u00e9.\u00e9t\u00e9.\u00e9t\u00e9"), INVALID, id="non-ascii"
    ),
    pytest.param(lambda k: bearer(".".join(token().split(".")[:2])), INVALID, id="two-segments"),
    pytest.param(lambda k: bearer(token() + ".e30"), INVALID, id="four-segments"),
    pytest.param(
        lambda k: bearer(token().rsplit(".", 1)[0] + "."), INVALID, id="stripped-signature"
    ),
    pytest.param(lambda k: bearer(tampered()), INVALID, id="tampered-payload"),
    pytest.param(lambda k: bearer(token(padding="x" * 9000)), INVALID, id="oversized"),
    # algorithms and keys
    pytest.param(lambda k: bearer(unsigned("none")), INVALID, id="alg-none"),
    pytest.param(lambda k: bearer(unsigned("None")), INVALID, id="alg-None"),
    pytest.param(lambda k: bearer(unsigned("NONE")), INVALID, id="alg-NONE"),
    pytest.param(lambda k: bearer(unsigned("nOnE")), INVALID, id="alg-nOnE"),
    pytest.param(
        lambda k: bearer(token(secret="another-secret-that-is-also-long-enough-0123")),
        INVALID,
        id="wrong-secret",
    ),
    pytest.param(
        lambda k: bearer(
            forge({"alg": "HS256", "typ": "JWT"}, claims(), AuthKeys.public_pem(k.rsa).encode())
        ),
        INVALID,
        id="hs256-with-rsa-public-key",
    ),
    pytest.param(
        lambda k: bearer(forge({"alg": "HS512", "typ": "JWT"}, claims(), hash_name="sha512")),
        INVALID,
        id="algorithm-outside-allow-list",
    ),
    pytest.param(
        lambda k: bearer(
            jwt.encode(
                claims(),
                k.attacker_rsa,
                algorithm="RS256",
                headers={"jwk": jwk_of(k.attacker_rsa), "jku": "http://127.0.0.1:9/jwks.json"},
            )
        ),
        INVALID,
        id="rs256-with-embedded-attacker-jwk",
    ),
    pytest.param(
        lambda k: bearer(
            jwt.encode(
                claims(),
                TEST_SECRET,
                algorithm="HS256",
                headers={
                    "jku": "http://127.0.0.1:9/jwks.json",
                    "x5u": "http://127.0.0.1:9/cert.pem",
                    "jwk": jwk_of(k.attacker_rsa),
                },
            )
        ),
        ALLOWED,
        id="jku-x5u-jwk-headers-ignored",
    ),
    pytest.param(
        lambda k: bearer(jwt.encode(claims(), TEST_SECRET, "HS256", headers={"kid": PATH_KID})),
        ALLOWED,
        id="kid-path-ignored-with-secret",
    ),
    pytest.param(
        lambda k: bearer(jwt.encode(claims(), TEST_SECRET, "HS256", headers={"kid": SQL_KID})),
        ALLOWED,
        id="kid-sql-ignored-with-secret",
    ),
    pytest.param(
        lambda k: bearer(token(secret="wrong-secret-wrong-secret-wrong-secret-00")),
        INVALID,
        id="kid-free-wrong-secret",
    ),
    pytest.param(
        lambda k: bearer(forge({"alg": "HS256", "kid": SQL_KID}, claims(), b"x" * 40)),
        INVALID,
        id="kid-sql-wrong-key",
    ),
    pytest.param(
        lambda k: bearer(forge({"alg": "HS256", "kid": ["a"]}, claims())), INVALID, id="kid-array"
    ),
    pytest.param(lambda k: bearer(forge({"alg": ["HS256"]}, claims())), INVALID, id="alg-array"),
    pytest.param(lambda k: bearer(forge(["HS256"], claims())), INVALID, id="header-array"),
    pytest.param(
        lambda k: bearer(forge({"alg": "HS256"}, [claims()])), INVALID, id="payload-array"
    ),
    pytest.param(
        lambda k: bearer(forge({"alg": "HS256", "crit": ["exp"], "exp": 1}, claims())),
        INVALID,
        id="unknown-crit-header",
    ),
    # time
    pytest.param(
        lambda k: bearer(token(exp=int(time.time()) - 60)), INVALID, id="expired-beyond-leeway"
    ),
    pytest.param(
        lambda k: bearer(token(exp=int(time.time()) - 10)), ALLOWED, id="expired-within-leeway"
    ),
    pytest.param(lambda k: bearer(token(nbf=int(time.time()) + 120)), INVALID, id="future-nbf"),
    pytest.param(
        lambda k: bearer(token(nbf=int(time.time()) + 10)), ALLOWED, id="nbf-within-leeway"
    ),
    pytest.param(lambda k: bearer(token(iat=int(time.time()) + 120)), INVALID, id="future-iat"),
    pytest.param(
        lambda k: bearer(forge({"alg": "HS256"}, claims(exp=DROP))), INVALID, id="missing-exp"
    ),
    pytest.param(
        lambda k: bearer(forge({"alg": "HS256"}, claims(exp=str(int(time.time()) + 600)))),
        INVALID,
        id="numeric-string-exp",
    ),
    pytest.param(
        lambda k: bearer(forge({"alg": "HS256"}, claims(exp="soon"))), INVALID, id="string-exp"
    ),
    pytest.param(
        lambda k: bearer(forge({"alg": "HS256"}, claims(exp=[int(time.time()) + 600]))),
        INVALID,
        id="array-exp",
    ),
    pytest.param(
        lambda k: bearer(forge({"alg": "HS256"}, claims(exp=True))), INVALID, id="boolean-exp"
    ),
    pytest.param(
        lambda k: bearer(forge({"alg": "HS256"}, claims(exp=1e400))), INVALID, id="infinite-exp"
    ),
    pytest.param(
        lambda k: bearer(forge({"alg": "HS256"}, claims(nbf="now"))), INVALID, id="string-nbf"
    ),
    pytest.param(lambda k: bearer(token(exp=time.time() + 600.5)), ALLOWED, id="fractional-exp"),
    # audience and issuer (configured on this app)
    pytest.param(lambda k: bearer(token(aud="someone-else")), INVALID, id="wrong-aud"),
    pytest.param(
        lambda k: bearer(forge({"alg": "HS256"}, claims(aud=DROP))), INVALID, id="missing-aud"
    ),
    pytest.param(
        lambda k: bearer(token(aud=["other", AUTH_AUDIENCE])), ALLOWED, id="aud-list-with-ours"
    ),
    pytest.param(lambda k: bearer(token(aud=["other"])), INVALID, id="aud-list-without-ours"),
    pytest.param(lambda k: bearer(token(iss="https://evil.example.test")), INVALID, id="wrong-iss"),
    pytest.param(
        lambda k: bearer(forge({"alg": "HS256"}, claims(iss=DROP))), INVALID, id="missing-iss"
    ),
    pytest.param(lambda k: bearer(token(sub=123)), INVALID, id="numeric-sub"),
    # roles
    pytest.param(lambda k: bearer(token(roles=None)), FORBIDDEN, id="roles-missing"),
    pytest.param(lambda k: bearer(token(roles=[])), FORBIDDEN, id="roles-empty"),
    pytest.param(lambda k: bearer(token(roles=["viewer"])), FORBIDDEN, id="roles-other"),
    pytest.param(lambda k: bearer(token(roles="Domain_Admin")), FORBIDDEN, id="roles-wrong-case"),
    pytest.param(lambda k: bearer(token(roles=["DOMAIN_ADMIN"])), FORBIDDEN, id="roles-upper-case"),
    pytest.param(lambda k: bearer(token(roles=" domain_admin")), FORBIDDEN, id="roles-padded"),
    pytest.param(
        lambda k: bearer(token(roles="domain_admin global_admin")), FORBIDDEN, id="roles-spaced"
    ),
    pytest.param(
        lambda k: bearer(token(roles={"domain_admin": True})), FORBIDDEN, id="roles-object"
    ),
    pytest.param(
        lambda k: bearer(token(roles=["domain_admin", 1])), FORBIDDEN, id="roles-mixed-array"
    ),
    pytest.param(lambda k: bearer(token(roles="domain_admin")), ALLOWED, id="roles-string"),
    pytest.param(lambda k: bearer(token(roles="global_admin")), ALLOWED, id="roles-global-admin"),
    pytest.param(
        lambda k: bearer(token(roles=["viewer", "global_admin"])), ALLOWED, id="roles-array"
    ),
    # the cookie
    pytest.param(lambda k: Credentials(cookies=("",)), MISSING, id="empty-cookie"),
    pytest.param(
        lambda k: Credentials(cookies=(f'"Bearer {token()}"',)), INVALID, id="cookie-with-scheme"
    ),
    pytest.param(lambda k: Credentials(cookies=(token(), token())), INVALID, id="two-cookies"),
    pytest.param(
        lambda k: Credentials(authorization="", cookies=(token(),)),
        MISSING,
        id="empty-header-decides",
    ),
]

# Header and cookie in every combination: a present header decides alone.
_STATES: dict[str, tuple[Callable[[], str] | None, Outcome]] = {
    "absent": (None, MISSING),
    "admin": (token, ALLOWED),
    "invalid": (lambda: token(exp=int(time.time()) - 3600), INVALID),
    "viewer": (lambda: token(roles=["viewer"]), FORBIDDEN),
}


def _combination(header: str, cookie: str) -> Any:
    """One header-and-cookie case and what it must give."""
    make_header, header_outcome = _STATES[header]
    make_cookie, cookie_outcome = _STATES[cookie]

    def build(keys: AuthKeys) -> Credentials:
        """The header and cookie of this combination."""
        return Credentials(
            authorization=f"Bearer {make_header()}" if make_header else None,
            cookies=(make_cookie(),) if make_cookie else (),
        )

    outcome = header_outcome if make_header else cookie_outcome
    return pytest.param(build, outcome, id=f"header-{header}-cookie-{cookie}")


TOKEN_CASES += [_combination(header, cookie) for header in _STATES for cookie in _STATES]


@pytest.mark.parametrize(("path", "allowed_status"), ENDPOINTS)
@pytest.mark.parametrize(("build", "outcome"), TOKEN_CASES)
def test_token_matrix(
    auth_app: Flask,
    auth_keys: AuthKeys,
    path: str,
    allowed_status: int,
    build: Build,
    outcome: Outcome,
) -> None:
    """Every endpoint gives each token case its exact status, body and challenge."""
    credentials = build(auth_keys)
    response = client_of(auth_app).get(path, headers=credentials.headers())
    check(response, outcome, allowed_status)
    for value in (credentials.authorization or "", *credentials.cookies):
        for part in value.split():
            if len(part) > 20:
                assert part not in response.get_data(as_text=True)


def test_the_matrix_is_large_enough() -> None:
    """The issue asks for at least 30 token cases."""
    assert len(TOKEN_CASES) >= 30


# -- where the guard applies -----------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/registry",
        "/registry/",
        "/registry/summary/",
        "/registry//summary",
        "//registry/summary",
        "/registry/origins/not-a-uuid",
        "/registry/addresses/1.2",
        "/registry/" + "x" * 2000,
    ],
)
def test_every_registry_path_is_guarded(auth_app: Flask, path: str) -> None:
    """Routed or not, redirect or 404: an anonymous caller gets 401 and learns nothing."""
    # PATH_INFO directly: the test client would read "//registry" as a host name.
    client = client_of(auth_app)
    response = client.get("/", environ_overrides={"PATH_INFO": path})
    check(response, MISSING, 0)


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"])
def test_every_method_is_guarded(auth_app: Flask, method: str) -> None:
    """401 before 405; only an admin learns which methods exist."""
    client = client_of(auth_app)
    anonymous = client.open("/registry/summary", method=method)
    assert anonymous.status_code == 401
    assert anonymous.headers["WWW-Authenticate"] == "Bearer"
    admin = client.open("/registry/summary", method=method, headers=bearer(token()).headers())
    assert admin.status_code == (200 if method == "HEAD" else 405)


@pytest.mark.parametrize("path", ["/summary", "/openapi.json", "/registryx", "/other/registry"])
@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer garbage"},
        {"Authorization": "Basic dXNlcjpwYXNz"},
        {"Cookie": "access_token=garbage"},
    ],
    ids=["none", "garbage-bearer", "basic", "garbage-cookie"],
)
def test_public_paths_ignore_tokens(auth_app: Flask, path: str, headers: dict[str, str]) -> None:
    """Outside /registry no token is read: the public answer (or plain 404) for everyone."""
    response = client_of(auth_app).get(path, headers=headers)
    assert response.status_code == (404 if "other" in path or "registryx" in path else 200)
    assert "WWW-Authenticate" not in response.headers


def test_audience_is_not_checked_when_not_configured(client: Any) -> None:
    """Without REGISTRY_JWT_AUDIENCE a token's aud is neither required nor matched."""
    response = client.get(
        "/registry/summary", headers={"Authorization": f"Bearer {make_token(aud='anyone')}"}
    )
    assert response.status_code == 200


def test_the_admin_headers_fixture_works(client: Any, admin_headers: dict[str, str]) -> None:
    """The shared fixture's token is an admin's for the default test app."""
    assert client.get("/registry/summary", headers=admin_headers).status_code == 200


def test_a_custom_roles_claim(auth_app_factory: Callable[..., Flask]) -> None:
    """REGISTRY_JWT_ROLES_CLAIM names the claim; the 403 message names it too."""
    app = auth_app_factory(REGISTRY_JWT_ROLES_CLAIM="groups")
    client = client_of(app)
    allowed = client.get(
        "/registry/summary", headers=bearer(make_token(roles=None, groups="global_admin")).headers()
    )
    assert allowed.status_code == 200
    refused = client.get("/registry/summary", headers=bearer(make_token()).headers())
    assert refused.status_code == 403
    assert refused.get_json() == {
        "error": "Domain admin access required",
        "message": "This endpoint requires the global_admin or domain_admin role in the token's "
        "groups claim.",
    }


# -- no leaks, no cost -----------------------------------------------------------------------


def test_a_rejected_token_takes_no_connection(auth_app: Flask) -> None:
    """The pool sees no request for rejected callers, one for an admin."""
    pool = auth_app.extensions["registry_db"].pool
    client = client_of(auth_app)
    client.get("/registry/summary", headers=bearer(token()).headers())  # warm up
    before = pool.get_stats().get("requests_num", 0)
    for headers in (
        {},
        bearer("garbage").headers(),
        bearer(token(exp=int(time.time()) - 3600)).headers(),
        bearer(token(roles=["viewer"])).headers(),
    ):
        assert client.get("/registry/origins", headers=headers).status_code in (401, 403)
    assert pool.get_stats().get("requests_num", 0) == before
    assert client.get("/registry/origins", headers=bearer(token()).headers()).status_code == 200
    assert pool.get_stats().get("requests_num", 0) == before + 1


def test_with_the_database_stopped_a_bad_token_still_gets_401(
    auth_app_factory: Callable[..., Flask],
) -> None:
    """Nothing listens at the database address: rejections are 401 at once, an admin gets 503."""
    app = auth_app_factory(DATABASE_URL=DEAD_DATABASE, REGISTRY_POOL_TIMEOUT_S=0.5)
    client = client_of(app)
    for headers, outcome in (
        ({}, MISSING),
        (bearer("garbage").headers(), INVALID),
        (bearer(make_token(exp=int(time.time()) - 3600)).headers(), INVALID),
        ({"Cookie": "access_token=garbage"}, INVALID),
        (bearer(make_token(roles=["viewer"])).headers(), FORBIDDEN),
    ):
        for path in ("/registry/summary", "/registry/origins?limit=0", "/registry/nope"):
            check(client.get(path, headers=headers), outcome, 0)
    # No rejected request even built the pool, so none can have waited on the database.
    assert app.extensions["registry_db"]._pool is None
    admin = bearer(make_token()).headers()
    assert client.get("/registry/nope", headers=admin).status_code == 404
    unavailable = client.get("/registry/summary", headers=admin)
    assert unavailable.status_code == 503
    assert unavailable.get_json() == {"success": False, "error": "Service Unavailable"}
    assert unavailable.headers["Retry-After"] == "2"


def test_tokens_never_reach_the_logs(auth_app: Flask, caplog: pytest.LogCaptureFixture) -> None:
    """Accepted, rejected and refused tokens: none of them is logged, at any level."""
    caplog.set_level(logging.DEBUG, logger="registry")
    tokens = [token(), token(exp=int(time.time()) - 3600), token(roles=["viewer"]), tampered()]
    client = client_of(auth_app)
    for value in tokens:
        client.get("/registry/summary", headers=bearer(value).headers())
        client.get("/registry/summary", headers={"Cookie": f"access_token={value}"})
    assert caplog.records, "the rejections were logged (by reason)"
    for value in tokens:
        for segment in value.split("."):
            assert segment not in caplog.text


# -- RS256 and ES256 with a configured public key --------------------------------------------


def _public_key_setting(pem: str, source: str, tmp_path: Path) -> str:
    """REGISTRY_JWT_PUBLIC_KEY as PEM text, as a path, or as one line with literal \\n."""
    if source == "path":
        path = tmp_path / "public.pem"
        path.write_text(pem)
        return str(path)
    if source == "one-line":
        return pem.strip().replace("\n", "\\n")
    return pem


def _asymmetric_cases(
    keys: AuthKeys, ours: Any, theirs: Any, alg: str
) -> list[tuple[str, str, Outcome]]:
    """Tokens for an app keyed with `ours`; each with what it must give."""
    now = int(time.time())
    admin = {"sub": "tester", "roles": ["domain_admin"], "exp": now + 600}
    pem = AuthKeys.public_pem(ours).encode()
    other_alg, other_key = ("ES256", keys.ec) if alg == "RS256" else ("RS256", keys.rsa)
    return [
        ("valid", jwt.encode(admin, ours, algorithm=alg), ALLOWED),
        ("viewer", jwt.encode({**admin, "roles": ["viewer"]}, ours, algorithm=alg), FORBIDDEN),
        ("expired", jwt.encode({**admin, "exp": now - 3600}, ours, algorithm=alg), INVALID),
        ("signed-by-attacker", jwt.encode(admin, theirs, algorithm=alg), INVALID),
        ("hs256-with-our-public-key", forge({"alg": "HS256", "typ": "JWT"}, admin, pem), INVALID),
        ("hs256-with-test-secret", make_token(), INVALID),
        ("other-key-kind", jwt.encode(admin, other_key, algorithm=other_alg), INVALID),
        ("alg-none", unsigned("none"), INVALID),
    ]


@pytest.mark.parametrize("source", ["text", "path", "one-line"])
@pytest.mark.parametrize("alg", ["RS256", "ES256"])
def test_public_key_end_to_end(
    auth_app_factory: Callable[..., Flask],
    auth_keys: AuthKeys,
    tmp_path: Path,
    alg: str,
    source: str,
) -> None:
    """A PEM public key (text, path or one line) verifies its own algorithm and nothing else."""
    ours, theirs = (
        (auth_keys.rsa, auth_keys.attacker_rsa)
        if alg == "RS256"
        else (auth_keys.ec, auth_keys.attacker_ec)
    )
    setting = _public_key_setting(AuthKeys.public_pem(ours), source, tmp_path)
    app = auth_app_factory(
        REGISTRY_JWT_SECRET=None, REGISTRY_JWT_ALGORITHMS=None, REGISTRY_JWT_PUBLIC_KEY=setting
    )
    assert app.extensions["registry_auth"].algorithms == (alg,)
    client = client_of(app)
    for name, value, outcome in _asymmetric_cases(auth_keys, ours, theirs, alg):
        response = client.get("/registry/summary", headers=bearer(value).headers())
        try:
            check(response, outcome, 200)
        except AssertionError as error:
            raise AssertionError(f"case {name}: {error}") from error


def test_rs256_with_ps256_not_allowed_by_default(
    auth_app_factory: Callable[..., Flask], auth_keys: AuthKeys
) -> None:
    """The allow-list is configuration's: PS256 with the right key is refused until listed."""
    admin = {"sub": "t", "roles": ["domain_admin"], "exp": int(time.time()) + 600}
    pem = AuthKeys.public_pem(auth_keys.rsa)
    ps256 = jwt.encode(admin, auth_keys.rsa, algorithm="PS256")
    default = auth_app_factory(
        REGISTRY_JWT_SECRET=None, REGISTRY_JWT_ALGORITHMS=None, REGISTRY_JWT_PUBLIC_KEY=pem
    )
    check(client_of(default).get("/registry/summary", headers=bearer(ps256).headers()), INVALID, 0)
    listed = auth_app_factory(
        REGISTRY_JWT_SECRET=None, REGISTRY_JWT_ALGORITHMS="RS256,PS256", REGISTRY_JWT_PUBLIC_KEY=pem
    )
    check(client_of(listed).get("/registry/summary", headers=bearer(ps256).headers()), ALLOWED, 200)


# -- JWKS over HTTP on loopback --------------------------------------------------------------


class FakeClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        """Start at an arbitrary reading."""
        self.now = 1000.0

    def __call__(self) -> float:
        """The current reading."""
        return self.now


def _signed(key: Any, alg: str, kid: str | None, **extra: Any) -> dict[str, str]:
    """Request headers with an admin token signed by key, with this kid."""
    payload = {"sub": "tester", "roles": ["domain_admin"], "exp": int(time.time()) + 600, **extra}
    headers: dict[str, Any] = {} if kid is None else {"kid": kid}
    return bearer(jwt.encode(payload, key, algorithm=alg, headers=headers)).headers()


def _jwks_app(factory: Callable[..., Flask], url: str, clock: FakeClock) -> Flask:
    """An app keyed by a JWKS URL only, on a clock the test controls."""
    app = factory(REGISTRY_JWT_SECRET=None, REGISTRY_JWT_ALGORITHMS=None, REGISTRY_JWKS_URL=url)
    app.extensions["registry_auth"].jwks.clock = clock
    return app


def test_jwks_end_to_end_with_rotation(
    auth_app_factory: Callable[..., Flask], auth_keys: AuthKeys, auth_jwks_server: AuthJwksServer
) -> None:
    """Keys by kid, cached; rotation seen after one refetch; at most one refetch per 30 s."""
    server = auth_jwks_server
    server.document = {
        "keys": [
            jwk_of(auth_keys.rsa, kid="rsa-1", alg="RS256", use="sig"),
            jwk_of(auth_keys.ec, kid="ec-1", use="sig"),
        ]
    }
    clock = FakeClock()
    client = client_of(_jwks_app(auth_app_factory, server.url, clock))

    def get(headers: dict[str, str]) -> Any:
        """GET /registry/summary with these headers."""
        return client.get("/registry/summary", headers=headers)

    check(get(_signed(auth_keys.rsa, "RS256", "rsa-1")), ALLOWED, 200)
    check(get(_signed(auth_keys.ec, "ES256", "ec-1")), ALLOWED, 200)
    assert server.requests == 1  # one fetch, then the cache

    # Wrong key kinds, wrong signers, no kid, hostile kids: all 401, none fetches.
    check(get(_signed(auth_keys.ec, "ES256", "rsa-1")), INVALID, 0)
    check(get(_signed(auth_keys.attacker_rsa, "RS256", "rsa-1")), INVALID, 0)
    check(get(_signed(auth_keys.rsa, "RS256", None)), INVALID, 0)
    check(get(_signed(auth_keys.rsa, "PS256", "rsa-1")), INVALID, 0)
    for kid in (PATH_KID, SQL_KID, "file:///etc/passwd"):
        check(get(_signed(auth_keys.rsa, "RS256", kid)), INVALID, 0)
    check(get(bearer(make_token()).headers()), INVALID, 0)  # HS256 is not on the allow-list
    assert server.requests == 1

    # Rotate: rsa-2 appears, rsa-1 goes.
    new_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    server.document = {
        "keys": [jwk_of(new_key, kid="rsa-2", alg="RS256"), jwk_of(auth_keys.ec, kid="ec-1")]
    }
    clock.now += 10
    check(get(_signed(new_key, "RS256", "rsa-2")), INVALID, 0)  # within 30 s of the last fetch
    assert server.requests == 1
    clock.now += 21
    check(get(_signed(new_key, "RS256", "rsa-2")), ALLOWED, 200)  # one refetch finds it
    assert server.requests == 2
    for _ in range(5):
        check(get(_signed(auth_keys.rsa, "RS256", "rsa-1")), INVALID, 0)  # gone from the set
        check(get(_signed(auth_keys.rsa, "RS256", "spray-" + str(_))), INVALID, 0)
    assert server.requests == 2
    clock.now += 31
    for _ in range(5):
        check(get(_signed(auth_keys.rsa, "RS256", "rsa-1")), INVALID, 0)
    assert server.requests == 3  # one refetch per 30 s, however many unknown kids
    check(get(_signed(new_key, "RS256", "rsa-2")), ALLOWED, 200)

    # The source goes down: cached keys still serve, even past their lifespan; a kid that
    # cannot be looked up is a 503, not a 401.
    server.stop()
    clock.now += 301
    check(get(_signed(new_key, "RS256", "rsa-2")), ALLOWED, 200)
    assert server.requests == 3
    unavailable = get(_signed(new_key, "RS256", "rsa-3"))
    assert unavailable.status_code == 503
    assert unavailable.get_json() == {"success": False, "error": "Service Unavailable"}
    assert unavailable.headers["Retry-After"] == "2"
    check(get(bearer("garbage").headers()), INVALID, 0)  # still a 401: no key needed to refuse it


def test_jwks_headers_pointing_elsewhere_are_ignored(
    auth_app_factory: Callable[..., Flask], auth_keys: AuthKeys, auth_jwks_server: AuthJwksServer
) -> None:
    """jku, x5u and jwk in a token never make us fetch or trust another key."""
    auth_jwks_server.document = {"keys": [jwk_of(auth_keys.rsa, kid="rsa-1", alg="RS256")]}
    elsewhere = AuthJwksServer()
    try:
        elsewhere.document = {"keys": [jwk_of(auth_keys.attacker_rsa, kid="rsa-1", alg="RS256")]}
        client = client_of(_jwks_app(auth_app_factory, auth_jwks_server.url, FakeClock()))
        payload = {"sub": "x", "roles": ["domain_admin"], "exp": int(time.time()) + 600}
        forged = jwt.encode(
            payload,
            auth_keys.attacker_rsa,
            algorithm="RS256",
            headers={
                "kid": "rsa-1",
                "jku": elsewhere.url,
                "x5u": elsewhere.url,
                "jwk": jwk_of(auth_keys.attacker_rsa, kid="rsa-1"),
            },
        )
        check(client.get("/registry/summary", headers=bearer(forged).headers()), INVALID, 0)
        assert elsewhere.requests == 0
    finally:
        elsewhere.stop()


def test_jwks_down_from_the_start_is_503(
    auth_app_factory: Callable[..., Flask], auth_keys: AuthKeys, auth_jwks_server: AuthJwksServer
) -> None:
    """No key can be had: 503 with Retry-After for a well-formed token; bad ones stay 401."""
    url = auth_jwks_server.url
    auth_jwks_server.stop()
    client = client_of(_jwks_app(auth_app_factory, url, FakeClock()))
    response = client.get("/registry/summary", headers=_signed(auth_keys.rsa, "RS256", "rsa-1"))
    assert response.status_code == 503
    assert response.get_json() == {"success": False, "error": "Service Unavailable"}
    assert response.headers["Retry-After"] == "2"
    check(client.get("/registry/summary"), MISSING, 0)
    check(client.get("/registry/summary", headers=bearer("a.b.c").headers()), INVALID, 0)
    check(
        client.get("/registry/summary", headers=_signed(auth_keys.rsa, "RS256", None)), INVALID, 0
    )
