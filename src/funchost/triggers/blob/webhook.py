"""The Event Grid source: ``/runtime/webhooks/blobs?functionName=Host.Functions.<name>``.

The blobs extension's webhook (blob-trigger spec 7): Event Grid's ``aeg-event-type`` dispatch
(SubscriptionValidation answered with the validation code, Notification, Unsubscribe, else 400),
the host's ``blobs_extension`` system key or the master key. Each event of a notification becomes a
trigger message on the internal queue, in order, then 202: no receipts, no ETag check later, the
same retries and poison queue as the polling source. ``functionName`` is not checked here: a
message for an unknown function is dropped by stage B, as on Azure. The embedded Event Grid's
storage topic delivers to blob functions through `deliver` (docs/eventgrid.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from funchost.indexing.spec import FunctionSpec
from funchost.runtime.services import HttpMount
from funchost.storage.queue_send import send_message
from funchost.triggers.blob.messages import BlobTriggerMessage, function_id
from funchost.triggers.blob.urls import split_blob_url
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
from funchost.triggers.http.keys import authorized, presented_key
from funchost.triggers.queue.messages import encode_body

if TYPE_CHECKING:
    from funchost.triggers.blob.hub import BlobTriggerHub

WEBHOOK_PREFIXES = ("/runtime/webhooks/blobs", "/runtime/webhooks/Blobs")
BLOBS_SYSTEM_KEY = "blobs_extension"
BODY_LIMIT = 100 * 1024 * 1024
_SHORT_BLOB_TYPES = {"Block": "BlockBlob", "Page": "PageBlob", "Append": "AppendBlob"}
_TEXT = [(b"content-type", b"text/plain; charset=utf-8")]


class InvalidBlobEvent(ValueError):
    pass


def event_message(event: Mapping[str, Any], function: str) -> BlobTriggerMessage:
    """One BlobCreated event -> the trigger message (no event-type filter, as the extension)."""
    data = event.get("data")
    if isinstance(data, str):
        data = json.loads(data)
    if not isinstance(data, Mapping):
        raise InvalidBlobEvent("the event has no data object")
    try:
        container, name = split_blob_url(str(data.get("url") or ""))
    except ValueError as exc:
        raise InvalidBlobEvent(str(exc)) from None
    blob_type = str(data.get("blobType") or "")
    short = blob_type[:-4] if blob_type.endswith("Blob") else blob_type
    if short not in _SHORT_BLOB_TYPES:  # Enum.Parse, case-sensitive
        raise InvalidBlobEvent(f"Requested value '{short}' was not found.")
    etag = data.get("eTag")
    return BlobTriggerMessage(function, _SHORT_BLOB_TYPES[short], container, name,
                              f'"{etag}"' if isinstance(etag, str) else None)


async def enqueue_events(hub: BlobTriggerHub, function: str, events: list[Any]) -> None:
    """Every event in order onto the internal queue; the first bad one stops the rest (500)."""
    for event in events:
        if not isinstance(event, Mapping):
            raise InvalidBlobEvent("each event must be a JSON object")
        text = event_message(event, function).to_json()
        await send_message(hub.host_queues, hub.host_queue, encode_body(text.encode("utf-8"),
                           hub.options.message_encoding), faults=hub.runtime.faults)


async def deliver(hub: BlobTriggerHub, function: FunctionSpec, events: list[dict[str, Any]]) -> tuple[bool, str]:
    """The embedded Event Grid's delivery to a blob function (what a webhook subscription does)."""
    try:
        await enqueue_events(hub, function_id(function.name), events)
    except Exception as exc:  # a failed delivery, retried by Event Grid
        return False, f"{type(exc).__name__}: {exc}"
    return True, ""


class BlobsWebhook:
    def __init__(self, hub: BlobTriggerHub) -> None:
        self.hub = hub

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True))
        if not self._authorized(headers, query):
            await respond(send, 401)
            return
        try:
            body = await read_body(scope, receive, BODY_LIMIT)
        except BodyTooLarge:
            await respond(send, 413)
            return
        except ClientGone:
            return
        kind = headers.get("aeg-event-type", "").lower()
        if kind == "subscriptionvalidation":
            try:
                payload = json.loads(body)
                first = payload[0] if isinstance(payload, list) else payload
                code = str(first["data"]["validationCode"])
            except (ValueError, KeyError, IndexError, TypeError, RecursionError) as exc:
                await respond(send, 400, f"invalid validation request: {type(exc).__name__}".encode(), _TEXT)
                return
            await respond_json(send, 200, {"validationResponse": code})
        elif kind == "notification":
            await self._notification(send, body, query.get("functionName") or "")
        else:
            await respond(send, 202 if kind == "unsubscribe" else 400)

    async def _notification(self, send: Send, body: bytes, function: str) -> None:
        try:
            payload = json.loads(body)
        except (ValueError, RecursionError) as exc:
            await respond(send, 400, f"invalid JSON: {type(exc).__name__}".encode(), _TEXT)
            return
        events = payload if isinstance(payload, list) else [payload]
        try:
            await enqueue_events(self.hub, function, events)
        except Exception as exc:  # earlier events stay queued; Event Grid redelivers the batch
            await respond(send, 500, f"{type(exc).__name__}: {exc}".encode("utf-8", "replace"), _TEXT)
            return
        await respond(send, 202)

    def _authorized(self, headers: Mapping[str, str], query: Mapping[str, str]) -> bool:
        keys = self.hub.runtime.services.keys
        if keys is None:  # no HTTP key store (in-process tests): nothing to check against
            return True
        keys.system_key(BLOBS_SYSTEM_KEY)  # created on first use, as the host does
        presented = presented_key(headers, query)
        if not presented:
            return False
        return authorized("system", keys.resolve(presented), BLOBS_SYSTEM_KEY)


def mount_webhook(hub: BlobTriggerHub) -> list[HttpMount]:
    webhook = BlobsWebhook(hub)
    return [hub.runtime.services.mount(prefix, webhook) for prefix in WEBHOOK_PREFIXES]
