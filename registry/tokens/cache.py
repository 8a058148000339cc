"""A bounded cache of verified tokens, so a caller's repeated token is checked once, not each time.

Keyed by the token string. An entry holds the claims and the key the token was verified
with, and is used only while every rule it passed still holds: now before exp plus the
leeway, at or after nbf and iat minus the leeway, within MAX_AGE_S of the verification, and,
for a JWKS key, the key set still holding that very key for the token's kid (a key removed or
replaced at the source stops its tokens at the next read of the set, as without the cache).
Outside that window the token is simply verified again, so every refusal comes from the full
check with its own reason. Only accepted tokens are kept; refusals are never cached.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

# PostgREST's jwt-cache-max-lifetime plays the same part; five minutes keeps a worker's
# cache fresh while a caller's token is verified about once per five minutes.
MAX_AGE_S = 300.0
# Entries per process; the oldest goes first. Tokens are refused past 8 KB, so this bounds
# the cache to a few megabytes at worst (well under one in practice).
MAX_ENTRIES = 512


class CachedToken(NamedTuple):
    """What a verified token left behind."""

    claims: Mapping[str, Any]
    kid: str | None  # the JWKS kid its key came from; None for a configured secret or key
    key: Any  # the key object it was verified with
    valid_from: float  # nbf / iat minus the leeway (or -inf)
    valid_until: float  # exp plus the leeway, or MAX_AGE_S after verification if sooner


class VerifiedTokenCache:
    """Token string -> CachedToken, bounded in size and age; safe to share between threads."""

    def __init__(
        self,
        *,
        leeway: float,
        max_entries: int = MAX_ENTRIES,
        max_age: float = MAX_AGE_S,
        clock: Callable[[], float] = time.time,
    ):
        """An empty cache honouring this leeway (the verifier's)."""
        self.leeway = leeway
        self.max_entries = max_entries
        self.max_age = max_age
        self.clock = clock
        self._entries: dict[str, CachedToken] = {}
        self._lock = threading.Lock()

    def get(self, token: str) -> CachedToken | None:
        """The entry for token if its time window holds now; a lapsed entry is dropped."""
        entry = self._entries.get(token)
        if entry is None:
            return None
        now = self.clock()
        if entry.valid_from <= now < entry.valid_until:
            return entry
        self.discard(token)
        return None

    def put(self, token: str, claims: Mapping[str, Any], kid: str | None, key: Any) -> None:
        """Remember a token the full check accepted just now, with the key that verified it."""
        now = self.clock()
        valid_until = now + self.max_age
        exp = claims.get("exp")
        if isinstance(exp, int | float) and not isinstance(exp, bool):
            valid_until = min(valid_until, exp + self.leeway)
        valid_from = -float("inf")
        for name in ("nbf", "iat"):
            value = claims.get(name)
            if isinstance(value, int | float) and not isinstance(value, bool):
                valid_from = max(valid_from, value - self.leeway)
        entry = CachedToken(claims, kid, key, valid_from, valid_until)
        with self._lock:
            self._entries.pop(token, None)
            while len(self._entries) >= self.max_entries:
                del self._entries[next(iter(self._entries))]
            self._entries[token] = entry

    def discard(self, token: str) -> None:
        """Forget token (its key went away, or its window lapsed)."""
        with self._lock:
            self._entries.pop(token, None)

    def __len__(self) -> int:
        """How many tokens are kept."""
        return len(self._entries)
