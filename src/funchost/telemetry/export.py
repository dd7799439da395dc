"""Export off the invocation path, bounded: a collector that is down costs a warning, no more.

Finished spans go into a bounded queue; one background thread sends them in batches (the
specification's batching processor: ``OTEL_BSP_SCHEDULE_DELAY``, ``..._MAX_EXPORT_BATCH_SIZE``,
``..._MAX_QUEUE_SIZE``). When the queue is full a span is dropped and counted; a failed export
drops its batch and counts it. `ExportHealth` says so once per outage (a warning naming the
endpoint), and once more when export works again with how much was lost; the exporters' own
per-attempt log lines are silenced while the host runs (`silence_exporter_logs`). Metrics and logs
go through the SDK's own readers/processors with the same health accounting (`HealthReporting`).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

log = logging.getLogger("funchost.telemetry")

# Loggers of the SDK and its exporters that report every failed attempt (with tracebacks).
NOISY_LOGGERS = ("opentelemetry.exporter", "opentelemetry.sdk._shared_internal",
                 "opentelemetry.sdk.metrics._internal.export", "opentelemetry.sdk._logs._internal.export")


class ExportHealth:
    """Counts what could not be exported, per signal, and reports outages once."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.dropped: dict[str, int] = {"spans": 0, "metrics": 0, "logs": 0}
        self._failing: set[str] = set()  # export to the endpoint fails
        self._full: set[str] = set()  # the queue overflowed since the last successful export
        self._dropped_at_failure: dict[str, int] = {}
        self._lock = threading.Lock()

    def failing(self, signal: str) -> bool:
        return signal in self._failing

    def exported(self, signal: str) -> None:
        with self._lock:
            self._full.discard(signal)
            if signal not in self._failing:
                return
            self._failing.discard(signal)
            lost = self.dropped[signal] - self._dropped_at_failure.get(signal, 0)
        log.warning("OpenTelemetry: exporting %s to %s works again (%d dropped meanwhile).",
                    signal, self.endpoint, lost)

    def failed(self, signal: str, count: int, reason: str) -> None:
        """`count` items lost because the endpoint did not take them."""
        with self._lock:
            first = signal not in self._failing
            if first:
                self._failing.add(signal)
                self._dropped_at_failure[signal] = self.dropped[signal]
            self.dropped[signal] += count
        if first:
            log.warning("OpenTelemetry: cannot export %s to %s (%s); they are dropped and counted until it "
                        "answers. The host is not affected.", signal, self.endpoint, reason)

    def queue_full(self, signal: str) -> None:
        """One item dropped because the queue is full (said once until an export succeeds)."""
        with self._lock:
            self.dropped[signal] += 1
            first = signal not in self._full
            self._full.add(signal)
        if first:
            log.warning("OpenTelemetry: the %s export queue is full (export to %s is slower than the host); "
                        "%s are dropped and counted.", signal, self.endpoint, signal)


class BoundedSpanProcessor(SpanProcessor):
    """The batching span processor with drops counted in `ExportHealth`."""

    def __init__(self, exporter: SpanExporter, health: ExportHealth, *, max_queue_size: int,
                 schedule_delay: float, max_export_batch_size: int) -> None:
        self.exporter = exporter
        self.health = health
        self.max_queue_size = max_queue_size
        self.schedule_delay = schedule_delay
        self.batch_size = max_export_batch_size
        self._queue: deque[ReadableSpan] = deque()
        self._wake = threading.Event()
        self._export_lock = threading.Lock()
        self._closing = False
        self._thread = threading.Thread(target=self._run, name="funchost-otel-spans", daemon=True)
        self._thread.start()

    def on_start(self, span: Span, parent_context: Any = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        if self._closing or not span.context.trace_flags.sampled:
            return
        if len(self._queue) >= self.max_queue_size:
            self.health.queue_full("spans")
            return
        self._queue.append(span)
        if len(self._queue) >= self.batch_size:
            self._wake.set()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        self._export_all()
        return True

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop the thread; what is still queued is sent once if export works, else counted."""
        self._closing = True
        self._wake.set()
        self._thread.join(timeout + 1.0)  # an export in flight gets its own timeout to end
        if self.health.failing("spans"):
            self.health.failed("spans", len(self._queue), "still unreachable at stop")
            self._queue.clear()
        else:
            self._export_all()
        self.exporter.shutdown()

    def _run(self) -> None:
        while not self._closing:
            self._wake.wait(self.schedule_delay)
            self._wake.clear()
            if not self._closing:
                self._export_all()

    def _export_all(self) -> None:
        with self._export_lock:
            while self._queue:
                batch = [self._queue.popleft() for _ in range(min(self.batch_size, len(self._queue)))]
                self._export(batch)

    def _export(self, batch: Sequence[ReadableSpan]) -> None:
        try:
            result = self.exporter.export(batch)
        except Exception as exc:  # noqa: BLE001 - an exporter's failure never reaches the host
            self.health.failed("spans", len(batch), f"{type(exc).__name__}: {exc}")
            return
        if result is SpanExportResult.SUCCESS:
            self.health.exported("spans")
        else:
            self.health.failed("spans", len(batch), "the endpoint refused or did not answer")


class HealthReporting:
    """Wraps a metric or log exporter: failures are counted and reported, never raised."""

    def __init__(self, exporter: Any, health: ExportHealth, signal: str, count: Callable[[Any], int]) -> None:
        self._exporter = exporter
        self._health = health
        self._signal = signal
        self._count = count

    def export(self, batch: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            result = self._exporter.export(batch, *args, **kwargs)
        except Exception as exc:  # noqa: BLE001
            self._health.failed(self._signal, self._count(batch), f"{type(exc).__name__}: {exc}")
            return None
        if getattr(result, "name", None) == "SUCCESS":  # MetricExportResult / LogRecordExportResult
            self._health.exported(self._signal)
        else:
            self._health.failed(self._signal, self._count(batch), "the endpoint refused or did not answer")
        return result

    def __getattr__(self, name: str) -> Any:  # preferred_temporality, shutdown, force_flush, ...
        return getattr(self._exporter, name)


def silence_exporter_logs() -> Callable[[], None]:
    """The SDK's per-attempt warnings and tracebacks off while `ExportHealth` reports instead;
    returns what puts them back."""
    loggers = [logging.getLogger(name) for name in NOISY_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL + 1)

    def restore() -> None:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)

    return restore
