"""Small raw-ASGI helpers shared by the function router and the admin API."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

DEFAULT_BODY_LIMIT = 104_857_600  # 100 MB, FUNCTIONS_REQUEST_BODY_SIZE_LIMIT overrides
# Marks an `http.response.start` whose whole body is sent next, at once: the server may write
# both in one system call (whole_response.py); other servers ignore the key.
BODY_FOLLOWS = "funchost.body_follows"
NO_BODY_STATUSES = frozenset({204, 205, 304})  # responses that carry no content (Kestrel refuses a body)


class BodyTooLarge(Exception):
    """The request body exceeds the configured limit (answered with 413)."""


class ClientGone(Exception):
    """The client disconnected before the body was read."""


def header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


def content_length(scope: Scope) -> int | None:
    raw = header(scope, b"content-length")
    if raw is None:
        return None
    try:
        return int(raw.strip())
    except ValueError:
        return None


async def read_body(scope: Scope, receive: Receive, limit: int) -> bytes:
    """The whole request body; `BodyTooLarge` as soon as it is known to exceed `limit`."""
    declared = content_length(scope)
    if declared is not None and declared > limit:
        raise BodyTooLarge()
    # uvicorn's cycle (whole_response.py) hands over a body that has all arrived without a message.
    whole_body = getattr(getattr(receive, "__self__", None), "whole_body", None)
    if whole_body is not None:
        body: bytes | None = whole_body()
        if body is not None:
            if len(body) > limit:
                raise BodyTooLarge()
            return body
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone()
        chunk = message.get("body", b"")
        if chunk:
            size += len(chunk)
            if size > limit:
                raise BodyTooLarge()
            chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


async def respond(send: Send, status: int, body: bytes = b"",
                  headers: list[tuple[bytes, bytes]] | None = None) -> None:
    all_headers = list(headers or ())
    if status in NO_BODY_STATUSES:
        body = b""  # the server would write it after the headers and corrupt the connection
    else:
        all_headers.append((b"content-length", str(len(body)).encode()))
    # uvicorn's cycle (whole_response.py) writes it at once; any other server gets the messages.
    send_whole = getattr(getattr(send, "__self__", None), "send_whole", None)
    if send_whole is not None and send_whole(status, all_headers, body):
        return
    await send({"type": "http.response.start", "status": status, "headers": all_headers, BODY_FOLLOWS: True})
    await send({"type": "http.response.body", "body": body})


async def respond_json(send: Send, status: int, payload: Any) -> None:
    body = json.dumps(payload).encode("utf-8")
    await respond(send, status, body, [(b"content-type", b"application/json; charset=utf-8")])
