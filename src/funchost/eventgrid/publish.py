"""HTTP endpoints mounted on the host's port.

* ``POST /eventgrid/topics/<topic>/api/events`` - a custom topic's publishing endpoint, what
  ``https://<topic>.<region>.eventgrid.azure.net/api/events`` is on Azure: the official
  ``EventGridPublisherClient`` publishes to it with ``AzureKeyCredential`` or ``AzureSasCredential``.
  200 with an empty body once the events are durably stored.
* ``/runtime/webhooks/eventgrid?functionName=<name>`` - the Functions Event Grid extension's
  webhook (azure-semantics 6.8), for real subscriptions pointed at this host through a tunnel.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from funchost.eventgrid.auth import AuthError, authorize
from funchost.eventgrid.destinations import invoke_each
from funchost.eventgrid.schema import MAX_BODY_BYTES, PublishError, too_large

if TYPE_CHECKING:
    from funchost.eventgrid.service import EventGridService

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

TOPICS_PREFIX = "/eventgrid"
WEBHOOK_PREFIXES = ("/runtime/webhooks/eventgrid", "/runtime/webhooks/EventGrid")
EVENTGRID_SYSTEM_KEY = "eventgrid_extension"
WEBHOOK_BODY_LIMIT = 100 * 1024 * 1024  # the host's request body limit


def topic_path(topic: str) -> str:
    return f"{TOPICS_PREFIX}/topics/{topic}/api/events"


async def respond(send: Send, status: int, body: bytes = b"", content_type: str = "application/json") -> None:
    headers = [(b"content-length", str(len(body)).encode())]
    if body:
        headers.append((b"content-type", content_type.encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def respond_error(send: Send, status: int, code: str, message: str) -> None:
    body = {"error": {"code": code, "message": message}}
    await respond(send, status, json.dumps(body).encode())


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}


def _query(scope: Scope) -> dict[str, str]:
    return dict(parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True))


class ClientGone(Exception):
    """The client disconnected before its body was read: nothing is processed or answered."""


async def read_limited(receive: Receive, limit: int) -> bytes | None:
    """The body, or None once it passes `limit` bytes (the rest is not buffered)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


class TopicEndpoints:
    def __init__(self, service: EventGridService) -> None:
        self.service = service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        parts = scope["path"][len(TOPICS_PREFIX):].strip("/").split("/")
        if len(parts) != 4 or parts[0].lower() != "topics" or [p.lower() for p in parts[2:]] != ["api", "events"]:
            await respond_error(send, 404, "NotFound", "Use POST /eventgrid/topics/<topic>/api/events.")
            return
        topic = self.service.config.topic(parts[1])
        if topic is None or topic.kind != "custom":
            await respond_error(send, 404, "NotFound", f"There is no custom topic named '{parts[1]}'.")
            return
        if scope["method"] != "POST":
            await respond_error(send, 405, "MethodNotAllowed", "Publish with POST.")
            return
        headers, query = _headers(scope), _query(scope)
        try:
            authorize(headers, query, self.service.keys[topic.name], topic_path(topic.name),
                      self.service.clock.now())
        except AuthError as exc:
            await respond_error(send, 401, "Unauthorized", str(exc))
            return
        try:
            body = await read_limited(receive, MAX_BODY_BYTES)
        except ClientGone:
            return
        if body is None:
            error = too_large("The request body", MAX_BODY_BYTES + 1)
            await respond(send, error.status, json.dumps(error.body()).encode())
            return
        try:
            await self.service.publish_body(topic.name, body, headers.get("content-type"))
        except PublishError as exc:
            await respond(send, exc.status, json.dumps(exc.body()).encode())
            return
        await respond(send, 200)


class FunctionWebhook:
    """The Event Grid extension's HTTP handler, request for request (HttpRequestProcessor)."""

    def __init__(self, service: EventGridService) -> None:
        self.service = service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers, query = _headers(scope), _query(scope)
        runtime = self.service.runtime
        if not self._authorized(headers, query):
            await respond(send, 401)
            return
        name = query.get("functionName") or ""
        function = runtime.functions.get(name)
        if function is None or function.trigger_type != "eventGridTrigger":
            await respond(send, 404, f"cannot find function: '{name}'".encode(), "text/plain; charset=utf-8")
            return
        kind = headers.get("aeg-event-type", "").lower()
        try:
            body = await read_limited(receive, WEBHOOK_BODY_LIMIT)
        except ClientGone:
            return
        if body is None:
            await respond(send, 413)
            return
        # A body the extension cannot read throws there (500 from the host); funchost answers 400
        # with the reason, since the request is at fault (docs/deviations.md).
        if kind == "subscriptionvalidation":
            try:
                code = _validation_code(json.loads(body))
            except (ValueError, KeyError, IndexError, TypeError, RecursionError) as exc:
                await _bad_request(send, f"invalid validation request: {_reason(exc)}")
                return
            await respond(send, 200, json.dumps({"validationResponse": code}).encode())
            return
        if kind == "notification":
            try:
                payload = json.loads(body)
            except (ValueError, RecursionError) as exc:
                await _bad_request(send, f"invalid JSON: {_reason(exc)}")
                return
            events = payload if isinstance(payload, list) else [payload] if isinstance(payload, dict) else None
            if events is None:
                await _bad_request(send, "The request content should be parseable into a JSON object or array.")
                return
            if not all(isinstance(event, dict) for event in events):
                await _bad_request(send, "Each event must be a JSON object.")
                return
            ok, message = await invoke_each(runtime.invoker, function, events, runtime.clock.now())
            if ok:
                await respond(send, 202)
            else:
                await respond(send, 500, message.encode(), "text/plain; charset=utf-8")
            return
        await respond(send, 202 if kind == "unsubscribe" else 400)

    def _authorized(self, headers: Mapping[str, str], query: Mapping[str, str]) -> bool:
        keys = self.service.runtime.services.get("http.keys")
        if keys is None:  # no HTTP key store (in-process tests): nothing to check against
            return True
        keys.system_key(EVENTGRID_SYSTEM_KEY)  # created on first use, as the host does
        presented = headers.get("x-functions-key") or query.get("code")
        if not presented:
            return False
        match = keys.resolve(presented)
        level = getattr(match.level, "name", "")
        return level == "ADMIN" or (level == "SYSTEM" and match.key_name == EVENTGRID_SYSTEM_KEY)


async def _bad_request(send: Send, message: str) -> None:
    await respond(send, 400, message.encode("utf-8", "backslashreplace"), "text/plain; charset=utf-8")


def _reason(exc: BaseException) -> str:
    return "nested too deeply" if isinstance(exc, RecursionError) else f"{type(exc).__name__}: {exc}"


def _validation_code(payload: Any) -> str:
    if isinstance(payload, list):
        return str(payload[0]["data"]["validationCode"])
    if isinstance(payload, dict):
        data = payload["data"]
        if isinstance(data, str):  # double-encoded in the CloudEvent validation event
            data = json.loads(data)
        return str(data["validationCode"])
    raise TypeError("The request content should be parseable into a JSON object or array.")


def mount(service: EventGridService, mounts: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    added: list[tuple[str, Any]] = [(TOPICS_PREFIX, TopicEndpoints(service))]
    webhook = FunctionWebhook(service)
    added += [(prefix, webhook) for prefix in WEBHOOK_PREFIXES]
    mounts.extend(added)
    return added

