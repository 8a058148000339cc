"""The admin token rules on /registry (contract §6, spec §5): find, verify, decide.

A `before_request` hook guards every path under /registry, routed or not, before any view,
query or database connection. Keys and algorithms come from configuration only: the token
chooses neither. See docs/authentication.md for the decisions.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import re
import secrets
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlsplit
from urllib.request import url2pathname

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from flask import Flask, Response, current_app, g, request

from registry.errors import service_unavailable
from registry.responses import json_response
from registry.settings import SettingsError, state_dir

log = logging.getLogger("registry.auth")

ADMIN_ROLES = frozenset({"global_admin", "domain_admin"})
COOKIE_NAME = "access_token"
LEEWAY_S = 30
# Real access tokens are well under 2 KB; anything past this is refused before decoding.
MAX_TOKEN_LENGTH = 8192
MIN_SECRET_BYTES = 32
MIN_RSA_BITS = 2048
JWKS_TIMEOUT_S = 5.0
JWKS_LIFESPAN_S = 300.0
JWKS_REFETCH_INTERVAL_S = 30.0
DEV_SECRET_FILE = "dev-jwt-secret"

# Each HMAC algorithm needs a secret at least as long as its digest.
_HMAC_MIN_BYTES = {"HS256": 32, "HS384": 48, "HS512": 64}
_RSA_ALGORITHMS = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"})
_EC_CURVES = {"ES256": "secp256r1", "ES384": "secp384r1", "ES512": "secp521r1"}
_EDDSA = "EdDSA"
SUPPORTED_ALGORITHMS = (*_HMAC_MIN_BYTES, *sorted(_RSA_ALGORITHMS), *_EC_CURVES, _EDDSA)
_ASYMMETRIC_DEFAULTS = ("RS256", "ES256")
_NUMERIC_DATES = ("exp", "nbf", "iat")

NO_KEY_MESSAGE = (
    "no token key is configured: set REGISTRY_JWT_SECRET (HS256 shared secret), "
    "REGISTRY_JWT_PUBLIC_KEY (PEM public key, text or path, for RS256/ES256) or "
    "REGISTRY_JWKS_URL (a JWKS document); development mode (REGISTRY_DEV=1, as `make run` "
    "does) generates a secret instead"
)
FORBIDDEN_ERROR = "Domain admin access required"

PublicKey = (
    rsa.RSAPublicKey | ec.EllipticCurvePublicKey | ed25519.Ed25519PublicKey | ed448.Ed448PublicKey
)


class TokenRejected(Exception):
    """The token is not valid; `reason` is a short code that is safe to log (never the token)."""

    def __init__(self, reason: str):
        """Keep the reason for the log."""
        super().__init__(reason)
        self.reason = reason


class KeySourceUnavailable(Exception):
    """No key can be had because the JWKS source cannot be read: a 503, not a 401."""


class FoundToken(NamedTuple):
    """What the request carries: the token, if one could be read, and whether any was given."""

    token: str | None
    presented: bool


class JwksKey(NamedTuple):
    """One signing key of a JWKS document: the algorithm it declares (if any) and the key."""

    algorithm: str | None
    key: Any


# -- finding the token ---------------------------------------------------------------------


def is_registry_path(path: str) -> bool:
    """True for /registry and everything under it, however many slashes separate segments."""
    # Werkzeug merges repeated slashes by redirecting, so //registry/x must be guarded too,
    # or the redirect would tell an anonymous caller that the route exists.
    collapsed = re.sub(r"/{2,}", "/", path)
    return collapsed == "/registry" or collapsed.startswith("/registry/")


def find_token(authorization: Sequence[str], cookies: Sequence[str]) -> FoundToken:
    """Contract §6: a present Authorization header decides alone; only without it, the cookie."""
    # "Presented" (whether a 401 says error="invalid_token") means a non-blank Authorization
    # header, or, without that header, a non-blank access_token cookie.
    if authorization:
        if len(authorization) != 1:
            return FoundToken(None, presented=True)
        value = authorization[0]
        parts = value.split()
        if len(parts) == 2 and parts[0].lower() == "bearer":
            return FoundToken(parts[1], presented=True)
        return FoundToken(None, presented=bool(value.strip()))
    if not cookies:
        return FoundToken(None, presented=False)
    if len(cookies) != 1:
        # Two access_token cookies: guessing which one is meant is not our business.
        return FoundToken(None, presented=True)
    value = cookies[0].strip()
    return FoundToken(value or None, presented=bool(value))


def roles_of(claims: Mapping[str, Any], claim: str) -> frozenset[str]:
    """The caller's roles: the claim as one string or an array of strings; anything else, none."""
    value = claims.get(claim)
    if isinstance(value, str):
        return frozenset({value})
    if isinstance(value, list) and all(isinstance(role, str) for role in value):
        return frozenset(value)
    return frozenset()


# -- keys ------------------------------------------------------------------------------------


def key_fits(algorithm: str, key: Any) -> bool:
    """Whether an asymmetric algorithm can verify with this public key (never a secret)."""
    if algorithm in _RSA_ALGORITHMS:
        return isinstance(key, rsa.RSAPublicKey)
    if algorithm in _EC_CURVES:
        return (
            isinstance(key, ec.EllipticCurvePublicKey) and key.curve.name == _EC_CURVES[algorithm]
        )
    if algorithm == _EDDSA:
        return isinstance(key, ed25519.Ed25519PublicKey | ed448.Ed448PublicKey)
    return False


def load_public_key(text: str) -> PublicKey:
    """REGISTRY_JWT_PUBLIC_KEY: PEM text (a public key or a certificate) or a path to one."""
    text = text.strip()
    if text.startswith("-----BEGIN"):
        # Environment files often carry a PEM on one line with literal \n.
        data = text.replace("\\n", "\n").encode()
    else:
        try:
            data = Path(text).expanduser().read_bytes()
        except (OSError, ValueError) as error:
            reason = getattr(error, "strerror", None) or "not a file name"
            raise SettingsError(
                f"REGISTRY_JWT_PUBLIC_KEY is neither PEM text nor a readable file ({reason})"
            ) from None
    try:
        if b"-----BEGIN CERTIFICATE" in data:
            key: Any = x509.load_pem_x509_certificate(data).public_key()
        else:
            key = serialization.load_pem_public_key(data)
    except ValueError:
        raise SettingsError(
            "REGISTRY_JWT_PUBLIC_KEY does not hold a PEM public key or certificate"
        ) from None
    if isinstance(key, rsa.RSAPublicKey):
        if key.key_size < MIN_RSA_BITS:
            raise SettingsError(
                f"REGISTRY_JWT_PUBLIC_KEY is a {key.key_size}-bit RSA key; "
                f"at least {MIN_RSA_BITS} bits are needed"
            )
        return key
    if isinstance(key, ec.EllipticCurvePublicKey | ed25519.Ed25519PublicKey | ed448.Ed448PublicKey):
        return key
    raise SettingsError("REGISTRY_JWT_PUBLIC_KEY must be an RSA, EC or Ed25519/Ed448 key")


def parse_jwks(document: Any) -> dict[str, JwksKey]:
    """The usable signing keys of a JWKS document, by kid; keys we cannot use are skipped."""
    entries = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        return {}
    keys: dict[str, JwksKey] = {}
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        kid = entry.get("kid")
        if not isinstance(kid, str) or not kid or kid in keys:
            continue
        # A key set never supplies a shared secret: HMAC keys come from configuration only.
        if entry.get("use", "sig") != "sig" or entry.get("kty") not in ("RSA", "EC", "OKP"):
            continue
        try:
            jwk = jwt.PyJWK(entry)
        except (jwt.PyJWTError, ValueError, TypeError, KeyError):
            continue
        declared = entry.get("alg")
        keys[kid] = JwksKey(declared if isinstance(declared, str) else None, jwk.key)
    return keys


class JwksKeySet:
    """The keys of a JWKS URL by kid: cached, refetched for an unknown kid at most every 30 s."""

    # Also: re-read after the lifespan, served stale while the source is down (better than
    # refusing every caller), and a failed fetch not retried within the back-off, so a dead
    # source costs each worker one timeout per back-off, not one per request. `fetches`
    # counts reads of the source.

    def __init__(
        self,
        url: str,
        *,
        timeout: float = JWKS_TIMEOUT_S,
        lifespan: float = JWKS_LIFESPAN_S,
        refetch_interval: float = JWKS_REFETCH_INTERVAL_S,
        failure_backoff: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        """Check the URL's scheme; nothing is fetched until a token needs a key."""
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        self._read: Callable[[], Any]
        if scheme in ("http", "https"):
            # PyJWKClient fetches (no redirects, timeout); the caching is ours, because its
            # per-kid cache would keep accepting a key after the set has dropped it.
            self._read = jwt.PyJWKClient(url, cache_jwk_set=False, timeout=timeout).fetch_data
        elif scheme == "file":
            # Recent PyJWKClient refuses file://, so a local document is read here; the
            # caching rules are the same.
            path = Path(url2pathname(parts.path))
            self._read = lambda: json.loads(path.read_bytes())
        else:
            raise SettingsError("REGISTRY_JWKS_URL must be an https://, http:// or file:// URL")
        self.lifespan = lifespan
        self.refetch_interval = refetch_interval
        self.failure_backoff = failure_backoff
        self.clock = clock
        self._lock = threading.Lock()
        self._keys: dict[str, JwksKey] | None = None
        self._fetched_at = 0.0
        # No attempt yet: as if the last one was long ago.
        self._attempted_at = -math.inf
        self._last_failed = False
        self.fetches = 0

    def key_for(self, kid: str) -> JwksKey | None:
        """The key with this kid, or None; raises KeySourceUnavailable when no set can be had."""
        with self._lock:
            now = self.clock()
            if self._keys is None or now - self._fetched_at >= self.lifespan:
                self._refresh(now, keep_stale=True)
            keys = self._keys or {}
            key = keys.get(kid)
            if key is None:
                if now - self._attempted_at >= self.refetch_interval:
                    self._refresh(now, keep_stale=False)
                    key = (self._keys or {}).get(kid)
                elif self._last_failed:
                    # The source is down; the kid may belong to a key we cannot see yet.
                    raise KeySourceUnavailable("the JWKS source is unavailable")
            return key

    def _refresh(self, now: float, *, keep_stale: bool) -> None:
        """Fetch the set; on failure keep serving the cached one when allowed, else raise."""
        recently_failed = self._last_failed and now - self._attempted_at < self.failure_backoff
        if not recently_failed:
            self._attempted_at = now
            try:
                keys = self._fetch()
            except KeySourceUnavailable:
                self._last_failed = True
            else:
                self._keys, self._fetched_at, self._last_failed = keys, now, False
                return
        if self._keys is None or not keep_stale:
            raise KeySourceUnavailable("the JWKS source is unavailable")

    def _fetch(self) -> dict[str, JwksKey]:
        """Read the document once and keep its usable keys."""
        self.fetches += 1
        try:
            document = self._read()
        except (jwt.PyJWTError, OSError, ValueError) as error:
            log.warning("JWKS fetch failed: %s: %s", type(error).__name__, str(error)[:200])
            raise KeySourceUnavailable("the JWKS source is unavailable") from None
        keys = parse_jwks(document)
        if not keys:
            log.warning("JWKS document holds no usable signing keys")
            raise KeySourceUnavailable("the JWKS document holds no usable keys")
        return keys


# -- verifying -------------------------------------------------------------------------------


def parse_algorithms(text: str | None) -> tuple[str, ...]:
    """REGISTRY_JWT_ALGORITHMS as canonical names; `none` or an unknown name refuses to start."""
    if not text or not str(text).strip():
        return ()
    canonical = {name.lower(): name for name in SUPPORTED_ALGORITHMS}
    found: list[str] = []
    for raw in str(text).split(","):
        name = raw.strip()
        if not name:
            continue
        if name.lower() == "none":
            raise SettingsError("REGISTRY_JWT_ALGORITHMS must not allow 'none'")
        if name.lower() not in canonical:
            raise SettingsError(
                f"REGISTRY_JWT_ALGORITHMS: unknown algorithm {name!r}; "
                f"supported: {', '.join(SUPPORTED_ALGORITHMS)}"
            )
        if canonical[name.lower()] not in found:
            found.append(canonical[name.lower()])
    if not found:
        raise SettingsError("REGISTRY_JWT_ALGORITHMS names no algorithm")
    return tuple(found)


class TokenVerifier:
    """Verifies tokens with the configured keys and algorithms, and judges the caller's roles."""

    def __init__(
        self,
        *,
        algorithms: Sequence[str],
        secret: bytes | None = None,
        public_key: PublicKey | None = None,
        jwks: JwksKeySet | None = None,
        audience: str | None = None,
        issuer: str | None = None,
        roles_claim: str = "roles",
    ):
        """Keep the keys and rules, and refuse a combination that cannot work."""
        self.algorithms = tuple(algorithms)
        self.secret = secret
        self.public_key = public_key
        self.jwks = jwks
        self.audience = audience
        self.issuer = issuer
        self.roles_claim = roles_claim
        self._check()

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> TokenVerifier:
        """Build from configuration, refusing to start on anything unsafe or incomplete."""
        secret_text = _setting(settings, "REGISTRY_JWT_SECRET")
        public_text = _setting(settings, "REGISTRY_JWT_PUBLIC_KEY")
        jwks_url = _setting(settings, "REGISTRY_JWKS_URL")
        if not (secret_text or public_text or jwks_url):
            if not settings.get("REGISTRY_DEV"):
                raise SettingsError(NO_KEY_MESSAGE)
            secret_text = development_secret(settings)
        if public_text and jwks_url:
            raise SettingsError("set REGISTRY_JWT_PUBLIC_KEY or REGISTRY_JWKS_URL, not both")
        secret = secret_text.encode() if secret_text else None
        public_key = load_public_key(public_text) if public_text else None
        jwks = None
        if jwks_url:
            jwks = JwksKeySet(
                jwks_url, failure_backoff=float(settings.get("REGISTRY_RETRY_AFTER_S") or 2)
            )
        algorithms = parse_algorithms(_setting(settings, "REGISTRY_JWT_ALGORITHMS"))
        if not algorithms:
            algorithms = _default_algorithms(secret, public_key, jwks)
        return cls(
            algorithms=algorithms,
            secret=secret,
            public_key=public_key,
            jwks=jwks,
            audience=_setting(settings, "REGISTRY_JWT_AUDIENCE"),
            issuer=_setting(settings, "REGISTRY_JWT_ISSUER"),
            roles_claim=_setting(settings, "REGISTRY_JWT_ROLES_CLAIM") or "roles",
        )

    def _check(self) -> None:
        """Every allowed algorithm has a key of its kind; secrets and keys are long enough."""
        if not self.algorithms:
            raise SettingsError("REGISTRY_JWT_ALGORITHMS allows no algorithm")
        if self.secret is not None and len(self.secret) < MIN_SECRET_BYTES:
            raise SettingsError(
                f"REGISTRY_JWT_SECRET must be at least {MIN_SECRET_BYTES} bytes "
                f"(it has {len(self.secret)})"
            )
        for algorithm in self.algorithms:
            if algorithm not in SUPPORTED_ALGORITHMS:
                raise SettingsError(f"unsupported algorithm {algorithm!r}")
            if algorithm in _HMAC_MIN_BYTES:
                if self.secret is None:
                    raise SettingsError(
                        f"REGISTRY_JWT_ALGORITHMS allows {algorithm}, which needs "
                        "REGISTRY_JWT_SECRET"
                    )
                if len(self.secret) < _HMAC_MIN_BYTES[algorithm]:
                    raise SettingsError(
                        f"REGISTRY_JWT_SECRET must be at least {_HMAC_MIN_BYTES[algorithm]} "
                        f"bytes for {algorithm}"
                    )
            elif self.public_key is not None:
                if not key_fits(algorithm, self.public_key):
                    raise SettingsError(
                        f"REGISTRY_JWT_ALGORITHMS allows {algorithm}, which the key in "
                        "REGISTRY_JWT_PUBLIC_KEY cannot verify"
                    )
            elif self.jwks is None:
                raise SettingsError(
                    f"REGISTRY_JWT_ALGORITHMS allows {algorithm}, which needs "
                    "REGISTRY_JWT_PUBLIC_KEY or REGISTRY_JWKS_URL"
                )

    def verify(self, token: str) -> dict[str, Any]:
        """The claims of a valid token; TokenRejected, or KeySourceUnavailable (JWKS down)."""
        if len(token) > MAX_TOKEN_LENGTH:
            raise TokenRejected("oversized")
        if not token.isascii() or token.count(".") != 2:
            raise TokenRejected("malformed")
        try:
            header = jwt.get_unverified_header(token)
        except Exception:  # attacker-controlled bytes: any failure to parse is a rejection
            raise TokenRejected("malformed header") from None
        algorithm = header.get("alg")
        if not isinstance(algorithm, str) or algorithm not in self.algorithms:
            raise TokenRejected("algorithm not allowed")
        key = self._key_for(algorithm, header)
        required = ["exp"]
        if self.audience is not None:
            required.append("aud")
        if self.issuer is not None:
            required.append("iss")
        options: Any = {
            "require": required,
            "verify_aud": self.audience is not None,
            "enforce_minimum_key_length": True,
        }
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=[algorithm],
                options=options,
                leeway=LEEWAY_S,
                audience=self.audience,
                issuer=self.issuer,
            )
        except jwt.PyJWTError as error:
            raise TokenRejected(type(error).__name__) from None
        except Exception:  # malformed claims must be a 401, never a 500
            raise TokenRejected("malformed claims") from None
        for name in _NUMERIC_DATES:
            # PyJWT accepts "1700000000" as a date; RFC 7519 says a NumericDate is a number.
            if name in claims and not _is_numeric_date(claims[name]):
                raise TokenRejected(f"non-numeric {name}")
        return claims

    def _key_for(self, algorithm: str, header: Mapping[str, Any]) -> Any:
        """The configured key for this algorithm; headers such as jku, x5u or jwk are ignored."""
        if algorithm in _HMAC_MIN_BYTES:
            return self.secret
        if self.public_key is not None:
            return self.public_key
        if self.jwks is None:  # not reached: _check gives every algorithm a key source
            raise TokenRejected("no key for the algorithm")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise TokenRejected("no kid")
        found = self.jwks.key_for(kid)
        if found is None:
            raise TokenRejected("unknown kid")
        if found.algorithm not in (None, algorithm) or not key_fits(algorithm, found.key):
            raise TokenRejected("key does not fit the algorithm")
        return found.key

    def is_admin(self, claims: Mapping[str, Any]) -> bool:
        """Whether the roles claim names global_admin or domain_admin (exact, case-sensitive)."""
        return bool(roles_of(claims, self.roles_claim) & ADMIN_ROLES)


def _setting(settings: Mapping[str, Any], name: str) -> str | None:
    """A string setting, or None when unset or blank."""
    value = settings.get(name)
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _default_algorithms(
    secret: bytes | None, public_key: PublicKey | None, jwks: JwksKeySet | None
) -> tuple[str, ...]:
    """Contract §1: HS256 with a secret, RS256,ES256 with a public key (those it fits) or JWKS."""
    algorithms: list[str] = ["HS256"] if secret is not None else []
    if public_key is not None:
        fitting = [name for name in _ASYMMETRIC_DEFAULTS if key_fits(name, public_key)]
        if not fitting:
            raise SettingsError(
                "the key in REGISTRY_JWT_PUBLIC_KEY fits neither RS256 nor ES256; "
                "name its algorithm in REGISTRY_JWT_ALGORITHMS (for example ES384 or EdDSA)"
            )
        algorithms.extend(fitting)
    elif jwks is not None:
        algorithms.extend(_ASYMMETRIC_DEFAULTS)
    return tuple(algorithms)


def _is_numeric_date(value: Any) -> bool:
    """A JSON number that is a real, finite time."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value)


# -- deciding: the hook ----------------------------------------------------------------------


def unauthorized(presented: bool) -> Response:
    """401 exactly as contract §6 has it; no token, no reason in the body."""
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
    found = find_token(
        request.headers.getlist("Authorization"), request.cookies.getlist(COOKIE_NAME)
    )
    if found.token is None:
        return unauthorized(found.presented)
    try:
        claims = verifier.verify(found.token)
    except TokenRejected as rejected:
        log.debug("token rejected: %s", rejected.reason)
        return unauthorized(presented=True)
    except KeySourceUnavailable:
        return service_unavailable()
    if not verifier.is_admin(claims):
        return forbidden(verifier.roles_claim)
    g.registry_claims = claims
    return None


def register_auth(app: Flask) -> None:
    """Build the verifier once from app.config (bad settings refuse to start) and add the hook."""
    app.extensions["registry_auth"] = TokenVerifier.from_settings(app.config)
    app.before_request(require_admin_token)


# -- development tokens ----------------------------------------------------------------------

_DURATION = re.compile(r"([0-9]+)([smhd]?)\Z", re.IGNORECASE)
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_TTL_S = 366 * 86400


def parse_duration(text: str) -> int:
    """Seconds in "90s", "15m", "1h", "1d" or plain "3600"; ValueError says what is accepted."""
    match = _DURATION.match(str(text).strip())
    if match is None:
        raise ValueError(
            f"cannot read {text!r} as a duration: use seconds or a number followed by "
            "s, m, h or d (90s, 15m, 1h, 1d)"
        )
    seconds = int(match.group(1)) * _UNIT_SECONDS[match.group(2).lower()]
    if seconds <= 0:
        raise ValueError("a duration must be longer than zero")
    if seconds > MAX_TTL_S:
        raise ValueError("a development token lives at most 366 days")
    return seconds


def development_secret(settings: Mapping[str, Any]) -> str:
    """The development secret kept in the state folder, created (mode 0600) on first use."""
    folder = state_dir(settings)
    path = folder / DEV_SECRET_FILE
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        # Write a private temporary file, then link it into place: a reader never sees a
        # half-written secret, and of two racing creators the first one wins.
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{DEV_SECRET_FILE}.")
        try:
            with os.fdopen(handle, "w") as out:
                out.write(secrets.token_urlsafe(48) + "\n")
            with contextlib.suppress(FileExistsError):
                os.link(temporary, path)
        finally:
            os.unlink(temporary)
    secret = path.read_text().strip()
    if len(secret.encode()) < MIN_SECRET_BYTES:
        raise SettingsError(
            f"{DEV_SECRET_FILE} in the state folder holds fewer than {MIN_SECRET_BYTES} bytes; "
            "delete it and a new one is generated"
        )
    return secret


def mint_token(
    settings: Mapping[str, Any],
    roles: Collection[str] = ("domain_admin",),
    ttl_seconds: int = 3600,
    subject: str = "registry-cli",
) -> str:
    """A signed HMAC token from the configured (or, in development mode, the kept) secret."""
    secret = _setting(settings, "REGISTRY_JWT_SECRET")
    if secret is None:
        if not settings.get("REGISTRY_DEV"):
            raise SettingsError(
                "minting a token needs REGISTRY_JWT_SECRET, or development mode "
                "(REGISTRY_DEV=1) to use the secret kept in the state folder"
            )
        secret = development_secret(settings)
    if len(secret.encode()) < MIN_SECRET_BYTES:
        raise SettingsError(f"REGISTRY_JWT_SECRET must be at least {MIN_SECRET_BYTES} bytes")
    if ttl_seconds <= 0:
        raise ValueError("a token's lifetime must be longer than zero")
    allowed = parse_algorithms(_setting(settings, "REGISTRY_JWT_ALGORITHMS")) or ("HS256",)
    hmac = [name for name in allowed if name in _HMAC_MIN_BYTES]
    if not hmac:
        raise SettingsError(
            "REGISTRY_JWT_ALGORITHMS allows no HS algorithm, so a minted token would not verify"
        )
    now = int(time.time())
    claims: dict[str, Any] = {
        "sub": subject,
        _setting(settings, "REGISTRY_JWT_ROLES_CLAIM") or "roles": list(roles),
        "iat": now,
        "exp": now + int(ttl_seconds),
    }
    audience = _setting(settings, "REGISTRY_JWT_AUDIENCE")
    issuer = _setting(settings, "REGISTRY_JWT_ISSUER")
    if audience is not None:
        claims["aud"] = audience
    if issuer is not None:
        claims["iss"] = issuer
    return jwt.encode(claims, secret, algorithm=hmac[0])
