"""The verified-token cache of the intake (pipeline.md 1.1): it saves the signature check for a
token seen before, and never accepts what a fresh verification would refuse."""

from __future__ import annotations

import base64
import json
import time

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from importjobs.identity import Principal, Unauthorized, VerifiedTokens, authenticate
from importjobs.settings import DEMO_JWT_SECRETS, PipelineSettings, SettingError
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from tests.support.pipeline import SECRET, token

SETTINGS = PipelineSettings(jwt_secret=SECRET)


class FakeNow:
    def __init__(self, value: float) -> None:
        self.value = value

    def __call__(self) -> float:
        return self.value


def bearer(value: str) -> dict[str, str]:
    return {"authorization": f"Bearer {value}"}


def test_a_verified_token_is_remembered_and_answers_without_a_new_signature_check(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    tokens = VerifiedTokens()
    value = token("tenant-a", "user-1")
    assert authenticate(bearer(value), SETTINGS, tokens) == Principal("tenant-a", "user-1")
    calls = []
    monkeypatch.setattr(jwt, "decode", lambda *a, **k: calls.append(a) or {})  # would fail: no claims
    assert authenticate(bearer(value), SETTINGS, tokens) == Principal("tenant-a", "user-1")
    assert calls == []


def test_failures_are_never_remembered() -> None:
    tokens = VerifiedTokens()
    wrong = token(secret="another-secret-0123456789-abcdefghij")
    for bad in (wrong, token(lifetime=-60), token(tenant=""), "not-a-jwt"):
        for _ in range(2):
            with pytest.raises(Unauthorized):
                authenticate(bearer(bad), SETTINGS, tokens)
    assert len(tokens) == 0


def test_a_tampered_copy_of_a_remembered_token_is_refused() -> None:
    tokens = VerifiedTokens()
    value = token("tenant-a", "user-1")
    authenticate(bearer(value), SETTINGS, tokens)
    head, payload, signature = value.split(".")
    forged_payload = jwt.utils.base64url_encode(
        b'{"tid":"tenant-b","oid":"user-1","exp":%d}' % (int(time.time()) + 3600)).decode()
    flipped = signature[:-2] + ("AA" if signature[-2:] != "AA" else "BB")
    for forged in (f"{head}.{forged_payload}.{signature}", f"{head}.{payload}.{flipped}"):
        with pytest.raises(Unauthorized):
            authenticate(bearer(forged), SETTINGS, tokens)


def test_expiry_is_enforced_at_use_time() -> None:
    now = FakeNow(1_000.0)
    tokens = VerifiedTokens(now=now)
    principal = Principal("t", "u")
    tokens.put("tok", principal, {"exp": 1_030})
    assert tokens.get("tok") == principal
    now.value = 1_029.9
    assert tokens.get("tok") == principal
    now.value = 1_030.0  # PyJWT: expired once now >= exp
    assert tokens.get("tok") is None
    now.value = 1_000.0  # the entry is gone, not just hidden
    assert tokens.get("tok") is None


def test_not_before_is_enforced_at_use_time() -> None:
    now = FakeNow(1_000.0)
    tokens = VerifiedTokens(now=now)
    tokens.put("tok", Principal("t", "u"), {"exp": 5_000, "nbf": 1_000})
    assert tokens.get("tok") is not None
    tokens.put("later", Principal("t", "u"), {"exp": 5_000, "nbf": 1_010})
    assert tokens.get("later") is None


def test_an_entry_lives_at_most_the_ttl_and_the_cache_is_bounded() -> None:
    now = FakeNow(1_000.0)
    tokens = VerifiedTokens(max_entries=2, ttl_seconds=60, now=now)
    tokens.put("a", Principal("t", "a"), {"exp": 10_000})
    now.value = 1_060.0
    assert tokens.get("a") is None
    tokens.put("b", Principal("t", "b"), {"exp": 10_000})
    tokens.put("c", Principal("t", "c"), {"exp": 10_000})
    tokens.put("d", Principal("t", "d"), {"exp": 10_000})
    assert len(tokens) == 2 and tokens.get("b") is None and tokens.get("d") == Principal("t", "d")


def test_claims_without_a_usable_expiry_are_not_remembered() -> None:
    tokens = VerifiedTokens(now=FakeNow(0.0))
    tokens.put("x", Principal("t", "u"), {})
    tokens.put("y", Principal("t", "u"), {"exp": "soon"})
    assert len(tokens) == 0


# -- JWKS: a token is verified only by a key its algorithm fits ------------------------------------

def _jwks(tmp_path, *keys: dict) -> PipelineSettings:  # type: ignore[no-untyped-def]
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": list(keys)}))
    return PipelineSettings(jwks_file=str(path))


def _claims() -> dict:
    return {"tid": "tenant-a", "oid": "user-1", "exp": int(time.time()) + 600}


RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())


def _public_jwk(key, kid: str, **extra: str) -> dict:  # type: ignore[no-untyped-def]
    algorithm = RSAAlgorithm if isinstance(key, rsa.RSAPrivateKey) else ECAlgorithm
    return {**json.loads(algorithm.to_jwk(key.public_key())), "kid": kid, **extra}


def test_rs256_and_es256_tokens_verify_with_their_keys(tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings = _jwks(tmp_path, _public_jwk(RSA_KEY, "rsa"), _public_jwk(EC_KEY, "ec"))
    rs = jwt.encode(_claims(), RSA_KEY, algorithm="RS256", headers={"kid": "rsa"})
    ps = jwt.encode(_claims(), RSA_KEY, algorithm="PS256", headers={"kid": "rsa"})
    es = jwt.encode(_claims(), EC_KEY, algorithm="ES256", headers={"kid": "ec"})
    for value in (rs, ps, es):
        assert authenticate(bearer(value), settings) == Principal("tenant-a", "user-1")


@pytest.mark.parametrize("header_alg", ["ES256", "HS256", "none", "RS256-ish"])
def test_a_token_whose_algorithm_does_not_fit_the_rsa_key_is_401(tmp_path, header_alg: str) -> None:  # type: ignore[no-untyped-def]
    """An ES256 header against an RSA key made PyJWT raise TypeError (a 500); it is a 401."""
    settings = _jwks(tmp_path, _public_jwk(RSA_KEY, "rsa"))
    signed = jwt.encode(_claims(), EC_KEY, algorithm="ES256", headers={"kid": "rsa"})
    header, payload, signature = signed.split(".")
    forged_header = base64.urlsafe_b64encode(json.dumps({"alg": header_alg, "kid": "rsa", "typ": "JWT"}).encode())
    value = ".".join([forged_header.decode().rstrip("="), payload, signature])
    with pytest.raises(Unauthorized, match="does not fit"):
        authenticate(bearer(value), settings)


def test_a_key_that_declares_its_algorithm_verifies_only_that_one(tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings = _jwks(tmp_path, _public_jwk(RSA_KEY, "rsa", alg="PS256"))
    with pytest.raises(Unauthorized, match="does not fit"):
        authenticate(bearer(jwt.encode(_claims(), RSA_KEY, algorithm="RS256", headers={"kid": "rsa"})), settings)
    ps = jwt.encode(_claims(), RSA_KEY, algorithm="PS256", headers={"kid": "rsa"})
    assert authenticate(bearer(ps), settings).tenant_id == "tenant-a"


def test_without_kid_the_first_fitting_key_is_used_and_none_fitting_is_401(tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings = _jwks(tmp_path, _public_jwk(RSA_KEY, "rsa"), _public_jwk(EC_KEY, "ec"))
    es = jwt.encode(_claims(), EC_KEY, algorithm="ES256")
    assert authenticate(bearer(es), settings).user_id == "user-1"
    hs = jwt.encode(_claims(), "x" * 40, algorithm="HS256")
    with pytest.raises(Unauthorized, match="unknown signing key"):
        authenticate(bearer(hs), settings)


def test_the_roles_claim_is_part_of_the_principal() -> None:
    principal = authenticate(bearer(token(roles=["Ledger.Write", 7])), SETTINGS)
    assert principal.roles == frozenset({"Ledger.Write"})


# -- the demo secret ----------------------------------------------------------------------------

@pytest.mark.parametrize("secret", sorted(DEMO_JWT_SECRETS))
def test_a_published_demo_secret_is_refused_outside_the_demo(secret: str) -> None:
    with pytest.raises(SettingError, match="demo secret"):
        PipelineSettings.from_environment({"IMPORTS_JWT_SECRET": secret})
    allowed = PipelineSettings.from_environment({"IMPORTS_JWT_SECRET": secret, "IMPORTS_DEMO": "true"})
    assert allowed.jwt_secret == secret


def test_a_short_secret_is_refused() -> None:
    with pytest.raises(SettingError, match="shorter than 32 bytes"):
        PipelineSettings.from_environment({"IMPORTS_JWT_SECRET": "too-short"})
    assert PipelineSettings.from_environment({"IMPORTS_JWT_SECRET": SECRET}).jwt_secret == SECRET
