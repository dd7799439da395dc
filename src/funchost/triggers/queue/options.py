"""host.json ``extensions.queues`` (azure-semantics 1.1) and funchost's receive-visibility setting."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from funchost.errors import ConfigError
from funchost.settings.sections import SectionReader

MAX_BATCH_SIZE = 32
DEFAULT_BATCH_SIZE = 16
DEFAULT_MAX_POLLING_INTERVAL = 60.0
DEVELOPMENT_MAX_POLLING_INTERVAL = 2.0
MIN_POLLING_INTERVAL = 0.1
DEFAULT_MAX_DEQUEUE_COUNT = 5
# The listener's receive visibility (the "lease" on a message) and its renewal period.
RECEIVE_VISIBILITY = 600.0
MIN_RENEWAL_INTERVAL = 60.0
# App setting that shortens the 10-minute receive visibility (seconds), e.g. so a message held
# by a crashed host comes back quickly in tests. Not an Azure setting.
RECEIVE_VISIBILITY_SETTING = "FUNCHOST_QUEUE_RECEIVE_VISIBILITY"

_ENCODINGS = {"base64": "base64", "none": "none"}


@dataclass(frozen=True)
class QueuesOptions:
    batch_size: int = DEFAULT_BATCH_SIZE
    new_batch_threshold: int = DEFAULT_BATCH_SIZE // 2
    max_polling_interval: float = DEFAULT_MAX_POLLING_INTERVAL
    max_polling_interval_is_default: bool = True
    visibility_timeout: float = 0.0
    max_dequeue_count: int = DEFAULT_MAX_DEQUEUE_COUNT
    message_encoding: str = "base64"

    def polling_maximum(self, development: bool) -> float:
        """2 s in Development while maxPollingInterval is still the default (azure-semantics 1.1)."""
        if development and self.max_polling_interval_is_default:
            return DEVELOPMENT_MAX_POLLING_INTERVAL
        return self.max_polling_interval


def processor_count(environ: Mapping[str, str] | None = None) -> int:
    env = os.environ if environ is None else environ
    if env.get("WEBSITE_SKU", "").lower() == "dynamic":
        return 1
    return os.cpu_count() or 1


def parse(reader: SectionReader, environ: Mapping[str, str] | None = None) -> QueuesOptions:
    batch_size = reader.integer("batchSize", DEFAULT_BATCH_SIZE, minimum=1, maximum=MAX_BATCH_SIZE)
    default_threshold = (batch_size // 2) * processor_count(environ)
    threshold = reader.integer("newBatchThreshold", default_threshold, minimum=0)
    polling_default = not reader.has("maxPollingInterval")
    polling = reader.timespan("maxPollingInterval", DEFAULT_MAX_POLLING_INTERVAL, minimum=MIN_POLLING_INTERVAL)
    visibility = reader.timespan("visibilityTimeout", 0.0, minimum=0)
    max_dequeue = reader.integer("maxDequeueCount", DEFAULT_MAX_DEQUEUE_COUNT, minimum=1)
    encoding = reader.string("messageEncoding", "base64", choices=_ENCODINGS)
    return QueuesOptions(
        batch_size=batch_size,
        new_batch_threshold=threshold,
        max_polling_interval=float(polling if polling is not None else DEFAULT_MAX_POLLING_INTERVAL),
        max_polling_interval_is_default=polling_default or polling == DEFAULT_MAX_POLLING_INTERVAL,
        visibility_timeout=float(visibility or 0.0),
        max_dequeue_count=max_dequeue,
        message_encoding=encoding or "base64",
    )


def receive_visibility(settings: Mapping[str, str] | object) -> float:
    """Seconds a received message stays invisible while its function runs (default 10 min)."""
    raw = settings.get(RECEIVE_VISIBILITY_SETTING) if hasattr(settings, "get") else None
    if raw is None or str(raw).strip() == "":
        return RECEIVE_VISIBILITY
    try:
        seconds = int(str(raw).strip())
    except ValueError:
        raise ConfigError(f"must be a whole number of seconds, got {raw!r}", path=RECEIVE_VISIBILITY_SETTING) from None
    if not 2 <= seconds <= 7 * 24 * 3600:
        raise ConfigError(f"must be between 2 and 604800 seconds, got {seconds}", path=RECEIVE_VISIBILITY_SETTING)
    return float(seconds)


def renewal_timing(visibility: float) -> tuple[float, float]:
    """(interval, minimum) for the visibility renewer: half the visibility, floor 1 min (or less
    when the visibility itself is shortened)."""
    interval = visibility / 2
    return interval, min(MIN_RENEWAL_INTERVAL, interval)
