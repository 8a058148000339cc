"""Public keys for tokens: a PEM key from configuration, or a JWKS document fetched and cached."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlsplit
from urllib.request import url2pathname

import jwt
import orjson
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa

from registry.settings import SettingsError
from registry.tokens.jwks_fetch import MAX_JWKS_BYTES, JwksFetchError, fetch_jwks_bytes

# The logger keeps its name from before the split, so operators' log filters still match.
log = logging.getLogger("registry.auth")

MIN_RSA_BITS = 2048
# The whole fetch of a JWKS document, connect to last byte (not per read).
JWKS_TIMEOUT_S = 5.0
JWKS_LIFESPAN_S = 300.0
JWKS_REFETCH_INTERVAL_S = 30.0

PublicKey = (
    rsa.RSAPublicKey | ec.EllipticCurvePublicKey | ed25519.Ed25519PublicKey | ed448.Ed448PublicKey
)


class KeySourceUnavailable(Exception):
    """No key can be had because the JWKS source cannot be read: a 503, not a 401."""


class JwksKey(NamedTuple):
    """One signing key of a JWKS document: the algorithm it declares (if any) and the key."""

    algorithm: str | None
    key: Any


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


def _read_capped(path: Path) -> bytes:
    """A local JWKS document, refused past the same size cap as a fetched one."""
    with path.open("rb") as handle:
        data = handle.read(MAX_JWKS_BYTES + 1)
    if len(data) > MAX_JWKS_BYTES:
        raise JwksFetchError(f"document over {MAX_JWKS_BYTES} bytes")
    return data


class JwksKeySet:
    """The keys of a JWKS URL by kid: cached, refetched for an unknown kid at most every 30 s."""

    # Also: re-read after the lifespan by the request that finds it expired; one fetch at a
    # time, and meanwhile a kid the last good set holds is answered from it at once (other
    # kids wait for that fetch). The last good set also serves while the source is down
    # (better than refusing every caller). A failed fetch is not retried within the back-off,
    # counted from when it gave up (the fetch deadline is longer than the back-off), so a
    # dead or hanging source costs each worker one fetch per back-off, and every other
    # request is answered at once: from the last good set, or with KeySourceUnavailable.
    # `fetches` counts reads of the source.

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
            # Our own fetch: a total deadline and a size cap (jwks_fetch). The caching is ours
            # too, because PyJWKClient's per-kid cache would keep accepting a key after the
            # set has dropped it.
            self._read = lambda: fetch_jwks_bytes(url, timeout)
        elif scheme == "file":
            path = Path(url2pathname(parts.path))
            self._read = lambda: _read_capped(path)
        else:
            raise SettingsError("REGISTRY_JWKS_URL must be an https://, http:// or file:// URL")
        self.timeout = timeout
        self.lifespan = lifespan
        self.refetch_interval = refetch_interval
        self.failure_backoff = failure_backoff
        self.clock = clock
        self._lock = threading.Lock()
        self._keys: dict[str, JwksKey] | None = None
        self._fetched_at = 0.0
        # When the last attempt ended; none yet: as if long ago.
        self._attempted_at = -math.inf
        self._last_failed = False
        # Set when the fetch under way ends; None when none is.
        self._under_way: threading.Event | None = None
        self.fetches = 0

    def key_for(self, kid: str) -> JwksKey | None:
        """The key with this kid, or None; raises KeySourceUnavailable when no set can be had."""
        waited = False
        while True:
            with self._lock:
                now = self.clock()
                key = (self._keys or {}).get(kid)
                expired = self._keys is None or now - self._fetched_at >= self.lifespan
                backing_off = self._last_failed and now - self._attempted_at < self.failure_backoff
                under_way = self._under_way
                answering = under_way is not None or backing_off or waited
                if key is not None and (not expired or answering):
                    # Fresh; or the last good set, while another thread asks the source for
                    # the next one or while the source fails.
                    return key
                if key is None and waited:
                    # The fetch this kid waited for has ended (or is past its deadline).
                    if self._last_failed or self._under_way is not None:
                        raise KeySourceUnavailable("the JWKS source is unavailable")
                    return None
                if key is None and under_way is None:
                    asked_lately = not expired and now - self._attempted_at < self.refetch_interval
                    if self._last_failed and (backing_off or asked_lately):
                        # The source is down; the kid may belong to a key we cannot see yet.
                        raise KeySourceUnavailable("the JWKS source is unavailable")
                    if asked_lately:
                        return None
                mine = under_way is None
                if under_way is None:
                    under_way = threading.Event()
                    self._under_way = under_way
            if mine:
                self._run_fetch(under_way)
            else:
                # Another thread is asking the source already: its answer is this kid's too.
                under_way.wait(self.timeout + 1.0)
            waited = True

    def _run_fetch(self, under_way: threading.Event) -> None:
        """Read the source once and record the outcome, then wake whoever waits for it."""
        try:
            keys = self._fetch()
        except KeySourceUnavailable:
            with self._lock:
                self._attempted_at, self._last_failed = self.clock(), True
        else:
            with self._lock:
                now = self.clock()
                self._keys, self._fetched_at, self._attempted_at = keys, now, now
                self._last_failed = False
        finally:
            with self._lock:
                self._under_way = None
            under_way.set()

    def _fetch(self) -> dict[str, JwksKey]:
        """Read the document once and keep its usable keys."""
        self.fetches += 1
        try:
            # orjson refuses nesting past 1024 levels (the standard library would raise
            # RecursionError); anything else a hostile document can cause is caught as well,
            # so that a bad source is "no key" (503, retried after the back-off), never a 500.
            keys = parse_jwks(orjson.loads(self._read()))
        except Exception as error:  # every failure of the source means no key
            log.warning("JWKS fetch failed: %s: %s", type(error).__name__, str(error)[:200])
            raise KeySourceUnavailable("the JWKS source is unavailable") from None
        if not keys:
            log.warning("JWKS document holds no usable signing keys")
            raise KeySourceUnavailable("the JWKS document holds no usable keys")
        return keys
