"""Message text <-> body bytes, and the invocation a queue message becomes (azure-semantics 1.6, 1.8, 2.4)."""

from __future__ import annotations

import base64
import binascii
import json
from datetime import UTC, datetime
from functools import partial
from typing import Any

from azure.functions.meta import Datum
from azure.functions.queue import QueueMessage as LibraryQueueMessage
from azure.functions.queue import QueueMessageInConverter

from funchost.errors import InvalidResourceName
from funchost.indexing.spec import FunctionSpec
from funchost.invocation.contracts import InvocationRequest
from funchost.invocation.metadata import LazyMetadata
from funchost.invocation.native import LazyMapping, NativeDatum
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
    try:  # the common case first: no whitespace to take out (`b64decode(text, validate=True)`'s own step)
        return binascii.a2b_base64(text, strict_mode=True)
    except (binascii.Error, ValueError):
        pass
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


class QueueMessageDatum(NativeDatum):
    """The trigger value of one message; `decode()` is `QueueMessageInConverter.decode` of it
    with this message's trigger metadata, built without the metadata's JSON round trips."""

    converter = QueueMessageInConverter

    def __init__(self, value: str | bytes, message: QueueMessage, inserted: datetime) -> None:
        # LazyDatum's state once built: the value is at hand, so no builder (and no call) per message.
        self.type = "bytes" if isinstance(value, bytes) else "string"
        self._value = self.body = value
        self.message = message
        self.inserted = inserted

    def decode(self) -> LibraryQueueMessage:
        message = self.message
        return LibraryQueueMessage(  # type: ignore[no-untyped-call]
            id=message.id, body=self.body, dequeue_count=message.dequeue_count,
            expiration_time=_as_utc(message.expiration_time), insertion_time=_as_utc(self.inserted),
            time_next_visible=_as_utc(message.next_visible_time), pop_receipt=message.pop_receipt or "")


# What the library parses MAX_DATETIME_TEXT into (seven fraction digits cut to six).
_MAX_DATETIME = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)


def _as_utc(value: datetime | None) -> datetime:
    """The datetime the library's `_parse_datetime` gives for `_when(value, MAX_DATETIME_TEXT)`."""
    return _MAX_DATETIME if value is None else value.astimezone(UTC).replace(fold=0)


def _binding_data(message: QueueMessage, text: str | None, inserted: datetime) -> dict[str, Any]:
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
        binding_data["QueueTrigger"] = text
    binding_data.update({
        "DequeueCount": message.dequeue_count,
        "ExpirationTime": message.expiration_time,
        "Id": message.id,
        "InsertionTime": inserted,
        "NextVisibleTime": message.next_visible_time,
        "PopReceipt": message.pop_receipt,
    })
    return binding_data


_REASONS: dict[str, str] = {}  # by queue name: one text per queue, not one per message


def _reason(queue: str) -> str:
    reason = _REASONS.get(queue)
    if reason is None:
        reason = f"New queue message detected on '{queue}'."
        if len(_REASONS) < 1000:
            _REASONS[queue] = reason
    return reason


def build_request(function: FunctionSpec, message: QueueMessage, body: bytes, queue: str,
                  now: datetime) -> InvocationRequest:
    """The trigger value, metadata and binding data the host gives the worker for one message.

    Metadata Datums and binding data are built only when read (a `str` or `bytes` parameter
    without binding expressions reads neither)."""
    try:
        text: str | None = body.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    data_type = (function.trigger.data_type or "").lower()
    value: str | bytes
    if data_type == "binary":
        value = body
    else:
        value = text if text is not None else body.decode("utf-8", errors="replace")
    inserted = message.insertion_time or now
    raw: dict[str, tuple[str, Any]] = {
        "DequeueCount": (_JSON, message.dequeue_count),
        "ExpirationTime": (_TIME, message.expiration_time),
        "Id": (_STRING, message.id),
        "InsertionTime": (_TIME, inserted),
        "NextVisibleTime": (_TIME, message.next_visible_time),
        "PopReceipt": (_STRING, message.pop_receipt or ""),
    }
    if text is not None:
        raw["QueueTrigger"] = (_STRING, text)
    return InvocationRequest(
        function=function,
        trigger_value=QueueMessageDatum(value, message, inserted),
        trigger_metadata=LazyMetadata(raw, _metadata_datum),
        binding_data=LazyMapping(partial(_binding_data, message, text, inserted)),
        reason=_reason(queue),
        details={"MessageId": message.id, "DequeueCount": message.dequeue_count, "InsertedOn": inserted},
    )
