"""Structured log fields (pipeline.md section 7) and the redaction guard.

`log_event(logger, level, message, JobId=..., RunId=...)` writes `message` followed by
`Field=value` pairs (searchable as text) and passes the fields as `custom_dimensions` (what
Application Insights shows as customDimensions). Before anything is logged, the guard refuses
values that carry a SAS query string, an account key, a bearer token / JWT, or a raw message
body, and field names that announce a raw body. Refusal raises `UnsafeLogValue`: a leak is a
bug to fix, not something to silently pass on.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from funchost.reliability.errors import UnsafeLogValue

JOB_ID = "JobId"
RUN_ID = "RunId"
TENANT_ID = "TenantId"
REQUESTED_BY_USER_ID = "RequestedByUserId"
EVENT_ID = "EventId"
CORRELATION_ID = "CorrelationId"
STORAGE_ACCOUNT = "StorageAccount"
CONTAINER_NAME = "ContainerName"
BLOB_NAME = "BlobName"
QUEUE_MESSAGE_ID = "QueueMessageId"
DEQUEUE_COUNT = "DequeueCount"
MESSAGE_HASH = "MessageHash"
OUTBOX_ID = "OutboxId"
DISPATCHER_ID = "DispatcherId"

FIELDS = (
    JOB_ID, RUN_ID, TENANT_ID, REQUESTED_BY_USER_ID, EVENT_ID, CORRELATION_ID, STORAGE_ACCOUNT,
    CONTAINER_NAME, BLOB_NAME, QUEUE_MESSAGE_ID, DEQUEUE_COUNT, MESSAGE_HASH, OUTBOX_ID, DISPATCHER_ID,
)

MAX_VALUE_LENGTH = 1024
_FIELD_NAME = re.compile(r"^[A-Z][A-Za-z0-9]*$")
_RAW_BODY_NAMES = {"body", "rawbody", "rawmessage", "message", "messagetext", "payload", "content", "data"}
_NOT_MASKED = r"(?!\[redacted)"
_UNSAFE = [
    (re.compile(r"[?&]sig=" + _NOT_MASKED, re.IGNORECASE), "a SAS signature"),
    (re.compile(r"SharedAccessSignature=" + _NOT_MASKED, re.IGNORECASE), "a SAS connection string"),
    (re.compile(r"AccountKey=" + _NOT_MASKED, re.IGNORECASE), "an account key"),
    (re.compile(r"\bBearer\s+" + _NOT_MASKED + r"\S+", re.IGNORECASE), "a bearer token"),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"), "a JWT"),
    (re.compile(r"[?&](se|sp|sv|skoid)=" + _NOT_MASKED + r"[^&]*&", re.IGNORECASE), "a SAS query string"),
]


_BEARER = "bearer"
_JWT_START = "eyJ"
_SAFE_NAMES: set[str] = set()
_SAFE_NAMES_LIMIT = 4096


def might_be_unsafe(text: str) -> bool:
    """A necessary condition for any pattern of `_UNSAFE` to match, in a few C-level scans.

    Every SAS / connection-string / key pattern contains "=", the JWT pattern starts with the
    case-sensitive "eyJ", and the bearer pattern needs "bearer" in any casing (no character
    outside ASCII folds to one of its letters). Text passing none of these cannot match, so the
    full patterns run only on the rest: same verdicts, far less work for ids and names.
    """
    return "=" in text or _JWT_START in text or _BEARER in text.lower()


def unsafe_reason(text: str) -> str | None:
    """What secret-like content `text` contains, or None."""
    if not might_be_unsafe(text):
        return None
    for pattern, what in _UNSAFE:
        if pattern.search(text):
            return what
    return None


def _check_name(name: str) -> None:
    if name in _SAFE_NAMES:
        return
    if not _FIELD_NAME.match(name):
        raise UnsafeLogValue(f"log field '{name}' is not a PascalCase field name")
    if name.lower() in _RAW_BODY_NAMES:
        raise UnsafeLogValue(f"log field '{name}' would carry a raw body; log MessageHash instead")
    if len(_SAFE_NAMES) < _SAFE_NAMES_LIMIT:  # names come from code: a small, fixed set
        _SAFE_NAMES.add(name)


def check_fields(fields: Mapping[str, Any]) -> None:
    """Raise UnsafeLogValue if a field name or value must not be logged."""
    for name, value in fields.items():
        _check_name(name)
        if value is None or isinstance(value, (bool, int, float)):  # noqa: UP038 - a tuple is faster
            continue
        text = str(value)
        if len(text) > MAX_VALUE_LENGTH:
            raise UnsafeLogValue(f"log field '{name}' is {len(text)} characters long: refusing a raw body")
        reason = unsafe_reason(text)
        if reason:
            raise UnsafeLogValue(f"log field '{name}' contains {reason}")


def render(fields: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in fields.items() if v is not None)


def log_event(logger: logging.Logger, level: int, message: str, **fields: Any) -> None:
    """Log `message` with structured fields, after the redaction guard."""
    reason = unsafe_reason(message)
    if reason:
        raise UnsafeLogValue(f"log message contains {reason}")
    check_fields(fields)
    if not logger.isEnabledFor(level):
        return
    text = f"{message} {render(fields)}" if fields else message
    logger.log(level, "%s", text, extra={"custom_dimensions": dict(fields)}, stacklevel=2)


_MASKS = [
    (re.compile(r"(https?://[^\s?]+)\?[^\s]*", re.IGNORECASE), r"\1?[redacted]"),
    (re.compile(r"\b(sig|se|sp|sv|st|skoid|sktid)=[^&\s;]*", re.IGNORECASE), r"\1=[redacted]"),
    (re.compile(r"(SharedAccessSignature|AccountKey)=[^;\s]*", re.IGNORECASE), r"\1=[redacted]"),
    (re.compile(r"\bBearer\s+\S+", re.IGNORECASE), "Bearer [redacted]"),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"), "[redacted-jwt]"),
]


def redact(text: str) -> str:
    """`text` with URL query strings, SAS parameters, keys and tokens masked."""
    for pattern, replacement in _MASKS:
        text = pattern.sub(replacement, text)
    return text


def short_error(exc: BaseException, limit: int = 300) -> str:
    """An exception summary safe to log: type and message, secrets masked, truncated."""
    text = redact(f"{type(exc).__name__}: {exc}")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def loggable(text: str, limit: int = 200) -> str:
    """Client-supplied text (a blob name, a container) made safe for a log field: control and
    non-ASCII characters escaped, secrets masked, at most `limit` characters. What the guard
    would still refuse after masking is replaced as a whole."""
    escaped = redact(text.encode("unicode_escape").decode("ascii"))
    if unsafe_reason(escaped):
        return "[redacted]"
    return escaped if len(escaped) <= limit else escaped[: limit - 1] + "…"
