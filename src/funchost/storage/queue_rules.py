"""Azure Queue storage's rules on names, message text and argument ranges (azure-semantics 1.7).

Checked once, by `ValidatingQueueService`, before any backend sees a call, so every backend
answers a bad argument with the service's error code and an app that works locally does not
fail on Azure for a name. Rules that need the stored state (a pop receipt, a message's expiry)
stay in the backends.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from funchost.errors import InvalidInput, InvalidResourceName, RequestBodyTooLarge
from funchost.storage.metadata import is_metadata_name

MAX_MESSAGE_BYTES = 64 * 1024  # of UTF-8 encoded message text
DEFAULT_TTL = 7 * 24 * 3600  # seconds
MAX_GET_MESSAGES = 32
MAX_VISIBILITY = 7 * 24 * 3600

_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9]|-(?!-))*[a-z0-9]$")
_VALID_NAMES: set[str] = set()  # names already checked (every call checks its queue name)


def validate_queue_name(name: str) -> str:
    """3-63 chars, lowercase letters, digits and single dashes, alphanumeric ends."""
    if type(name) is str and name in _VALID_NAMES:
        return name
    if not isinstance(name, str):
        raise InvalidResourceName(f"invalid queue name {name!r}")
    if not 3 <= len(name) <= 63:
        # Azure answers a bad length with OutOfRangeInput, bad characters with InvalidResourceName.
        raise InvalidResourceName("the specified resource name length is not within the permissible limits",
                                  code="OutOfRangeInput")
    if not _NAME.match(name):
        raise InvalidResourceName(f"invalid queue name {name!r}: 3-63 lowercase letters, digits and "
                                  "single dashes, starting and ending with a letter or digit")
    if len(_VALID_NAMES) < 10_000:
        _VALID_NAMES.add(name)
    return name


def out_of_range(what: str, value: object) -> InvalidInput:
    return InvalidInput(f"{what} {value!r} is out of range", code="OutOfRangeQueryParameterValue", status=400)


def check_message_text(content: str) -> None:
    if not isinstance(content, str):
        raise InvalidInput("message content must be text")
    if len(content) * 4 > MAX_MESSAGE_BYTES and len(content.encode("utf-8")) > MAX_MESSAGE_BYTES:
        raise RequestBodyTooLarge(f"message text is larger than {MAX_MESSAGE_BYTES} bytes (UTF-8)")


def check_put(visibility_timeout: int, time_to_live: int | None) -> None:
    """Put Message: visibility 0..7 days; TTL -1 (never) or at least 1 s and above the visibility."""
    if not 0 <= visibility_timeout <= MAX_VISIBILITY:
        raise out_of_range("visibilitytimeout", visibility_timeout)
    ttl = DEFAULT_TTL if time_to_live is None else time_to_live
    if ttl != -1 and (ttl < 1 or ttl <= visibility_timeout):
        raise out_of_range("messagettl", ttl)


def check_receive(max_messages: int, visibility_timeout: int) -> None:
    """Get Messages: 1..32 messages, visibility 1 s..7 days."""
    check_count(max_messages)
    if not 1 <= visibility_timeout <= MAX_VISIBILITY:
        raise out_of_range("visibilitytimeout", visibility_timeout)


def check_count(max_messages: int) -> None:
    """Get and Peek Messages: numofmessages 1..32."""
    if not 1 <= max_messages <= MAX_GET_MESSAGES:
        raise out_of_range("numofmessages", max_messages)


def check_update(visibility_timeout: int) -> None:
    """Update Message: visibility 0..7 days (a backend also checks it against the message's expiry)."""
    if not 0 <= visibility_timeout <= MAX_VISIBILITY:
        raise out_of_range("visibilitytimeout", visibility_timeout)


def check_metadata(metadata: Mapping[str, str] | None) -> dict[str, str]:
    """Metadata names are C# identifiers; values are kept as text."""
    items = dict(metadata or {})
    for key in items:
        if not is_metadata_name(key):
            raise InvalidInput(f"invalid metadata name {key!r}", code="InvalidMetadata", status=400)
    return {k: str(v) for k, v in items.items()}
