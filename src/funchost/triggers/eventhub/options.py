"""host.json `extensions.eventHubs`, as the Event Hubs extension 6.x reads it (servicebus-eventhubs 2.1).

Defaults are the extension's (`EventHubOptions`, Azure/azure-sdk-for-net
sdk/eventhub/Microsoft.Azure.WebJobs.Extensions.EventHubs/src/Config/EventHubOptions.cs): extension
6.x, which the current extension bundle (4.x) carries, so `maxEventBatchSize` is 100 (it was 10
before 6.0.0). Validation messages are the setters'. Connection and client options
(`transportType`, `clientRetryOptions`, `prefetchCount`, ...) are checked and have no effect on
the embedded broker.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from funchost.errors import ConfigError
from funchost.settings.sections import SectionReader

EXTENSION_VERSION = "6.x"
OFFSET_TYPES = {"fromstart": "fromStart", "fromend": "fromEnd", "fromenqueuedtime": "fromEnqueuedTime"}


@dataclass(frozen=True)
class InitialOffset:
    type: str = "fromStart"  # fromStart | fromEnd | fromEnqueuedTime
    enqueued_time: datetime | None = None


@dataclass(frozen=True)
class EventHubsOptions:
    max_event_batch_size: int = 100
    min_event_batch_size: int = 1
    max_wait_time: float = 60.0
    batch_checkpoint_frequency: int = 1
    prefetch_count: int = 300
    partition_ownership_expiration: float = 120.0  # the processor's default, 2 minutes
    load_balancing_update_interval: float = 30.0  # the processor's default, 30 seconds
    track_last_enqueued_event_properties: bool = False
    target_unprocessed_event_threshold: int | None = None
    initial_offset: InitialOffset = InitialOffset()


def parse(reader: SectionReader) -> EventHubsOptions:
    maximum = reader.integer("maxEventBatchSize", 100)
    if maximum < 1:
        raise ConfigError("Batch size must be larger than 0.", path=reader.key_path("maxEventBatchSize"))
    minimum = reader.integer("minEventBatchSize", 1)
    if minimum < 1:
        raise ConfigError("Batch size must be larger than or equal to 1.", path=reader.key_path("minEventBatchSize"))
    if minimum > maximum:
        raise ConfigError(f"must not be larger than maxEventBatchSize ({maximum}), got {minimum}",
                          path=reader.key_path("minEventBatchSize"))
    wait = reader.timespan("maxWaitTime", 60.0)
    assert wait is not None
    if wait < 0:
        raise ConfigError("Max Wait Time must be larger than or equal to 0.", path=reader.key_path("maxWaitTime"))
    if wait > 600:
        raise ConfigError("Max Wait Time must be less than or equal to 10 minutes.", path=reader.key_path("maxWaitTime"))
    frequency = reader.integer("batchCheckpointFrequency", 1)
    if frequency < 1:
        raise ConfigError("Batch checkpoint frequency must be larger than 0.",
                          path=reader.key_path("batchCheckpointFrequency"))
    threshold = reader.raw("targetUnprocessedEventThreshold")
    if threshold is not None:
        threshold = reader.integer("targetUnprocessedEventThreshold", 1)
        if threshold < 1:
            raise ConfigError("Unprocessed Event Threshold must be larger than 0.",
                              path=reader.key_path("targetUnprocessedEventThreshold"))
    expiration = reader.timespan("partitionOwnershipExpirationInterval", 120.0, minimum=0.001)
    interval = reader.timespan("loadBalancingUpdateInterval", 30.0, minimum=0.001)
    assert expiration is not None and interval is not None
    options = EventHubsOptions(
        max_event_batch_size=maximum, min_event_batch_size=minimum, max_wait_time=wait,
        batch_checkpoint_frequency=frequency, prefetch_count=reader.integer("prefetchCount", 300, minimum=0),
        partition_ownership_expiration=expiration, load_balancing_update_interval=interval,
        track_last_enqueued_event_properties=reader.boolean("trackLastEnqueuedEventProperties", False),
        target_unprocessed_event_threshold=threshold,
        initial_offset=_initial_offset(reader.section("initialOffsetOptions")),
    )
    _client_options(reader)
    return options


def _initial_offset(section: SectionReader) -> InitialOffset:
    kind = section.string("type", "") or ""
    if kind == "":
        kind = "fromStart"  # an empty type is FromStart, as the extension reads it
    canonical = OFFSET_TYPES.get(kind.lower())
    if canonical is None:
        raise ConfigError(f"must be one of fromStart, fromEnd, fromEnqueuedTime, got {kind!r}",
                          path=section.key_path("type"))
    text = section.string("enqueuedTimeUtc", "") or ""
    when = None
    if canonical == "fromEnqueuedTime":
        if not text:
            raise ConfigError("is required when type is fromEnqueuedTime", path=section.key_path("enqueuedTimeUtc"))
        try:
            when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ConfigError(f"is not a date and time: {text!r}", path=section.key_path("enqueuedTimeUtc")) from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)  # no zone: UTC (the extension uses local time; UTC on Azure)
    section.finish()
    return InitialOffset(canonical, when)


def _client_options(reader: SectionReader) -> None:
    """Accepted as on Azure (validated), without effect locally."""
    reader.string("transportType", None, choices={"amqptcp": "amqpTcp", "amqpwebsockets": "amqpWebSockets"})
    reader.raw("webProxy")
    reader.string("customEndpointAddress", None)
    reader.raw("prefetchSizeInBytes")
    retry = reader.section("clientRetryOptions")
    retry.string("mode", None, choices={"exponential": "Exponential", "fixed": "Fixed"})
    for key in ("tryTimeout", "delay", "maximumDelay"):
        retry.timespan(key, None, minimum=0)
    retry.integer("maximumRetries", 3, minimum=0)
    retry.finish()


def from_host(runtime: Any) -> EventHubsOptions:
    try:
        options = runtime.options.extension("eventHubs")
    except KeyError:
        return EventHubsOptions()
    return options if isinstance(options, EventHubsOptions) else EventHubsOptions()
