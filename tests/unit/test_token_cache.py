"""The verified-token cache: a repeated token skips the full check, and never outlives a rule.

Real signed tokens and real key sets; the cache is the one TokenVerifier builds for itself.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from registry.settings import DEFAULTS
from registry.tokens.cache import VerifiedTokenCache
from registry.tokens.verifier import LEEWAY_S, TokenRejected, TokenVerifier
from tests.conftest import TEST_SECRET, make_token


@pytest.fixture
def verifier() -> TokenVerifier:
    """HS256 with the test secret."""
    return TokenVerifier.from_settings({**DEFAULTS, "REGISTRY_JWT_SECRET": TEST_SECRET})


@pytest.fixture(scope="module")
def rsa_keys() -> list[rsa.RSAPrivateKey]:
    """Two RSA-2048 key pairs."""
    return [rsa.generate_private_key(public_exponent=65537, key_size=2048) for _ in range(2)]


class Clock:
    """A monotonic clock moved by hand (the key set's schedule)."""

    def __init__(self) -> None:
        """Start at an arbitrary reading."""
        self.now = 100.0

    def __call__(self) -> float:
        """The current reading."""
        return self.now


def write_jwks(path: Path, **keys: rsa.RSAPrivateKey) -> None:
    """A JWKS document holding these public keys under these kids."""
    entries = [
        {**RSAAlgorithm.to_jwk(key.public_key(), as_dict=True), "kid": kid}
        for kid, key in keys.items()
    ]
    path.write_text(json.dumps({"keys": entries}))


def rs256(key: rsa.RSAPrivateKey, kid: str, **claims: Any) -> str:
    """An admin token signed with key, naming kid."""
    payload = {"sub": "t", "roles": ["domain_admin"], "exp": int(time.time()) + 600, **claims}
    return jwt.encode(payload, key, algorithm="RS256", headers={"kid": kid})


def test_a_repeated_token_is_not_decoded_again(
    verifier: TokenVerifier, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second use of a valid token is answered from the cache, with its own claims copy."""
    token = make_token()
    first = verifier.verify(token)
    assert len(verifier.cache) == 1

    def must_not_run(*args: Any, **kwargs: Any) -> Any:
        """Fail the test if the token is decoded again."""
        raise AssertionError("decoded a cached token")

    monkeypatch.setattr(jwt, "decode", must_not_run)
    second = verifier.verify(token)
    assert second == first
    second["roles"] = ["viewer"]  # a caller changing its copy changes nothing cached
    assert verifier.verify(token)["roles"] == ["domain_admin"]


def test_refused_tokens_are_not_cached(verifier: TokenVerifier) -> None:
    """Only accepted tokens are kept: a refusal is checked in full each time."""
    for token in (make_token(secret="y" * 48), make_token(exp=int(time.time()) - 60), "a.b.c"):
        for _ in range(2):
            with pytest.raises(TokenRejected):
                verifier.verify(token)
    assert len(verifier.cache) == 0


def test_a_cached_token_stops_being_accepted_once_it_expires(
    verifier: TokenVerifier, monkeypatch: pytest.MonkeyPatch
) -> None:
    """exp plus the leeway ends a cached token exactly as it ends an uncached one. The
    cache's clock is moved by hand (no race with a real second), and past exp + leeway the
    signature check says what PyJWT says then: expired."""
    now = [float(int(time.time()))]
    verifier.cache.clock = lambda: now[0]
    exp = int(now[0]) + 100
    token = make_token(exp=exp)
    verifier.verify(token)
    assert len(verifier.cache) == 1
    real_decode = jwt.decode

    def expired(*args: Any, **kwargs: Any) -> Any:
        """PyJWT at a moment past exp + leeway."""
        raise jwt.ExpiredSignatureError("Signature has expired")

    monkeypatch.setattr(jwt, "decode", expired)
    now[0] = exp + LEEWAY_S - 1  # the leeway still covers it: from the cache
    assert verifier.verify(token)["sub"] == "tester"
    now[0] = exp + LEEWAY_S  # PyJWT too counts this moment as expired
    with pytest.raises(TokenRejected) as raised:
        verifier.verify(token)
    assert raised.value.reason == "ExpiredSignatureError"
    assert len(verifier.cache) == 0
    monkeypatch.setattr(jwt, "decode", real_decode)


def test_the_time_window_honours_nbf_iat_exp_and_the_age_limit() -> None:
    """An entry serves only from nbf/iat minus the leeway until exp plus it (or its age limit)."""
    now = [1000.0]
    cache = VerifiedTokenCache(leeway=30, max_age=300, clock=lambda: now[0])
    cache.put("t", {"exp": 1100, "nbf": 990, "iat": 995}, None, "key")
    for moment, served in ((964.9, False), (965.0, True), (1129.9, True), (1130.0, False)):
        now[0] = moment
        assert (cache.get("t") is not None) is served, moment
        if not served:
            now[0] = 1000.0
            cache.put("t", {"exp": 1100, "nbf": 990, "iat": 995}, None, "key")
    cache.put("long", {"exp": 10_000}, None, "key")
    now[0] = 1000.0 + 300
    assert cache.get("long") is None  # past the age limit, verified again


def test_the_cache_is_bounded() -> None:
    """Past max_entries the oldest entries go first."""
    cache = VerifiedTokenCache(leeway=30, max_entries=3, clock=lambda: 0.0)
    for name in "abcde":
        cache.put(name, {"exp": 100}, None, "key")
    assert len(cache) == 3
    assert [cache.get(name) is not None for name in "abcde"] == [False, False, True, True, True]


def test_a_token_of_a_removed_jwks_key_is_refused_once_the_set_changes(
    rsa_keys: list[rsa.RSAPrivateKey], tmp_path: Path
) -> None:
    """Cached under key "one"; once the set is re-read without it, the token is refused."""
    one, two = rsa_keys
    path = tmp_path / "jwks.json"
    write_jwks(path, one=one, two=two)
    verifier = TokenVerifier.from_settings({**DEFAULTS, "REGISTRY_JWKS_URL": path.as_uri()})
    assert verifier.jwks is not None
    clock = Clock()
    verifier.jwks.clock = clock
    token, other = rs256(one, "one"), rs256(two, "two")
    verifier.verify(token)
    verifier.verify(other)
    assert len(verifier.cache) == 2
    write_jwks(path, two=two)
    verifier.verify(token)  # the set is not due for a re-read yet: as without the cache
    clock.now += verifier.jwks.lifespan
    with pytest.raises(TokenRejected) as raised:
        verifier.verify(token)
    assert raised.value.reason == "unknown kid"
    assert verifier.verify(other)["sub"] == "t"  # a key still in the set keeps working


def test_a_token_of_a_replaced_jwks_key_is_refused(
    rsa_keys: list[rsa.RSAPrivateKey], tmp_path: Path
) -> None:
    """The same kid now naming another key: the cached token fails the signature check."""
    one, two = rsa_keys
    path = tmp_path / "jwks.json"
    write_jwks(path, one=one)
    verifier = TokenVerifier.from_settings({**DEFAULTS, "REGISTRY_JWKS_URL": path.as_uri()})
    assert verifier.jwks is not None
    clock = Clock()
    verifier.jwks.clock = clock
    token = rs256(one, "one")
    verifier.verify(token)
    write_jwks(path, one=two)
    clock.now += verifier.jwks.lifespan
    with pytest.raises(TokenRejected) as raised:
        verifier.verify(token)
    assert raised.value.reason == "InvalidSignatureError"
