"""Topic access keys and SAS tokens (azure-semantics 6.4).

A request is authorized by ``aeg-sas-key`` (header or query) equal to one of the topic's two
keys, or by a SAS token in ``aeg-sas-token`` or ``Authorization: SharedAccessSignature <token>``:
``r=<url-encoded resource>&e=<url-encoded expiry>&s=<url-encoded base64 HMAC-SHA256>``, signed
with the base64-decoded key over the text ``r=...&e=...`` exactly as received. The resource must
name this topic's endpoint (path compared case-insensitively; the host part is not compared, so
``localhost`` and ``127.0.0.1`` or a tunnel's name all work). Keys are created on first start
and kept under the data folder; comparisons are constant-time.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import quote, unquote, urlparse

from funchost.storage.secrets import SecretStore

KEY_HEADER = "aeg-sas-key"
TOKEN_HEADER = "aeg-sas-token"
SAS_PREFIX = "sharedaccesssignature "
KEYS_SECRET = "eventgrid/keys.json"


class AuthError(Exception):
    """401 Unauthorized with a message that never echoes the key or token."""


@dataclass(frozen=True)
class TopicKeys:
    key1: str
    key2: str

    def all(self) -> tuple[str, str]:
        return (self.key1, self.key2)


def new_key() -> str:
    return base64.b64encode(secrets.token_bytes(32)).decode()


class KeyRing:
    """The keys of every custom topic, in ``<data>/eventgrid/keys.json`` (or the server's secrets
    table with ``--storage postgres``), created on first use. Hosts adding topics at once each
    add theirs to what is stored, so every host ends up with the keys all the others use."""

    def __init__(self, secrets: SecretStore) -> None:
        self.secrets = secrets

    def load(self) -> dict[str, TopicKeys]:
        return _parse(self.secrets.read(KEYS_SECRET))

    def ensure(self, topics: list[str]) -> dict[str, TopicKeys]:
        keys = self.load()
        if all(t in keys for t in topics):
            return keys

        def add(current: str | None) -> str:
            stored = _parse(current)
            for topic in topics:
                stored.setdefault(topic, TopicKeys(new_key(), new_key()))
            return json.dumps({"topics": {n: {"key1": k.key1, "key2": k.key2} for n, k in stored.items()}},
                              indent=2)

        return _parse(self.secrets.update(KEYS_SECRET, add))


def _parse(text: str | None) -> dict[str, TopicKeys]:
    if text is None:
        return {}
    raw = json.loads(text)
    return {name: TopicKeys(v["key1"], v["key2"]) for name, v in raw.get("topics", {}).items()}


# --- SAS tokens ----------------------------------------------------------------------------------


def sign(unsigned: str, key: str) -> str:
    digest = hmac.new(base64.b64decode(key), unsigned.encode("utf-8"), hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def generate_sas(resource: str, key: str, expiry: datetime) -> str:
    """A token as the SDKs build it (for the CLI and tests)."""
    unsigned = f"r={quote(resource, safe='')}&e={quote(str(expiry), safe='')}"
    return f"{unsigned}&s={quote(sign(unsigned, key), safe='')}"


def parse_expiry(text: str) -> datetime:
    """Python SDK: ``str(datetime)``; .NET SDK: ``DateTimeOffset.ToString()`` in en-US."""
    text = text.strip()
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        for fmt in ("%m/%d/%Y %I:%M:%S %p %z", "%m/%d/%Y %I:%M:%S %p", "%m/%d/%Y %H:%M:%S"):
            try:
                value = datetime.strptime(text, fmt)
                break
            except ValueError:
                continue
        else:
            raise AuthError("The SAS token's expiry 'e' is not a date-time.") from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value


def verify_token(token: str, keys: TopicKeys, endpoint_path: str, now: datetime) -> None:
    parts: dict[str, str] = {}
    for piece in token.strip().split("&"):
        name, sep, value = piece.partition("=")
        if sep:
            parts[name.strip()] = value
    if not {"r", "e", "s"} <= parts.keys():
        raise AuthError("The SAS token must have the form r=<resource>&e=<expiry>&s=<signature>.")
    unsigned = f"r={parts['r']}&e={parts['e']}"
    signature = unquote(parts["s"]).encode("utf-8")  # bytes: any text compares, in constant time
    if not any(hmac.compare_digest(sign(unsigned, key).encode(), signature) for key in keys.all()):
        raise AuthError("The SAS token's signature does not match any key of this topic.")
    if parse_expiry(unquote(parts["e"])) <= now:
        raise AuthError("The SAS token has expired.")
    try:
        resource_path = urlparse(unquote(parts["r"])).path.rstrip("/").lower()
    except ValueError:  # e.g. an unbalanced '[' in the host part
        raise AuthError("The SAS token's resource 'r' is not a URL.") from None
    if resource_path != endpoint_path.rstrip("/").lower():
        raise AuthError("The SAS token was issued for another resource than this topic's endpoint.")


def authorize(headers: Mapping[str, str], query: Mapping[str, str], keys: TopicKeys, endpoint_path: str,
              now: datetime) -> None:
    """Raise AuthError unless the request carries a valid key or SAS token for the topic.

    `headers` must be looked up case-insensitively (lower-case names).
    """
    key = headers.get(KEY_HEADER) or query.get(KEY_HEADER)
    if key is not None:
        if not any(hmac.compare_digest(key.encode(), k.encode()) for k in keys.all()):
            raise AuthError("The request authorization key is not authorized for this topic.")
        return
    token = headers.get(TOKEN_HEADER)
    if token is None:
        authorization = headers.get("authorization", "")
        if authorization.lower().startswith(SAS_PREFIX):
            token = authorization[len(SAS_PREFIX):]
    if token is None:
        raise AuthError("The request does not carry an 'aeg-sas-key' or 'aeg-sas-token' "
                        "(or 'Authorization: SharedAccessSignature') credential.")
    verify_token(token, keys, endpoint_path, now)
