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
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from funchost.eventgrid.auth import AuthError, authorize
from funchost.eventgrid.destinations import invoke_each
from funchost.eventgrid.schema import MAX_BODY_BYTES, PublishError, too_large
from funchost.runtime.services import HostServices, HttpMount
from funchost.triggers.http.asgi import (
    BodyTooLarge,
    ClientGone,
    Receive,
    Scope,
    Send,
    read_body,
    respond,
    respond_json,
)

if TYPE_CHECKING:
    from funchost.eventgrid.service import EventGridService

TOPICS_PREFIX = "/eventgrid"
WEBHOOK_PREFIXES = ("/runtime/webhooks/eventgrid", "/runtime/webhooks/EventGrid")
EVENTGRID_SYSTEM_KEY = "eventgrid_extension"
WEBHOOK_BODY_LIMIT = 100 * 1024 * 1024  # the host's request body limit
_TEXT = [(b"content-type", b"text/plain; charset=utf-8")]


def topic_path(topic: str) -> str:
    return f"{TOPICS_PREFIX}/topics/{topic}/api/events"


async def respond_error(send: Send, status: int, code: str, message: str) -> None:
    await respond_json(send, status, {"error": {"code": code, "message": message}})


async def respond_text(send: Send, status: int, text: str) -> None:
    await respond(send, status, text.encode(), _TEXT)


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}


def _query(scope: Scope) -> dict[str, str]:
    return dict(parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True))


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
            body = await read_body(scope, receive, MAX_BODY_BYTES)
        except BodyTooLarge:
            error = too_large("The request body", MAX_BODY_BYTES + 1)
            await respond_json(send, error.status, error.body())
            return
        except ClientGone:
            return
        try:
            await self.service.publish_body(topic.name, body, headers.get("content-type"))
        except PublishError as exc:
            await respond_json(send, exc.status, exc.body())
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
            await respond_text(send, 404, f"cannot find function: '{name}'")
            return
        kind = headers.get("aeg-event-type", "").lower()
        try:
            body = await read_body(scope, receive, WEBHOOK_BODY_LIMIT)
        except BodyTooLarge:
            await respond(send, 413)
            return
        except ClientGone:
            return
        # A body the extension cannot read throws there (500 from the host); funchost answers 400
        # with the reason, since the request is at fault (docs/deviations.md).
        if kind == "subscriptionvalidation":
            try:
                code = _validation_code(json.loads(body))
            except (ValueError, KeyError, IndexError, TypeError, RecursionError) as exc:
                await _bad_request(send, f"invalid validation request: {_reason(exc)}")
                return
            await respond_json(send, 200, {"validationResponse": code})
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
                await respond_text(send, 500, message)
            return
        await respond(send, 202 if kind == "unsubscribe" else 400)

    def _authorized(self, headers: Mapping[str, str], query: Mapping[str, str]) -> bool:
        keys = self.service.runtime.services.keys
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
    await respond(send, 400, message.encode("utf-8", "backslashreplace"), _TEXT)


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


def mount(service: EventGridService, services: HostServices) -> list[HttpMount]:
    """The topic endpoints and the extension's webhook on the host's port."""
    webhook = FunctionWebhook(service)
    return [services.mount(TOPICS_PREFIX, TopicEndpoints(service)),
            *(services.mount(prefix, webhook) for prefix in WEBHOOK_PREFIXES)]

