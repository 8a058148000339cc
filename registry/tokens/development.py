"""Development tokens: the secret kept in the state folder, and tokens minted with a secret."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import tempfile
import time
from collections.abc import Collection, Mapping
from typing import Any

import jwt

from registry.settings import SettingsError, state_dir
from registry.tokens.algorithms import (
    HMAC_MIN_BYTES,
    MIN_SECRET_BYTES,
    parse_algorithms,
    text_setting,
)

DEV_SECRET_FILE = "dev-jwt-secret"
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
    secret = text_setting(settings, "REGISTRY_JWT_SECRET")
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
    allowed = parse_algorithms(text_setting(settings, "REGISTRY_JWT_ALGORITHMS")) or ("HS256",)
    hmac = [name for name in allowed if name in HMAC_MIN_BYTES]
    if not hmac:
        raise SettingsError(
            "REGISTRY_JWT_ALGORITHMS allows no HS algorithm, so a minted token would not verify"
        )
    now = int(time.time())
    claims: dict[str, Any] = {
        "sub": subject,
        text_setting(settings, "REGISTRY_JWT_ROLES_CLAIM") or "roles": list(roles),
        "iat": now,
        "exp": now + int(ttl_seconds),
    }
    audience = text_setting(settings, "REGISTRY_JWT_AUDIENCE")
    issuer = text_setting(settings, "REGISTRY_JWT_ISSUER")
    if audience is not None:
        claims["aud"] = audience
    if issuer is not None:
        claims["iss"] = issuer
    return jwt.encode(claims, secret, algorithm=hmac[0])
