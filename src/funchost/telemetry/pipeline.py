"""The OpenTelemetry SDK set up for one host: traces, metrics and logs over OTLP.

Built by the invocation piece's factory at load (configuration only), started and stopped by the
telemetry host service: `start` creates the providers, exporters and their threads, attaches the
log handler to the root logger and points the global tracer at this host (`delegate`); `stop`
undoes all of it, bounded in time (an endpoint that is down does not hold the host's stop).

Logs: every record the console would show (host.json ``logging.logLevel`` applies), with the
current trace and span ids (inside an invocation: the invocation span), its category and
invocation id as attributes. As in the Functions host, ``Host.Results`` (the Executing /
Executed lines: the span says it) and the Azure SDKs' own loggers are not exported.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry._logs import SeverityNumber
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from funchost import __version__
from funchost.logs import CategoryFilter
from funchost.telemetry import delegate
from funchost.telemetry.export import (
    BoundedSpanProcessor,
    ExportHealth,
    HealthReporting,
    silence_exporter_logs,
)
from funchost.telemetry.metrics import HOST_METER, InvocationMetrics, QueueDepths
from funchost.telemetry.options import OtlpOptions, SignalExport

log = logging.getLogger("funchost.telemetry")

SCOPE = "funchost"
NOT_EXPORTED = ("opentelemetry", "funchost.telemetry", "funchost.results", "azure")
STOP_TIMEOUT = 5.0  # seconds the host's stop waits for the last export


class TelemetryPipeline:
    def __init__(self, options: OtlpOptions, *, service_name: str, log_levels: Mapping[str, str]) -> None:
        self.options = options
        self.service_name = service_name
        self.log_levels = dict(log_levels)
        self.instance_id = str(uuid.uuid4())  # faas.instance / service.instance.id of this host
        self.health = ExportHealth(options.description)
        self.tracer: trace.Tracer | None = None
        self.metrics: InvocationMetrics | None = None
        self.queue_depths: QueueDepths | None = None
        self.tracer_provider: TracerProvider | None = None
        self._span_processor: BoundedSpanProcessor | None = None
        self._meter_provider: MeterProvider | None = None
        self._logger_provider: LoggerProvider | None = None
        self._log_handler: OtlpLogHandler | None = None
        self._restore_logs: Callable[[], None] | None = None

    def start(self) -> None:
        options = self.options
        self._restore_logs = silence_exporter_logs()
        resource = Resource.create({"service.name": self.service_name, "service.version": __version__,
                                    "service.instance.id": self.instance_id, "faas.version": __version__,
                                    "process.pid": os.getpid()})
        self.tracer_provider = TracerProvider(resource=resource, shutdown_on_exit=False)
        if options.traces.endpoint:
            self._span_processor = BoundedSpanProcessor(
                _exporter("trace", options.protocol, options.traces), self.health,
                max_queue_size=options.max_queue_size, schedule_delay=options.schedule_delay,
                max_export_batch_size=options.max_export_batch_size)
            self.tracer_provider.add_span_processor(self._span_processor)
        self.tracer = self.tracer_provider.get_tracer(SCOPE, __version__)
        readers = []
        if options.metrics.endpoint:
            exporter = HealthReporting(_exporter("metric", options.protocol, options.metrics), self.health,
                                       "metrics", lambda batch: 1)
            readers.append(PeriodicExportingMetricReader(
                exporter, export_interval_millis=options.metric_export_interval * 1000,  # type: ignore[arg-type]
                export_timeout_millis=options.metrics.timeout * 1000))
        self._meter_provider = MeterProvider(resource=resource, metric_readers=readers, shutdown_on_exit=False)
        self.metrics = InvocationMetrics(self._meter_provider.get_meter(HOST_METER, __version__))
        self.queue_depths = QueueDepths(self._meter_provider.get_meter(SCOPE, __version__))
        if options.logs.endpoint:
            self._logger_provider = LoggerProvider(resource=resource, shutdown_on_exit=False)
            self._logger_provider.add_log_record_processor(BatchLogRecordProcessor(
                HealthReporting(_exporter("log", options.protocol, options.logs), self.health, "logs",  # type: ignore[arg-type]
                                len),
                max_queue_size=options.max_queue_size, max_export_batch_size=options.max_export_batch_size))
            self._log_handler = OtlpLogHandler(self._logger_provider, self.log_levels)
            logging.getLogger().addHandler(self._log_handler)
        if not delegate.follow(self.tracer_provider):
            log.info("OpenTelemetry: the app installed its own tracer provider; its spans go where it says")
        log.info("OpenTelemetry: exporting to %s (%s)", options.description, options.protocol)

    def stop(self) -> None:
        """Blocking and bounded: call it off the event loop."""
        if self._log_handler is not None:
            logging.getLogger().removeHandler(self._log_handler)
        if self.tracer_provider is not None:
            delegate.release(self.tracer_provider)
        self.tracer = None
        deadline = time.monotonic() + STOP_TIMEOUT
        for stop in (self._stop_spans, self._stop_metrics, self._stop_logs):
            _bounded(stop, max(0.1, deadline - time.monotonic()))
        dropped = {signal: count for signal, count in self.health.dropped.items() if count}
        if dropped:
            log.warning("OpenTelemetry: not exported while the host ran: %s.",
                        ", ".join(f"{count} {signal}" for signal, count in dropped.items()))
        if self._restore_logs is not None:
            self._restore_logs()
            self._restore_logs = None

    def _stop_spans(self) -> None:
        if self._span_processor is not None:
            self._span_processor.shutdown(timeout=self.options.traces.timeout)

    def _stop_metrics(self) -> None:
        if self._meter_provider is not None:
            self._meter_provider.shutdown(timeout_millis=self.options.metrics.timeout * 1000)

    def _stop_logs(self) -> None:
        if self._logger_provider is not None:
            self._logger_provider.shutdown()

    def flush(self) -> None:
        """Export what is waiting now (tests; the threads do it on their own)."""
        if self._span_processor is not None:
            self._span_processor.force_flush()
        if self._meter_provider is not None:
            self._meter_provider.force_flush()
        if self._logger_provider is not None:
            self._logger_provider.force_flush()


def _bounded(stop: Any, timeout: float) -> None:
    """Run a provider's shutdown in a thread we can stop waiting for."""
    thread = threading.Thread(target=stop, name="funchost-otel-stop", daemon=True)
    thread.start()
    thread.join(timeout)


def _exporter(kind: str, protocol: str, signal: SignalExport) -> Any:
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc import _log_exporter as grpc_logs
        from opentelemetry.exporter.otlp.proto.grpc import metric_exporter as grpc_metrics
        from opentelemetry.exporter.otlp.proto.grpc import trace_exporter as grpc_traces

        classes: dict[str, Any] = {"trace": grpc_traces.OTLPSpanExporter, "metric": grpc_metrics.OTLPMetricExporter,
                                   "log": grpc_logs.OTLPLogExporter}
    else:
        from opentelemetry.exporter.otlp.proto.http import _log_exporter as http_logs
        from opentelemetry.exporter.otlp.proto.http import metric_exporter as http_metrics
        from opentelemetry.exporter.otlp.proto.http import trace_exporter as http_traces

        classes = {"trace": http_traces.OTLPSpanExporter, "metric": http_metrics.OTLPMetricExporter,
                   "log": http_logs.OTLPLogExporter}
    return classes[kind](endpoint=signal.endpoint, headers=dict(signal.headers) or None, timeout=signal.timeout)


_SEVERITY = {logging.DEBUG: SeverityNumber.DEBUG, logging.INFO: SeverityNumber.INFO,
             logging.WARNING: SeverityNumber.WARN, logging.ERROR: SeverityNumber.ERROR,
             logging.CRITICAL: SeverityNumber.FATAL}


class OtlpLogHandler(logging.Handler):
    """Log records to OTLP with the current trace context and the Functions category."""

    def __init__(self, provider: LoggerProvider, levels: Mapping[str, str]) -> None:
        super().__init__()
        self.provider = provider
        self.addFilter(CategoryFilter(levels))

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.startswith(NOT_EXPORTED):
            return False
        return bool(super().filter(record))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            attributes: dict[str, Any] = {"category": str(getattr(record, "category", record.name))}
            for key in ("invocation_id", "function", "event"):
                value = getattr(record, key, None)
                if isinstance(value, str):
                    attributes[key] = value
            if record.exc_info and record.exc_info[0] is not None:
                attributes["exception.type"] = record.exc_info[0].__name__
                attributes["exception.message"] = str(record.exc_info[1])
            level = max((k for k in _SEVERITY if k <= record.levelno), default=logging.DEBUG)
            self.provider.get_logger(record.name).emit(
                timestamp=int(record.created * 1e9), observed_timestamp=time.time_ns(),
                context=otel_context.get_current(), severity_number=_SEVERITY[level],
                severity_text=record.levelname, body=record.getMessage(), attributes=attributes)
        except Exception:  # noqa: BLE001 - telemetry never breaks logging
            self.handleError(record)
