"""Validating what a publisher sends, and stamping it as the service does (azure-semantics 6.3/6.4).

Event Grid schema: a JSON array of events with ``id``, ``subject``, ``eventType``, ``eventTime``
(strings); ``topic`` (if present) must name the topic, and is stamped; ``dataVersion`` is stamped
empty and ``metadataVersion`` ``"1"`` when absent. CloudEvents 1.0: one structured event
(``application/cloudevents+json``) or a batch array (``application/cloudevents-batch+json``) with
``specversion`` "1.0", ``id``, ``source``, ``type``. Bodies over 1 MB are rejected with 413.
Every problem is a `PublishError` whose message names the event index and the property.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from funchost.eventgrid import SCHEMA_CLOUDEVENTS

MAX_BODY_BYTES = 1024 * 1024
MAX_EVENT_BYTES = 1024 * 1024
METADATA_VERSION = "1"

_CE_ATTRIBUTE = re.compile(r"^[a-z0-9]+$")
_CE_KNOWN = {"specversion", "id", "source", "type", "subject", "time", "datacontenttype", "dataschema",
             "data", "data_base64"}
_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?$")


class PublishError(Exception):
    """A rejected publish: HTTP `status`, Event Grid error `code`, and a precise message."""

    def __init__(self, status: int, message: str, code: str = "BadRequest", detail_code: str = "InputJsonInvalid"):
        self.status = status
        self.code = code
        self.detail_code = detail_code
        self.message = message
        super().__init__(message)

    def body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message,
                          "details": [{"code": self.detail_code, "message": self.message}]}}


def too_large(what: str, size: int) -> PublishError:
    return PublishError(413, f"{what} is {size} bytes; the limit is {MAX_BODY_BYTES} bytes (1 MB).",
                        code="PayloadTooLarge", detail_code="PayloadTooLarge")


def parse_events(body: bytes, content_type: str | None, schema: str, topic_id: str) -> list[dict[str, Any]]:
    """Validate a publish request body for a topic of input `schema`; return stamped events."""
    if len(body) > MAX_BODY_BYTES:
        raise too_large("The request body", len(body))
    if not body.strip():
        raise PublishError(400, "The request body is empty; send a JSON array of events.")
    try:
        payload = json.loads(body)
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        raise PublishError(400, f"The request body is not valid JSON: {exc}.") from exc
    except RecursionError:
        raise PublishError(400, "The request body is not valid JSON: it is nested too deeply.") from None
    ctype = (content_type or "").split(";")[0].strip().lower()
    if schema == SCHEMA_CLOUDEVENTS:
        return _cloud_events(payload, ctype)
    if ctype.startswith("application/cloudevents"):
        raise PublishError(400, "This topic accepts the Event Grid schema; CloudEvents were sent "
                                f"(content-type {ctype!r}).")
    return _eventgrid_events(payload, topic_id)


def _eventgrid_events(payload: Any, topic_id: str) -> list[dict[str, Any]]:
    if not isinstance(payload, list):
        raise PublishError(400, "The request body must be a JSON array of events (Event Grid schema), "
                                f"got a JSON {_json_type(payload)}.")
    if not payload:
        raise PublishError(400, "The request body holds no events.")
    events = []
    for index, event in enumerate(payload):
        events.append(validate_eventgrid_event(event, index, topic_id))
    return events


def validate_eventgrid_event(event: Any, index: int, topic_id: str) -> dict[str, Any]:
    where = f"Event at index {index}"
    if not isinstance(event, dict):
        raise PublishError(400, f"{where} must be a JSON object.")
    _check_size(event, where)
    for prop in ("id", "subject", "eventType", "eventTime"):
        value = event.get(prop)
        if value is None:
            raise PublishError(400, f"{where}: required property '{prop}' was not set.")
        if not isinstance(value, str):
            raise PublishError(400, f"{where}: property '{prop}' must be a string.")
        if prop != "subject" and not value.strip():
            raise PublishError(400, f"{where}: required property '{prop}' is empty.")
    if not _is_timestamp(event["eventTime"]):
        raise PublishError(400, f"{where}: property 'eventTime' is not a valid ISO 8601 date-time: "
                                f"{event['eventTime']!r}.")
    for prop in ("dataVersion", "metadataVersion", "topic"):
        if prop in event and event[prop] is not None and not isinstance(event[prop], str):
            raise PublishError(400, f"{where}: property '{prop}' must be a string.")
    topic = event.get("topic")
    if topic and topic.lower() != topic_id.lower():
        raise PublishError(400, f"{where}: property 'topic' is {topic!r} but the event was published to "
                                f"{topic_id!r}; omit 'topic' and Event Grid stamps it.")
    version = event.get("metadataVersion")
    if version and version != METADATA_VERSION:
        raise PublishError(400, f"{where}: property 'metadataVersion' must be \"1\", got {version!r}.")
    stamped = dict(event)
    stamped["topic"] = topic_id
    stamped["dataVersion"] = event.get("dataVersion") or ""
    stamped["metadataVersion"] = METADATA_VERSION
    return stamped


def _cloud_events(payload: Any, ctype: str) -> list[dict[str, Any]]:
    if ctype == "application/cloudevents+json" or (isinstance(payload, dict) and ctype != "application/cloudevents-batch+json"):
        if not isinstance(payload, dict):
            raise PublishError(400, "content-type application/cloudevents+json carries one event as a JSON "
                                    "object; use application/cloudevents-batch+json for an array.")
        payload = [payload]
    if not isinstance(payload, list):
        raise PublishError(400, "A CloudEvents batch must be a JSON array of events.")
    if not payload:
        raise PublishError(400, "The request body holds no events.")
    return [validate_cloud_event(event, index) for index, event in enumerate(payload)]


def validate_cloud_event(event: Any, index: int) -> dict[str, Any]:
    where = f"CloudEvent at index {index}"
    if not isinstance(event, dict):
        raise PublishError(400, f"{where} must be a JSON object.")
    _check_size(event, where)
    for attr in ("specversion", "id", "source", "type"):
        value = event.get(attr)
        if value is None:
            raise PublishError(400, f"{where}: required attribute '{attr}' was not set.")
        if not isinstance(value, str) or not value:
            raise PublishError(400, f"{where}: attribute '{attr}' must be a non-empty string.")
    if event["specversion"] != "1.0":
        raise PublishError(400, f"{where}: attribute 'specversion' must be \"1.0\", got {event['specversion']!r}.")
    if "data" in event and "data_base64" in event:
        raise PublishError(400, f"{where}: 'data' and 'data_base64' are mutually exclusive.")
    time = event.get("time")
    if time is not None and (not isinstance(time, str) or not _is_timestamp(time)):
        raise PublishError(400, f"{where}: attribute 'time' is not a valid RFC 3339 timestamp: {time!r}.")
    for attr in ("subject", "datacontenttype", "dataschema", "data_base64"):
        if attr in event and event[attr] is not None and not isinstance(event[attr], str):
            raise PublishError(400, f"{where}: attribute '{attr}' must be a string.")
    for attr in event:
        if attr not in _CE_KNOWN and not _CE_ATTRIBUTE.match(attr):
            raise PublishError(400, f"{where}: extension attribute name {attr!r} must be lower-case letters and "
                                    "digits only.")
    return dict(event)


def _json_type(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "null" if value is None else "value"


def _check_size(event: dict[str, Any], where: str) -> None:
    try:
        size = len(json.dumps(event, separators=(",", ":")).encode())
    except RecursionError:
        raise PublishError(400, f"{where} is nested too deeply.") from None
    if size > MAX_EVENT_BYTES:
        raise too_large(where, size)


def _is_timestamp(value: str) -> bool:
    if not _ISO.match(value):
        return False
    text = value.replace("z", "Z").replace("Z", "+00:00").replace("t", "T").replace(" ", "T")
    # fromisoformat accepts at most 6 fraction digits; .NET writes 7.
    text = re.sub(r"(\.\d{6})\d+", r"\1", text)
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


# --- delivery-side shapes ------------------------------------------------------------------------


def to_cloud_event(event: dict[str, Any]) -> dict[str, Any]:
    """Event Grid schema -> CloudEvents 1.0, as Event Grid maps it for CloudEvents subscriptions."""
    out: dict[str, Any] = {
        "id": event["id"],
        "source": event.get("topic", ""),
        "specversion": "1.0",
        "type": event["eventType"],
        "subject": event.get("subject", ""),
        "time": event["eventTime"],
    }
    if "data" in event:
        out["data"] = event["data"]
    return out


