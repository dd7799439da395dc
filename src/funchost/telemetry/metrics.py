"""Invocation metrics and queue depths.

* ``faas.invoke_duration`` (histogram, seconds) on the meter ``Microsoft.Azure.Functions.Host``
  with the bucket boundaries the Functions host configures (azure-functions-host
  ``Metrics/HostMetrics.TrackFunctionExecutionDuration``, ``OpenTelemetryConfigurationExtensions
  .ConfigureMetrics``), attributes ``faas.name`` and ``faas.trigger``;
* ``faas.invocations`` (successful), ``faas.errors`` and ``faas.timeouts`` (counters) from the
  FaaS metric conventions, on the same meter and attributes;
* ``funchost.queue.depth`` (gauge, messages) on the meter ``funchost``: the approximate message
  count of each Storage queue a queue trigger listens to and of its poison queue
  (``messaging.destination.name``). It is sampled on the host's event loop every export
  interval (storage is async; the metric reader's thread only reads the last sample), on the
  host's clock.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from opentelemetry.metrics import CallbackOptions, Meter, Observation

from funchost.errors import FunctionTimeoutError
from funchost.invocation.contracts import InvocationResult
from funchost.runtime.contracts import Runtime

log = logging.getLogger("funchost.telemetry")

HOST_METER = "Microsoft.Azure.Functions.Host"
DURATION_BOUNDARIES = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10)


class InvocationMetrics:
    def __init__(self, meter: Meter) -> None:
        self.duration = meter.create_histogram(
            "faas.invoke_duration", unit="s", description="Measures the duration of the function's logic execution.",
            explicit_bucket_boundaries_advisory=DURATION_BOUNDARIES)
        self.invocations = meter.create_counter("faas.invocations", unit="{invocation}",
                                                description="Number of successful invocations.")
        self.errors = meter.create_counter("faas.errors", unit="{error}", description="Number of invocation errors.")
        self.timeouts = meter.create_counter("faas.timeouts", unit="{timeout}",
                                             description="Number of invocation timeouts.")

    def record(self, result: InvocationResult, attributes: dict[str, Any]) -> None:
        self.duration.record(result.duration_ms / 1000, attributes)
        if result.succeeded:
            self.invocations.add(1, attributes)
        else:
            self.errors.add(1, attributes)
            if isinstance(result.error, FunctionTimeoutError):
                self.timeouts.add(1, attributes)


class QueueDepths:
    """The last sampled depth of every trigger queue and its poison queue."""

    def __init__(self, meter: Meter) -> None:
        self.depths: dict[tuple[str | None, str], int] = {}
        meter.create_observable_gauge("funchost.queue.depth", [self._observe], unit="{message}",
                                      description="Approximate number of messages in a queue a function listens to.")

    def _observe(self, options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(depth, {"messaging.destination.name": name})
                for (_, name), depth in list(self.depths.items())]

    async def run(self, runtime: Runtime, interval: float) -> None:
        """Sample until cancelled (the telemetry service cancels it at stop)."""
        from funchost.triggers.queue.messages import poison_queue_name

        queues: set[tuple[str | None, str]] = set()
        for function in runtime.functions.values():
            if function.trigger_type == "queueTrigger":
                name = str(function.trigger.get("queueName") or "").lower()
                connection = function.trigger.get("connection")
                poison = poison_queue_name(name)
                queues.update({(connection, name), *([(connection, poison)] if poison else [])})
        while queues:
            for connection, name in sorted(queues, key=lambda q: (q[0] or "", q[1])):
                await self._sample(runtime, connection, name)
            await runtime.clock.sleep(interval)

    async def _sample(self, runtime: Runtime, connection: str | None, name: str) -> None:
        try:
            service = runtime.storage.queues(connection)
            if await service.queue_exists(name):
                self.depths[(connection, name)] = (await service.get_queue_properties(name)).approximate_message_count
            else:
                self.depths.pop((connection, name), None)
        except Exception as exc:  # noqa: BLE001 - a gauge that cannot be read is left out, not fatal
            log.debug("queue depth of %s not sampled: %s", name, exc)
