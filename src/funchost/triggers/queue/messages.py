"""Message text <-> body bytes, and the invocation a queue message becomes (azure-semantics 1.6, 1.8, 2.4)."""

from __future__ import annotations

import base64
import binascii
import json
from datetime import UTC, datetime
from typing import Any

from azure.functions.meta import Datum

from funchost.errors import InvalidResourceName
from funchost.indexing.spec import FunctionSpec
from funchost.invocation.contracts import InvocationRequest
from funchost.invocation.metadata import LazyMetadata
from funchost.storage.queue_rules import validate_queue_name
from funchost.storage.queues import QueueMessage

POISON_SUFFIX = "-poison"
# DateTimeOffset.MaxValue as Json.NET writes it.
MAX_DATETIME_TEXT = "9999-12-31T23:59:59.9999999+00:00"


class UndecodableMessage(ValueError):
    """The message text is not valid Base64 while messageEncoding is base64."""


def encode_body(body: bytes, encoding: str) -> str:
    """Body bytes -> message text, as the queue client does on send."""
    if encoding == "base64":
        return base64.b64encode(body).decode("ascii")
    return body.decode("utf-8", errors="replace")


def decode_text(text: str, encoding: str) -> bytes:
    """Message text -> body bytes, as the queue client does on receive (.NET tolerates whitespace)."""
    if encoding != "base64":
        return text.encode("utf-8")
    compact = "".join(text.split())
    try:
        return base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise UndecodableMessage(str(exc)) from None


def poison_queue_name(queue: str) -> str | None:
    """`<queue>-poison`, or None when the queue is a poison queue or the name would be invalid."""
    if queue.endswith(POISON_SUFFIX):
        return None
    candidate = queue + POISON_SUFFIX
    try:
        validate_queue_name(candidate)
    except InvalidResourceName:
        return None
    return candidate


def _when(value: datetime | None, missing: str) -> str:
    if value is None:
        return missing
    return value.astimezone(UTC).isoformat()


def _json_datum(value: Any) -> Datum:
    return Datum(json.dumps(value), "json")


_JSON, _TIME, _STRING = "json", "time", "string"


def _metadata_datum(entry: tuple[str, Any]) -> Datum:
    kind, value = entry
    if kind is _STRING:
        return Datum(value, "string")
    if kind is _TIME:
        return _json_datum(_when(value, MAX_DATETIME_TEXT))
    return _json_datum(value)


def build_request(function: FunctionSpec, message: QueueMessage, body: bytes, queue: str,
                  now: datetime) -> InvocationRequest:
    """The trigger value, metadata and binding data the host gives the worker for one message."""
    try:
        text: str | None = body.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    data_type = (function.trigger.data_type or "").lower()
    if data_type == "binary":
        trigger = Datum(body, "bytes")
    else:
        trigger = Datum(text if text is not None else body.decode("utf-8", errors="replace"), "string")
    inserted = message.insertion_time or now
    # Built into Datums only if a converter reads them (a `str` or `bytes` parameter does not).
    raw: dict[str, tuple[str, Any]] = {
        "DequeueCount": (_JSON, message.dequeue_count),
        "ExpirationTime": (_TIME, message.expiration_time),
        "Id": (_STRING, message.id),
        "InsertionTime": (_TIME, inserted),
        "NextVisibleTime": (_TIME, message.next_visible_time),
        "PopReceipt": (_STRING, message.pop_receipt or ""),
    }
    binding_data: dict[str, Any] = {}
    if text is not None:
        parsed = None
        if text[:1] == "{" or text.lstrip()[:1] == "{":  # only a JSON object contributes properties
            try:
                parsed = json.loads(text)
            except ValueError:
                pass
        if isinstance(parsed, dict):
            # The JSON body's top-level properties are binding data too (e.g. {name} in a blob path).
            binding_data.update(parsed)
        raw["QueueTrigger"] = (_STRING, text)
        binding_data["QueueTrigger"] = text
    binding_data.update({
        "DequeueCount": message.dequeue_count,
        "ExpirationTime": message.expiration_time,
        "Id": message.id,
        "InsertionTime": inserted,
        "NextVisibleTime": message.next_visible_time,
        "PopReceipt": message.pop_receipt,
    })
    return InvocationRequest(
        function=function,
        trigger_value=trigger,
        trigger_metadata=LazyMetadata(raw, _metadata_datum),
        binding_data=binding_data,
        reason=f"New queue message detected on '{queue}'.",
        details={"MessageId": message.id, "DequeueCount": message.dequeue_count, "InsertedOn": inserted},
    )
