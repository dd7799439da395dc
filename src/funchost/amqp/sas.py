"""Shared access signatures as the SDKs make them, checked against the namespace's keys.

`SharedAccessSignature sr=<url-encoded resource>&sig=<base64 HMAC-SHA256>&se=<expiry>&skn=<key name>`,
signed over `<sr as sent>\\n<se>` with the key's text as the HMAC key (azure-servicebus
`_pyamqp/utils.generate_sas_token`, core-amqp `createToken`). The check signs the `sr` exactly
as it appears in the token, since Python (`quote_plus`) and JavaScript (`encodeURIComponent`)
encode the resource differently.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote, unquote_plus

from funchost.amqp.values import address_path

# The emulators' well-known key (their connection string's SharedAccessKey).
EMULATOR_KEYS: Mapping[str, str] = {"RootManageSharedAccessKey": "SAS_KEY_VALUE"}
PREFIX = "SharedAccessSignature "


class TokenRejected(Exception):
    def __init__(self, status: int, description: str) -> None:
        super().__init__(description)
        self.status = status
        self.description = description


@dataclass(frozen=True)
class Grant:
    path: str  # the audience's path, lower case ("queue.1", "eh1/consumergroups/$default")
    expires: int


def check_token(token: str, keys: Mapping[str, str], now: float) -> Grant:
    if not token.startswith(PREFIX):
        raise TokenRejected(401, "only shared access signatures are accepted here")
    parts: dict[str, str] = {}
    for item in token[len(PREFIX):].split("&"):
        name, _, value = item.partition("=")
        parts[name.strip().lower()] = value
    missing = [n for n in ("sr", "sig", "se", "skn") if n not in parts]
    if missing:
        raise TokenRejected(401, f"the shared access signature has no {', '.join(missing)}")
    key = keys.get(unquote(parts["skn"]))
    if key is None:
        raise TokenRejected(401, f"unknown shared access key name '{unquote(parts['skn'])}'")
    expected = base64.b64encode(hmac.new(key.encode("utf-8"), f"{parts['sr']}\n{parts['se']}".encode(),
                                         hashlib.sha256).digest())
    if not hmac.compare_digest(expected, unquote(parts["sig"]).encode()):
        raise TokenRejected(401, "InvalidSignature: the token's signature does not match the key")
    try:
        expires = int(parts["se"])
    except ValueError:
        raise TokenRejected(401, "the token's expiry is not a number") from None
    if expires < now:
        raise TokenRejected(401, "ExpiredToken: the token has expired")
    return Grant(address_path(unquote_plus(parts["sr"])).lower(), expires)


def covers(granted: set[str], path: str) -> bool:
    """An audience authorises its path and everything below it (case-insensitive)."""
    target = path.lower().strip("/")
    return any(target == g or target.startswith(g + "/") or g == "" for g in granted)
