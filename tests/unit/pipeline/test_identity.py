"""The verified-token cache of the intake (pipeline.md 1.1): it saves the signature check for a
token seen before, and never accepts what a fresh verification would refuse."""

from __future__ import annotations

import time

import jwt
import pytest
from importjobs.identity import Principal, Unauthorized, VerifiedTokens, authenticate
from importjobs.settings import PipelineSettings
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
