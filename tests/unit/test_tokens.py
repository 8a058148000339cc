"""The token rules without a database: finding, verifying, deciding, configuring, minting."""

from __future__ import annotations

import datetime
import json
import os
import stat
import time
import warnings
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import NameOID
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from jwt.warnings import InsecureKeyLengthWarning

from registry.api.admin_token import is_registry_path
from registry.settings import DEFAULTS, SettingsError
from registry.tokens.algorithms import parse_algorithms
from registry.tokens.development import (
    DEV_SECRET_FILE,
    development_secret,
    mint_token,
    parse_duration,
)
from registry.tokens.keys import JwksKeySet, KeySourceUnavailable, parse_jwks
from registry.tokens.verifier import (
    MAX_TOKEN_LENGTH,
    FoundToken,
    TokenRejected,
    TokenVerifier,
    find_token,
    roles_of,
)
from tests.conftest import TEST_SECRET, make_token

KEY_SETTINGS = ("REGISTRY_JWT_SECRET", "REGISTRY_JWT_PUBLIC_KEY", "REGISTRY_JWKS_URL")


def settings(**overrides: Any) -> dict[str, Any]:
    """The defaults with some settings changed."""
    return {**DEFAULTS, **overrides}


def public_pem(key: Any) -> str:
    """The PEM text of a private key's public half."""
    return (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


def admin_claims(**extra: Any) -> dict[str, Any]:
    """Claims of a valid admin token."""
    return {"sub": "t", "roles": ["domain_admin"], "exp": int(time.time()) + 600, **extra}


@pytest.fixture(scope="module")
def rsa_key() -> rsa.RSAPrivateKey:
    """An RSA-2048 key pair."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def ec_key() -> ec.EllipticCurvePrivateKey:
    """A P-256 key pair."""
    return ec.generate_private_key(ec.SECP256R1())


@pytest.fixture
def clean_environ(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No token setting from the environment leaks into a test; state lives in tmp_path."""
    for name in DEFAULTS:
        if name.startswith("REGISTRY_"):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("REGISTRY_STATE_DIR", str(tmp_path / "state"))
    return monkeypatch


# -- finding the token -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("authorization", "cookies", "expected"),
    [
        ([], [], FoundToken(None, False)),
        ([], ["abc"], FoundToken("abc", True)),
        ([], [" abc "], FoundToken("abc", True)),
        ([], [""], FoundToken(None, False)),
        ([], ["a", "b"], FoundToken(None, True)),
        ([""], ["abc"], FoundToken(None, False)),
        (["   "], ["abc"], FoundToken(None, False)),
        (["Bearer abc"], ["zzz"], FoundToken("abc", True)),
        (["bearer abc"], [], FoundToken("abc", True)),
        (["BEARER abc"], [], FoundToken("abc", True)),
        (["Bearer  abc "], [], FoundToken("abc", True)),
        (["Bearer"], ["abc"], FoundToken(None, True)),
        (["Bearer a b"], [], FoundToken(None, True)),
        (["Bearer a, Bearer b"], [], FoundToken(None, True)),
        (["Basic abc"], ["abc"], FoundToken(None, True)),
        (["abc"], [], FoundToken(None, True)),
        (["Bearerabc"], [], FoundToken(None, True)),
        (["Bearer a", "Bearer a"], [], FoundToken(None, True)),
    ],
)
def test_find_token(authorization: list[str], cookies: list[str], expected: FoundToken) -> None:
    """A present header decides alone; the cookie only without one; one token exactly."""
    assert find_token(authorization, cookies) == expected


@pytest.mark.parametrize(
    ("path", "guarded"),
    [
        ("/registry", True),
        ("/registry/", True),
        ("/registry/summary", True),
        ("/registry/nope/deeper", True),
        ("//registry/summary", True),
        ("/registry//summary", True),
        ("///registry", True),
        ("/summary", False),
        ("/openapi.json", False),
        ("/registryx", False),
        ("/Registry/summary", False),
        ("/other/registry", False),
        ("/", False),
    ],
)
def test_is_registry_path(path: str, guarded: bool) -> None:
    """/registry and everything under it, with merged slashes; nothing else."""
    assert is_registry_path(path) is guarded


@pytest.mark.parametrize(
    ("value", "roles"),
    [
        ("domain_admin", {"domain_admin"}),
        (["a", "b"], {"a", "b"}),
        ([], set()),
        (None, set()),
        (5, set()),
        ({"domain_admin": True}, set()),
        (["domain_admin", 1], set()),
    ],
)
def test_roles_of(value: Any, roles: set[str]) -> None:
    """A string or an array of strings; anything else gives no roles."""
    assert roles_of({"roles": value}, "roles") == roles


# -- durations and algorithms ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("15m", 900), ("1h", 3600), ("1d", 86400), ("3600", 3600), (" 2H ", 7200)],
)
def test_parse_duration(text: str, seconds: int) -> None:
    """Seconds, or a number with s, m, h or d."""
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    "text", ["", "h", "1.5h", "-1h", "0", "0s", "1w", "1 h x", "\u0661h", "400d"]
)
def test_parse_duration_refuses(text: str) -> None:
    """Anything else is a ValueError that says what is accepted."""
    with pytest.raises(ValueError, match=r"duration|zero|366"):
        parse_duration(text)


def test_parse_algorithms() -> None:
    """Names are matched without case and given canonically, in order, once each."""
    assert parse_algorithms("hs256, RS256,eddsa,,HS256") == ("HS256", "RS256", "EdDSA")
    assert parse_algorithms(None) == ()
    assert parse_algorithms(" ") == ()


@pytest.mark.parametrize("text", ["none", "HS256,None", "NONE", "nOnE"])
def test_parse_algorithms_refuses_none(text: str) -> None:
    """`none` in any case refuses to start."""
    with pytest.raises(SettingsError, match="none"):
        parse_algorithms(text)


def test_parse_algorithms_refuses_unknown_names() -> None:
    """An unknown algorithm refuses to start and the message lists the supported ones."""
    with pytest.raises(SettingsError, match=r"HS256.*RS256"):
        parse_algorithms("HS256,XS999")


# -- configuration ---------------------------------------------------------------------------


def test_no_key_refuses_to_start_naming_the_three_settings() -> None:
    """Without a key and outside development mode: a clear message, no app."""
    with pytest.raises(SettingsError) as raised:
        TokenVerifier.from_settings(settings())
    for name in KEY_SETTINGS:
        assert name in str(raised.value)


def test_create_app_refuses_to_start_without_a_key(clean_environ: pytest.MonkeyPatch) -> None:
    """The factory itself refuses, before anything is served."""
    from app import create_app

    with pytest.raises(SettingsError, match="REGISTRY_JWKS_URL"):
        create_app({"DATABASE_URL": "postgresql://127.0.0.1:1/none"})


SMALL_RSA = rsa.generate_private_key(public_exponent=65537, key_size=1024)
P384 = ec.generate_private_key(ec.SECP384R1())
REFUSALS = [
    ({"REGISTRY_JWT_SECRET": "x" * 31}, "at least 32 bytes", "short-secret"),
    ({"REGISTRY_JWT_SECRET": "é" * 15}, "at least 32 bytes", "short-secret-in-bytes"),
    ({"REGISTRY_JWT_SECRET": TEST_SECRET, "REGISTRY_JWT_ALGORITHMS": "HS512"}, "64 bytes", "hs512"),
    ({"REGISTRY_JWT_SECRET": TEST_SECRET, "REGISTRY_JWT_ALGORITHMS": "none"}, "none", "none"),
    ({"REGISTRY_JWT_SECRET": TEST_SECRET, "REGISTRY_JWT_ALGORITHMS": "HS256,NONE"}, "none", "NONE"),
    ({"REGISTRY_JWT_SECRET": TEST_SECRET, "REGISTRY_JWT_ALGORITHMS": "RS256"}, "RS256", "no-rsa"),
    (
        {"REGISTRY_JWT_SECRET": TEST_SECRET, "REGISTRY_JWT_ALGORITHMS": ","},
        "names no algorithm",
        "empty",
    ),
    (
        {"REGISTRY_JWT_PUBLIC_KEY": "rsa", "REGISTRY_JWT_ALGORITHMS": "HS256"},
        "REGISTRY_JWT_SECRET",
        "hs256-without-secret",
    ),
    (
        {"REGISTRY_JWT_PUBLIC_KEY": "rsa", "REGISTRY_JWT_ALGORITHMS": "ES256"},
        "ES256.*cannot verify",
        "es256-with-rsa-key",
    ),
    (
        {"REGISTRY_JWT_PUBLIC_KEY": "ec", "REGISTRY_JWT_ALGORITHMS": "RS256"},
        "RS256.*cannot verify",
        "rs256-with-ec-key",
    ),
    (
        {"REGISTRY_JWT_PUBLIC_KEY": "ec", "REGISTRY_JWT_ALGORITHMS": "ES384"},
        "ES384.*cannot verify",
        "es384-with-p256-key",
    ),
    ({"REGISTRY_JWT_PUBLIC_KEY": public_pem(P384)}, "neither RS256 nor ES256", "p384-default"),
    ({"REGISTRY_JWT_PUBLIC_KEY": public_pem(SMALL_RSA)}, "1024-bit", "small-rsa"),
    ({"REGISTRY_JWT_PUBLIC_KEY": "-----BEGIN PUBLIC KEY-----\nAAAA\n"}, "PEM", "bad-pem"),
    ({"REGISTRY_JWT_PUBLIC_KEY": "no/such/dir/key.pem"}, "readable file", "missing-file"),
    ({"REGISTRY_JWT_PUBLIC_KEY": "x\0y"}, "readable file", "nul-in-path"),
    (
        {"REGISTRY_JWT_PUBLIC_KEY": "rsa", "REGISTRY_JWKS_URL": "https://sso.example.test/jwks"},
        "not both",
        "public-key-and-jwks",
    ),
    ({"REGISTRY_JWKS_URL": "ftp://sso.example.test/jwks.json"}, "file://", "ftp-jwks"),
    ({"REGISTRY_JWKS_URL": "sso.example.test/jwks.json"}, "https://", "jwks-without-scheme"),
]


@pytest.mark.parametrize(
    ("overrides", "pattern"), [pytest.param(o, p, id=i) for o, p, i in REFUSALS]
)
def test_unsafe_or_incomplete_settings_refuse_to_start(
    rsa_key: Any, ec_key: Any, overrides: dict[str, Any], pattern: str
) -> None:
    """Short secrets, `none`, algorithms the key cannot serve, unreadable keys: no start."""
    pems = {"rsa": public_pem(rsa_key), "ec": public_pem(ec_key)}
    config = {name: pems.get(value, value) for name, value in overrides.items()}
    with pytest.raises(SettingsError, match=pattern):
        TokenVerifier.from_settings(settings(**config))


def test_default_algorithms(rsa_key: Any, ec_key: Any, tmp_path: Path) -> None:
    """HS256 with a secret; RS256 and/or ES256 as the public key fits; both with JWKS."""
    jwks_url = (tmp_path / "jwks.json").as_uri()
    cases = [
        ({"REGISTRY_JWT_SECRET": TEST_SECRET}, ("HS256",)),
        ({"REGISTRY_JWT_PUBLIC_KEY": public_pem(rsa_key)}, ("RS256",)),
        ({"REGISTRY_JWT_PUBLIC_KEY": public_pem(ec_key)}, ("ES256",)),
        ({"REGISTRY_JWKS_URL": jwks_url}, ("RS256", "ES256")),
        (
            {"REGISTRY_JWT_SECRET": TEST_SECRET, "REGISTRY_JWT_PUBLIC_KEY": public_pem(rsa_key)},
            ("HS256", "RS256"),
        ),
        (
            {"REGISTRY_JWT_SECRET": TEST_SECRET, "REGISTRY_JWKS_URL": jwks_url},
            ("HS256", "RS256", "ES256"),
        ),
    ]
    for overrides, algorithms in cases:
        assert TokenVerifier.from_settings(settings(**overrides)).algorithms == algorithms


def test_other_key_kinds_with_their_algorithm_named() -> None:
    """A P-384 key with ES384, an Ed25519 key with EdDSA: configured, then verified."""
    for private, alg in (
        (ec.generate_private_key(ec.SECP384R1()), "ES384"),
        (ed25519.Ed25519PrivateKey.generate(), "EdDSA"),
    ):
        verifier = TokenVerifier.from_settings(
            settings(REGISTRY_JWT_PUBLIC_KEY=public_pem(private), REGISTRY_JWT_ALGORITHMS=alg)
        )
        assert verifier.verify(jwt.encode(admin_claims(), private, algorithm=alg))["sub"] == "t"


def test_a_certificate_serves_as_the_public_key(rsa_key: Any, tmp_path: Path) -> None:
    """REGISTRY_JWT_PUBLIC_KEY may be a PEM certificate (its key is used), here as a path."""
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sso.example.test")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(rsa_key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(rsa_key, hashes.SHA256())
    )
    path = tmp_path / "sso.crt"
    path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    verifier = TokenVerifier.from_settings(settings(REGISTRY_JWT_PUBLIC_KEY=str(path)))
    assert verifier.verify(jwt.encode(admin_claims(), rsa_key, algorithm="RS256"))["sub"] == "t"


# -- verifying -------------------------------------------------------------------------------


@pytest.fixture
def verifier() -> TokenVerifier:
    """HS256 with the test secret."""
    return TokenVerifier.from_settings(settings(REGISTRY_JWT_SECRET=TEST_SECRET))


def test_verify_returns_the_claims(verifier: TokenVerifier) -> None:
    """A valid token gives its claims; the roles decide admin or not."""
    claims = verifier.verify(make_token())
    assert claims["roles"] == ["domain_admin"]
    assert verifier.is_admin(claims)
    assert not verifier.is_admin(verifier.verify(make_token(roles=["viewer"])))


def test_oversized_tokens_are_refused_before_decoding(
    verifier: TokenVerifier, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past MAX_TOKEN_LENGTH nothing is parsed; a valid token just under it passes."""
    overhead = len(make_token(pad=""))
    just_under = make_token(pad="x" * ((MAX_TOKEN_LENGTH - overhead) * 3 // 4))
    assert len(just_under) <= MAX_TOKEN_LENGTH
    assert verifier.verify(just_under)["sub"] == "tester"

    def must_not_run(*args: Any, **kwargs: Any) -> Any:
        """Fail the test if decoding is attempted."""
        raise AssertionError("decoded an oversized token")

    monkeypatch.setattr(jwt, "get_unverified_header", must_not_run)
    monkeypatch.setattr(jwt, "decode", must_not_run)
    with pytest.raises(TokenRejected) as raised:
        verifier.verify(make_token(pad="x" * MAX_TOKEN_LENGTH))
    assert raised.value.reason == "oversized"


@pytest.mark.parametrize(
    ("claims", "reason"),
    [
        ({"exp": "9999999999"}, "non-numeric exp"),
        ({"nbf": "1"}, "non-numeric nbf"),
        ({"iat": "1"}, "non-numeric iat"),
        ({"exp": True}, "ExpiredSignatureError"),
        ({"exp": "soon"}, "DecodeError"),
        ({"exp": -35}, "ExpiredSignatureError"),
        ({"nbf": 35}, "ImmatureSignatureError"),
        ({"iat": 35}, "ImmatureSignatureError"),
    ],
    ids=str,
)
def test_date_claims(verifier: TokenVerifier, claims: dict[str, Any], reason: str) -> None:
    """Dates are JSON numbers, honoured with 30 s of leeway (integers here: seconds from now)."""
    now = int(time.time())
    dated = {
        name: now + value if isinstance(value, int) and not isinstance(value, bool) else value
        for name, value in claims.items()
    }
    with pytest.raises(TokenRejected) as raised:
        verifier.verify(jwt.encode(admin_claims(**dated), TEST_SECRET, algorithm="HS256"))
    assert raised.value.reason == reason


def test_leeway_is_thirty_seconds(verifier: TokenVerifier) -> None:
    """Within 30 s of exp, nbf or iat a token still passes."""
    now = int(time.time())
    for claims in ({"exp": now - 25}, {"nbf": now + 25}, {"iat": now + 25}):
        verifier.verify(jwt.encode(admin_claims(**claims), TEST_SECRET, algorithm="HS256"))


def test_audience_and_issuer_when_configured() -> None:
    """aud and iss are required and matched when set; aud is ignored when not."""
    strict = TokenVerifier.from_settings(
        settings(
            REGISTRY_JWT_SECRET=TEST_SECRET,
            REGISTRY_JWT_AUDIENCE="api",
            REGISTRY_JWT_ISSUER="https://sso",
        )
    )
    strict.verify(make_token(aud="api", iss="https://sso"))
    for claims in ({"iss": "https://sso"}, {"aud": "api"}, {"aud": "x", "iss": "https://sso"}):
        with pytest.raises(TokenRejected):
            strict.verify(make_token(**claims))
    lenient = TokenVerifier.from_settings(settings(REGISTRY_JWT_SECRET=TEST_SECRET))
    lenient.verify(make_token(aud="whoever"))


# -- JWKS ------------------------------------------------------------------------------------


class Clock:
    """A clock moved by hand."""

    def __init__(self) -> None:
        """Start at an arbitrary reading."""
        self.now = 100.0

    def __call__(self) -> float:
        """The current reading."""
        return self.now


def jwk(key: Any, **fields: Any) -> dict[str, Any]:
    """The public JWK of a private key, with extra fields."""
    algorithm = RSAAlgorithm if isinstance(key, rsa.RSAPrivateKey) else ECAlgorithm
    return {**algorithm.to_jwk(key.public_key(), as_dict=True), **fields}


def write_jwks(path: Path, *keys: dict[str, Any]) -> None:
    """Write a JWKS document."""
    path.write_text(json.dumps({"keys": list(keys)}))


def test_parse_jwks_keeps_only_usable_signing_keys(rsa_key: Any, ec_key: Any) -> None:
    """Keys need a kid, a signing use and an asymmetric type; the first of a kid wins."""
    document = {
        "keys": [
            jwk(rsa_key, kid="a", alg="RS256"),
            jwk(ec_key, kid="a"),
            jwk(ec_key, kid="b"),
            jwk(rsa_key),
            jwk(rsa_key, kid="enc", use="enc"),
            {"kty": "oct", "kid": "secret", "k": "c2VjcmV0"},
            {"kty": "RSA", "kid": "broken", "n": "!!", "e": "AQAB"},
            "not a key",
        ]
    }
    keys = parse_jwks(document)
    assert sorted(keys) == ["a", "b"]
    assert keys["a"].algorithm == "RS256"
    assert isinstance(keys["a"].key, rsa.RSAPublicKey)
    assert keys["b"].algorithm is None
    assert parse_jwks(["no"]) == {}
    assert parse_jwks({"keys": "no"}) == {}


def test_jwks_file_rotation_and_refetch_limit(rsa_key: Any, ec_key: Any, tmp_path: Path) -> None:
    """Cached; an unknown kid refetches at most once per 30 s; re-read after the lifespan."""
    path = tmp_path / "jwks.json"
    write_jwks(path, jwk(rsa_key, kid="one"))
    clock = Clock()
    keys = JwksKeySet(path.as_uri(), clock=clock)
    assert keys.key_for("one") is not None
    assert keys.fetches == 1
    write_jwks(path, jwk(ec_key, kid="two"))
    clock.now += 29
    assert keys.key_for("two") is None
    assert keys.key_for("one") is not None  # still the cached set
    assert keys.fetches == 1
    clock.now += 1
    assert keys.key_for("two") is not None
    assert keys.fetches == 2
    for kid in ("one", "three", "four"):
        assert keys.key_for(kid) is None
    assert keys.fetches == 2
    clock.now += 300  # past the lifespan the set is read again, without any unknown kid
    write_jwks(path, jwk(ec_key, kid="two"), jwk(rsa_key, kid="five"))
    assert keys.key_for("five") is not None
    assert keys.fetches == 3


def test_jwks_source_down(rsa_key: Any, tmp_path: Path) -> None:
    """Down source: stale keys serve, an unknown kid or no keys is unavailable, back-off holds."""
    path = tmp_path / "jwks.json"
    clock = Clock()
    keys = JwksKeySet(path.as_uri(), clock=clock, failure_backoff=2)
    with pytest.raises(KeySourceUnavailable):
        keys.key_for("one")
    with pytest.raises(KeySourceUnavailable):
        keys.key_for("one")
    assert keys.fetches == 1  # within the back-off: no second read
    clock.now += 2
    write_jwks(path, jwk(rsa_key, kid="one"))
    assert keys.key_for("one") is not None
    assert keys.fetches == 2
    path.unlink()
    clock.now += 400
    assert keys.key_for("one") is not None  # stale, but the source is down
    with pytest.raises(KeySourceUnavailable):
        keys.key_for("two")
    assert keys.fetches == 3
    path.write_text("{not json")
    clock.now += 30
    with pytest.raises(KeySourceUnavailable):
        keys.key_for("two")
    assert keys.key_for("one") is not None


def test_jwks_verifier_checks_kid_and_key_kind(rsa_key: Any, ec_key: Any, tmp_path: Path) -> None:
    """The key is chosen by kid from the set, and must fit the token's algorithm."""
    path = tmp_path / "jwks.json"
    write_jwks(
        path,
        jwk(rsa_key, kid="r", alg="RS256"),
        jwk(ec_key, kid="e"),
        jwk(rsa_key, kid="p"),
        jwk(SMALL_RSA, kid="small"),
    )
    verifier = TokenVerifier.from_settings(
        settings(REGISTRY_JWKS_URL=path.as_uri(), REGISTRY_JWT_ALGORITHMS="RS256,PS256,ES256")
    )
    assert verifier.jwks is not None
    verifier.jwks.clock = Clock()
    cases = [
        (rsa_key, "RS256", "r", None),
        (ec_key, "ES256", "e", None),
        (rsa_key, "PS256", "p", None),
        (rsa_key, "PS256", "r", "key does not fit the algorithm"),
        (ec_key, "ES256", "r", "key does not fit the algorithm"),
        (rsa_key, "RS256", "e", "key does not fit the algorithm"),
        (rsa_key, "RS256", "zzz", "unknown kid"),
        (rsa_key, "RS256", None, "no kid"),
    ]
    for key, alg, kid, reason in cases:
        headers = {} if kid is None else {"kid": kid}
        value = jwt.encode(admin_claims(), key, algorithm=alg, headers=headers)
        if reason is None:
            assert verifier.verify(value)["sub"] == "t"
        else:
            with pytest.raises(TokenRejected) as raised:
                verifier.verify(value)
            assert raised.value.reason == reason, (alg, kid)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureKeyLengthWarning)  # signing is the test's side
        small = jwt.encode(admin_claims(), SMALL_RSA, algorithm="RS256", headers={"kid": "small"})
    with pytest.raises(TokenRejected) as raised:  # refused, without a warning
        verifier.verify(small)
    assert raised.value.reason == "InvalidKeyError"


# -- development secret and minting ----------------------------------------------------------


def test_development_secret_is_kept_private(tmp_path: Path) -> None:
    """Created once with mode 0600 under the state folder, then read back unchanged."""
    state = tmp_path / "state" / "nested"
    first = development_secret(settings(REGISTRY_STATE_DIR=str(state)))
    path = state / DEV_SECRET_FILE
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert len(first.encode()) >= 32
    assert development_secret(settings(REGISTRY_STATE_DIR=str(state))) == first
    assert [entry.name for entry in state.iterdir()] == [DEV_SECRET_FILE]
    path.write_text("short\n")
    with pytest.raises(SettingsError, match="delete it"):
        development_secret(settings(REGISTRY_STATE_DIR=str(state)))


def test_development_mode_without_a_key_uses_the_kept_secret(tmp_path: Path) -> None:
    """REGISTRY_DEV and no key: the verifier and mint_token share the kept secret."""
    dev = settings(REGISTRY_DEV=True, REGISTRY_STATE_DIR=str(tmp_path))
    verifier = TokenVerifier.from_settings(dev)
    assert verifier.algorithms == ("HS256",)
    token = mint_token(dev, roles=["global_admin"], ttl_seconds=60, subject="dev")
    assert verifier.is_admin(verifier.verify(token))


def test_mint_token_follows_the_configuration() -> None:
    """Roles claim, aud, iss and the first HS algorithm of the allow-list; exp = iat + ttl."""
    secret = "s" * 64
    config = settings(
        REGISTRY_JWT_SECRET=secret,
        REGISTRY_JWT_ALGORITHMS="RS256,HS512",
        REGISTRY_JWT_PUBLIC_KEY=None,
        REGISTRY_JWT_AUDIENCE="api",
        REGISTRY_JWT_ISSUER="https://sso",
        REGISTRY_JWT_ROLES_CLAIM="groups",
    )
    token = mint_token(config, roles=["domain_admin"], ttl_seconds=900, subject="ops")
    assert jwt.get_unverified_header(token)["alg"] == "HS512"
    claims = jwt.decode(token, secret, algorithms=["HS512"], audience="api", issuer="https://sso")
    assert claims["groups"] == ["domain_admin"]
    assert claims["sub"] == "ops"
    assert claims["exp"] - claims["iat"] == 900


@pytest.mark.parametrize(
    ("overrides", "pattern"),
    [
        ({}, "REGISTRY_JWT_SECRET"),
        ({"REGISTRY_JWT_SECRET": "short"}, "32 bytes"),
        ({"REGISTRY_JWT_SECRET": TEST_SECRET, "REGISTRY_JWT_ALGORITHMS": "RS256"}, "no HS"),
    ],
)
def test_mint_token_refuses(overrides: dict[str, Any], pattern: str) -> None:
    """No secret outside development mode, a short one, or no HS algorithm allowed."""
    with pytest.raises(SettingsError, match=pattern):
        mint_token(settings(**overrides), roles=["domain_admin"], ttl_seconds=60, subject="x")


def test_registry_token_command(
    clean_environ: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`registry token --roles ... --ttl ... --sub ...` prints a token the service accepts."""
    from registry.cli import main

    clean_environ.setenv("REGISTRY_JWT_SECRET", TEST_SECRET)
    assert main(["token", "--roles", "global_admin,viewer", "--ttl", "15m", "--sub", "ops"]) == 0
    token = capsys.readouterr().out.strip()
    claims = TokenVerifier.from_settings(settings(REGISTRY_JWT_SECRET=TEST_SECRET)).verify(token)
    assert claims["roles"] == ["global_admin", "viewer"]
    assert claims["sub"] == "ops"
    assert claims["exp"] - claims["iat"] == 900
    assert main(["token", "--ttl", "soon"]) == 2
    assert "duration" in capsys.readouterr().err


def test_registry_token_command_in_development_mode(
    clean_environ: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """With REGISTRY_DEV and no secret, the command signs with the kept secret."""
    from registry.cli import main

    clean_environ.setenv("REGISTRY_DEV", "1")
    assert main(["token"]) == 0
    token = capsys.readouterr().out.strip()
    secret = development_secret(settings(REGISTRY_STATE_DIR=str(tmp_path / "state")))
    claims = jwt.decode(token, secret, algorithms=["HS256"])
    assert claims["roles"] == ["domain_admin"]
    assert claims["exp"] - claims["iat"] == 3600
