"""host.json `extensions.serviceBus` (extension 5.x `ServiceBusOptions`), defaults and validation.

Source: Azure/azure-sdk-for-net `Microsoft.Azure.WebJobs.Extensions.ServiceBus/src/Config/
ServiceBusOptions.cs`; docs "host.json settings" of the Service Bus binding (shared spec §1.1).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from funchost.errors import ConfigError
from funchost.settings.sections import SectionReader
from funchost.settings.timespan import parse_timespan

DEFAULT_TRY_TIMEOUT = 60.0
INFINITE = None  # Timeout.InfiniteTimeSpan
_INFINITE_TEXT = {"-00:00:00.0010000", "-00:00:00.001", "-1"}
_MODES = {"exponential": "Exponential", "fixed": "Fixed"}
_TRANSPORTS = {"amqptcp": "AmqpTcp", "amqpwebsockets": "AmqpWebSockets"}


def processor_count(environ: Mapping[str, str] | None = None) -> int:
    """1 on Consumption (WEBSITE_SKU=Dynamic), else the CPU count (Utility.GetProcessorCount)."""
    env = os.environ if environ is None else environ
    if env.get("WEBSITE_SKU", "").lower() == "dynamic":
        return 1
    return os.cpu_count() or 1


@dataclass(frozen=True)
class ClientRetryOptions:
    mode: str = "Exponential"
    try_timeout: float = DEFAULT_TRY_TIMEOUT
    delay: float = 0.8
    max_delay: float = 60.0
    max_retries: int = 3


@dataclass(frozen=True)
class ServiceBusOptions:
    prefetch_count: int = 0
    auto_complete_messages: bool = True
    max_auto_lock_renewal_duration: float | None = 300.0  # None = infinite
    max_concurrent_calls: int = 16
    max_concurrent_sessions: int = 8
    max_concurrent_calls_per_session: int = 1
    max_message_batch_size: int = 1000
    min_message_batch_size: int = 1
    max_batch_wait_time: float = 30.0
    session_idle_timeout: float | None = None  # None = clientRetryOptions.tryTimeout
    enable_cross_entity_transactions: bool = False
    client_retry: ClientRetryOptions = ClientRetryOptions()
    transport_type: str = "AmqpTcp"
    web_proxy: str | None = None

    @property
    def effective_session_idle_timeout(self) -> float:
        return self.session_idle_timeout if self.session_idle_timeout is not None else self.client_retry.try_timeout


def _renewal(value: object, path: str) -> float | None:
    if isinstance(value, str) and value.strip() in _INFINITE_TEXT:
        return INFINITE
    try:
        seconds = parse_timespan(value)  # type: ignore[arg-type]
    except ValueError as exc:
        raise ConfigError(str(exc), path=path) from None
    if seconds < 0:
        raise ConfigError("must be zero or more (or Timeout.InfiniteTimeSpan, '-00:00:00.0010000')", path=path)
    return seconds


def parse(reader: SectionReader, environ: Mapping[str, str] | None = None) -> ServiceBusOptions:
    retry_reader = reader.section("clientRetryOptions")
    retry = ClientRetryOptions(
        mode=retry_reader.string("mode", "Exponential", choices=_MODES) or "Exponential",
        try_timeout=retry_reader.timespan("tryTimeout", DEFAULT_TRY_TIMEOUT, minimum=0) or DEFAULT_TRY_TIMEOUT,
        delay=retry_reader.timespan("delay", 0.8, minimum=0) or 0.0,
        max_delay=retry_reader.timespan("maxDelay", 60.0, minimum=0) or 0.0,
        max_retries=retry_reader.integer("maxRetries", 3, minimum=0),
    )
    retry_reader.finish()
    options = ServiceBusOptions(
        prefetch_count=reader.integer("prefetchCount", 0, minimum=0),
        auto_complete_messages=reader.boolean("autoCompleteMessages", True),
        max_auto_lock_renewal_duration=reader.custom("maxAutoLockRenewalDuration", 300.0, _renewal),
        max_concurrent_calls=reader.integer("maxConcurrentCalls", 16 * processor_count(environ), minimum=1),
        max_concurrent_sessions=reader.integer("maxConcurrentSessions", 8, minimum=1),
        max_concurrent_calls_per_session=reader.integer("maxConcurrentCallsPerSession", 1, minimum=1),
        max_message_batch_size=reader.integer("maxMessageBatchSize", 1000, minimum=1),
        # The extension's setters do not validate these two (QUIRK, kept).
        min_message_batch_size=reader.integer("minMessageBatchSize", 1),
        max_batch_wait_time=reader.timespan("maxBatchWaitTime", 30.0) or 0.0,
        session_idle_timeout=reader.timespan("sessionIdleTimeout", None, minimum=0),
        enable_cross_entity_transactions=reader.boolean("enableCrossEntityTransactions", False),
        client_retry=retry,
        transport_type=reader.string("transportType", "AmqpTcp", choices=_TRANSPORTS) or "AmqpTcp",
        web_proxy=reader.string("webProxy", None),
    )
    return options
