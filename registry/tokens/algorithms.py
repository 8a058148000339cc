"""Token algorithms: the allow-list from configuration, and which key verifies which algorithm."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa

from registry.settings import SettingsError

MIN_SECRET_BYTES = 32

# Each HMAC algorithm needs a secret at least as long as its digest.
HMAC_MIN_BYTES = {"HS256": 32, "HS384": 48, "HS512": 64}
RSA_ALGORITHMS = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"})
EC_CURVES = {"ES256": "secp256r1", "ES384": "secp384r1", "ES512": "secp521r1"}
EDDSA = "EdDSA"
SUPPORTED_ALGORITHMS = (*HMAC_MIN_BYTES, *sorted(RSA_ALGORITHMS), *EC_CURVES, EDDSA)
ASYMMETRIC_DEFAULTS = ("RS256", "ES256")


def key_fits(algorithm: str, key: Any) -> bool:
    """Whether an asymmetric algorithm can verify with this public key (never a secret)."""
    if algorithm in RSA_ALGORITHMS:
        return isinstance(key, rsa.RSAPublicKey)
    if algorithm in EC_CURVES:
        return isinstance(key, ec.EllipticCurvePublicKey) and key.curve.name == EC_CURVES[algorithm]
    if algorithm == EDDSA:
        return isinstance(key, ed25519.Ed25519PublicKey | ed448.Ed448PublicKey)
    return False


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


def text_setting(settings: Mapping[str, Any], name: str) -> str | None:
    """A string setting, or None when unset or blank."""
    value = settings.get(name)
    if value is None:
        return None
    text = str(value).strip()
    return text or None
