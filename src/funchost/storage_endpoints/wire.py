"""The HTTP request as the storage handlers see it, and the responses they send.

A request keeps the path exactly as sent (percent-encoded), because Shared Key signatures are
computed over it; the handlers work on the decoded account, resource path and query.
"""

from __future__ import annotations

import email.utils
import functools
import os
import random
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote

from funchost.storage.tables import parse_datetime

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

SERVICE_VERSION = "2026-02-06"  # answered in x-ms-version; every version the SDKs send is accepted
SERVER = b"funchost-storage"
NO_BODY = frozenset({204, 304})
META_NAMES_KEY = "funchost.meta_names"  # set by server.py's protocol: metadata names in their case


_random = random.Random(os.urandom(32))
os.register_at_fork(after_in_child=lambda: _random.seed(os.urandom(32)))


def new_request_id() -> str:
    """A random GUID, without a system call per request (uuid4 reads os.urandom each time)."""
    return str(uuid.UUID(int=_random.getrandbits(128), version=4))


@dataclass
class StorageRequest:
    method: str
    raw_path: str  # as sent, still percent-encoded: what signatures cover
    account: str
    resource: str  # decoded path after the account, without the leading '/' ('' = the service)
    query: dict[str, str]  # names lower-cased, values decoded
    raw_query: list[tuple[str, str]]  # (name as sent, decoded value), for signatures
    headers: dict[str, str]  # names lower-cased; repeated headers joined with ','
    scheme: str
    client: str
    host: str
    request_id: str = field(default_factory=lambda: new_request_id())
    body: bytes = b""
    stream: AsyncIterator[bytes] | None = None  # instead of `body`: a large blob body, as it arrives
    meta_names: tuple[str, ...] = ()  # x-ms-meta-* names as sent (ASGI lower-cases header names)

    def header(self, name: str, default: str | None = None) -> str | None:
        return self.headers.get(name, default)

    @property
    def version(self) -> str:
        return self.headers.get("x-ms-version", SERVICE_VERSION)


def parse_query(raw: str) -> list[tuple[str, str]]:
    """`a=1&b=%2F` -> [(a, 1), (b, /)]: plain percent-decoding, '+' kept (the SDKs encode spaces as %20)."""
    items = []
    for piece in raw.split("&"):
        if not piece:
            continue
        name, _, value = piece.partition("=")
        items.append((unquote(name), unquote(value)))
    return items


def build_request(scope: Scope, *, host_style_accounts: bool = True) -> StorageRequest:
    raw_path = scope.get("raw_path")
    path = raw_path.decode("latin-1") if raw_path else scope.get("path", "/")
    if "?" in path:  # some servers keep the query in raw_path
        path = path.split("?", 1)[0]
    headers: dict[str, str] = {}
    for key, value in scope.get("headers", ()):
        name = key.decode("latin-1").lower()
        text = value.decode("latin-1")
        headers[name] = f"{headers[name]},{text}" if name in headers else text
    raw_query = parse_query(scope.get("query_string", b"").decode("latin-1"))
    query = {name.lower(): value for name, value in raw_query}
    host = headers.get("host", "")
    account, resource = _split_account(path, host if host_style_accounts else "")
    client = scope.get("client") or ("", 0)
    return StorageRequest(scope["method"].upper(), path, account, resource, query, raw_query, headers,
                          scope.get("scheme", "http"), str(client[0]), host,
                          meta_names=tuple(scope.get(META_NAMES_KEY, ())))


def _split_account(path: str, host: str) -> tuple[str, str]:
    """Path style (`/account/container/blob`) unless the host names the account (`account.blob.x`)."""
    hostname = host.rsplit(":", 1)[0] if not host.startswith("[") else ""
    decoded = unquote(path)
    if hostname and "." in hostname and not hostname.replace(".", "").isdigit():
        return hostname.split(".", 1)[0], decoded.lstrip("/")
    account, _, rest = decoded.lstrip("/").partition("/")
    return account, rest


async def read_body(receive: Receive, limit: int) -> bytes | None:
    """The whole body, or None once it passes `limit` bytes (the rest is drained, not kept)."""
    chunks: list[bytes] = []
    size = 0
    too_large = False
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            too_large = True
            chunks.clear()
        elif chunk:
            chunks.append(chunk)
        if not message.get("more_body", False):
            break
    if too_large:
        return None
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


class CaseKeptName(bytes):
    """A header name the HTTP server writes as given: metadata names keep their case on Azure,
    and uvicorn lower-cases names with `.lower()`, which this type answers with itself."""

    def lower(self) -> bytes:
        return self


@dataclass
class Response:
    status: int
    body: bytes = b""
    stream: AsyncIterator[bytes] | None = None  # instead of `body`: a large blob body, as it arrives
    headers: list[tuple[str, str]] = field(default_factory=list)
    content_type: str | None = None

    def add(self, name: str, value: object) -> Response:
        if value is not None:
            self.headers.append((name, str(value)))
        return self


async def send_response(send: Send, request: StorageRequest | None, response: Response, *,
                        head: bool = False) -> None:
    headers = [(b"server", SERVER), (b"date", http_date(datetime.now(UTC)).encode())]
    if request is not None:
        headers.append((b"x-ms-request-id", request.request_id.encode()))
        headers.append((b"x-ms-version", SERVICE_VERSION.encode()))
        client_id = request.headers.get("x-ms-client-request-id")
        if client_id is not None:
            headers.append((b"x-ms-client-request-id", client_id.encode("latin-1", "replace")))
    for name, value in response.headers:
        raw = name.encode("latin-1")
        if name[:10].lower() == "x-ms-meta-":
            raw = CaseKeptName(raw)
        headers.append((raw, value.encode("latin-1", "replace")))
    body = response.body
    if response.content_type and response.status not in NO_BODY:
        headers.append((b"content-type", response.content_type.encode()))
    if response.status in NO_BODY:
        body = b""
    elif not any(name.lower() == "content-length" for name, _ in response.headers):
        headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": response.status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if head else body})


# -- time formats ---------------------------------------------------------------------------------


def http_date(value: datetime) -> str:
    """RFC 1123, as every Last-Modified / x-ms-* time header (whole seconds)."""
    return _http_date(int(value.timestamp()))


@functools.lru_cache(maxsize=4096)
def _http_date(epoch_seconds: int) -> str:
    # A response carries up to four of these, mostly of the current second: format each once.
    return email.utils.formatdate(epoch_seconds, usegmt=True)


def parse_http_date(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if parsed is None:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def iso7(value: datetime) -> str:
    """ISO 8601 with 7 fractional digits (`2024-01-01T10:00:00.1234567Z`)."""
    value = value.astimezone(UTC)
    return f"{value:%Y-%m-%dT%H:%M:%S}.{value.microsecond:06d}0Z"


def parse_iso(value: str) -> datetime | None:
    """ISO 8601 UTC with or without fraction (SAS st/se, table DateTime)."""
    return parse_datetime(value)
