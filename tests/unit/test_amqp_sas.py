"""Shared access signatures as the SDKs build them, checked against the namespace's keys."""

from __future__ import annotations

import base64
import hashlib
import hmac
from urllib.parse import quote, quote_plus

import pytest

from funchost.amqp.sas import EMULATOR_KEYS, TokenRejected, check_token, covers

NOW = 1_800_000_000


def python_token(audience: str, key: str = "SAS_KEY_VALUE", expiry: int = NOW + 3600,
                 name: str = "RootManageSharedAccessKey") -> str:
    """azure-servicebus `_pyamqp/utils.generate_sas_token` (quote_plus of the audience)."""
    encoded = quote_plus(audience)
    signature = base64.b64encode(hmac.new(key.encode(), f"{encoded}\n{expiry}".encode(), hashlib.sha256).digest())
    return f"SharedAccessSignature sr={encoded}&sig={quote(signature)}&se={expiry}&skn={name}"


def javascript_token(audience: str, key: str = "SAS_KEY_VALUE", expiry: int = NOW + 3600) -> str:
    """core-amqp `createToken` (encodeURIComponent of the audience)."""
    encoded = quote(audience, safe="~()*!.'")
    signature = base64.b64encode(hmac.new(key.encode(), f"{encoded}\n{expiry}".encode(), hashlib.sha256).digest())
    return (f"SharedAccessSignature sr={encoded}&sig={quote(signature, safe='~()*!.')}&se={expiry}"
            "&skn=RootManageSharedAccessKey")


@pytest.mark.parametrize("make", [python_token, javascript_token])
def test_a_token_signed_with_the_emulator_key_grants_its_path(make) -> None:  # type: ignore[no-untyped-def]
    grant = check_token(make("sb://localhost:5673/Orders"), EMULATOR_KEYS, NOW)
    assert grant.path == "orders"


def test_a_wrong_key_an_unknown_name_and_an_expired_token_are_refused() -> None:
    for token in (python_token("sb://localhost/q", key="other"), python_token("sb://localhost/q", name="nobody"),
                  python_token("sb://localhost/q", expiry=NOW - 1), "Bearer abc", "SharedAccessSignature sr=x"):
        with pytest.raises(TokenRejected) as raised:
            check_token(token, EMULATOR_KEYS, NOW)
        assert raised.value.status == 401


def test_a_tampered_resource_is_refused() -> None:
    token = python_token("sb://localhost/q1").replace("q1", "q2")
    with pytest.raises(TokenRejected):
        check_token(token, EMULATOR_KEYS, NOW)


def test_an_audience_covers_its_path_and_below_case_insensitively() -> None:
    granted = {"eh1/consumergroups/$default"}
    assert covers(granted, "eh1/ConsumerGroups/$Default/Partitions/0")
    assert not covers(granted, "eh1/ConsumerGroups/other/Partitions/0")
    assert not covers({"q"}, "q2")
    assert covers({"q"}, "q/$management")
