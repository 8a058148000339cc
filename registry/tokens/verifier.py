"""Token verification (docs/authentication.md): find the token, check it with the configured keys,
judge roles.

Keys and algorithms come from configuration only: the token chooses neither. No Flask here:
the request hook (registry.api.admin_token) feeds it headers and turns its verdict into answers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import jwt

from registry.settings import SettingsError
from registry.tokens.algorithms import (
    ASYMMETRIC_DEFAULTS,
    HMAC_MIN_BYTES,
    MIN_SECRET_BYTES,
    SUPPORTED_ALGORITHMS,
    key_fits,
    parse_algorithms,
    text_setting,
)
from registry.tokens.cache import VerifiedTokenCache
from registry.tokens.development import development_secret
from registry.tokens.keys import JwksKeySet, PublicKey, load_public_key

ADMIN_ROLES = frozenset({"global_admin", "domain_admin"})
LEEWAY_S = 30
# Real access tokens are well under 2 KB; anything past this is refused before decoding.
MAX_TOKEN_LENGTH = 8192
_NUMERIC_DATES = ("exp", "nbf", "iat")

NO_KEY_MESSAGE = (
    "no token key is configured: set REGISTRY_JWT_SECRET (HS256 shared secret), "
    "REGISTRY_JWT_PUBLIC_KEY (PEM public key, text or path, for RS256/ES256) or "
    "REGISTRY_JWKS_URL (a JWKS document); development mode (REGISTRY_DEV=1, as `make run` "
    "does) generates a secret instead"
)


class TokenRejected(Exception):
    """The token is not valid; `reason` is a short code that is safe to log (never the token)."""

    def __init__(self, reason: str):
        """Keep the reason for the log."""
        super().__init__(reason)
        self.reason = reason


class FoundToken(NamedTuple):
    """What the request carries: the token, if one could be read, and whether any was given."""

    token: str | None
    presented: bool


def find_token(authorization: Sequence[str], cookies: Sequence[str]) -> FoundToken:
    """docs/authentication.md: a present Authorization header decides alone; only without it, the
    cookie."""
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
        # Accepted tokens, so that a caller's repeated token skips decoding and the signature
        # check while every rule it passed still holds (registry/tokens/cache.py).
        self.cache = VerifiedTokenCache(leeway=LEEWAY_S)

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> TokenVerifier:
        """Build from configuration, refusing to start on anything unsafe or incomplete."""
        secret_text = text_setting(settings, "REGISTRY_JWT_SECRET")
        public_text = text_setting(settings, "REGISTRY_JWT_PUBLIC_KEY")
        jwks_url = text_setting(settings, "REGISTRY_JWKS_URL")
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
        algorithms = parse_algorithms(text_setting(settings, "REGISTRY_JWT_ALGORITHMS"))
        if not algorithms:
            algorithms = _default_algorithms(secret, public_key, jwks)
        return cls(
            algorithms=algorithms,
            secret=secret,
            public_key=public_key,
            jwks=jwks,
            audience=text_setting(settings, "REGISTRY_JWT_AUDIENCE"),
            issuer=text_setting(settings, "REGISTRY_JWT_ISSUER"),
            roles_claim=text_setting(settings, "REGISTRY_JWT_ROLES_CLAIM") or "roles",
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
            if algorithm in HMAC_MIN_BYTES:
                if self.secret is None:
                    raise SettingsError(
                        f"REGISTRY_JWT_ALGORITHMS allows {algorithm}, which needs "
                        "REGISTRY_JWT_SECRET"
                    )
                if len(self.secret) < HMAC_MIN_BYTES[algorithm]:
                    raise SettingsError(
                        f"REGISTRY_JWT_SECRET must be at least {HMAC_MIN_BYTES[algorithm]} "
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
        cached = self.cache.get(token)
        if cached is not None:
            if cached.kid is None or self._jwks_key_still(cached.kid, cached.key):
                return dict(cached.claims)
            self.cache.discard(token)
        claims, kid, key = self._verify_fully(token)
        self.cache.put(token, claims, kid, key)
        return dict(claims)

    def _jwks_key_still(self, kid: str, key: Any) -> bool:
        """Whether the key set, as it stands now (re-read on its schedule), still has key."""
        assert self.jwks is not None  # a kid is only recorded for a JWKS key
        found = self.jwks.key_for(kid)
        return found is not None and found.key is key

    def _verify_fully(self, token: str) -> tuple[dict[str, Any], str | None, Any]:
        """The full check: (claims, the JWKS kid or None, the key that verified the token)."""
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
        kid = header.get("kid") if self._uses_jwks(algorithm) else None
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
        return claims, kid, key

    def _uses_jwks(self, algorithm: str) -> bool:
        """Whether this algorithm's key comes from the JWKS set (see _key_for)."""
        return algorithm not in HMAC_MIN_BYTES and self.public_key is None and self.jwks is not None

    def _key_for(self, algorithm: str, header: Mapping[str, Any]) -> Any:
        """The configured key for this algorithm; headers such as jku, x5u or jwk are ignored."""
        if algorithm in HMAC_MIN_BYTES:
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


def _default_algorithms(
    secret: bytes | None, public_key: PublicKey | None, jwks: JwksKeySet | None
) -> tuple[str, ...]:
    """docs/authentication.md, Verifying: HS256 with a secret, RS256,ES256 with a public key (those
    it fits) or JWKS."""
    algorithms: list[str] = ["HS256"] if secret is not None else []
    if public_key is not None:
        fitting = [name for name in ASYMMETRIC_DEFAULTS if key_fits(name, public_key)]
        if not fitting:
            raise SettingsError(
                "the key in REGISTRY_JWT_PUBLIC_KEY fits neither RS256 nor ES256; "
                "name its algorithm in REGISTRY_JWT_ALGORITHMS (for example ES384 or EdDSA)"
            )
        algorithms.extend(fitting)
    elif jwks is not None:
        algorithms.extend(ASYMMETRIC_DEFAULTS)
    return tuple(algorithms)


def _is_numeric_date(value: Any) -> bool:
    """A JSON number that is a real, finite time."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value)
