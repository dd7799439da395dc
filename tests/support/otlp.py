"""An OTLP/HTTP receiver for tests: what a collector would get, decoded.

    with OtlpReceiver() as receiver:             # listens on 127.0.0.1, a free port
        ... OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint ...
        spans = receiver.wait_for_spans(lambda spans: len(spans) >= 2)

Requests to ``/v1/traces``, ``/v1/metrics`` and ``/v1/logs`` are decoded with the OTLP protobuf
messages (``opentelemetry-proto``) into plain records (`ReceivedSpan`, ...), so tests compare
names, ids and attributes without knowing protobuf.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs}


@dataclass
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    kind: int
    attributes: dict[str, Any]
    status_code: int
    events: list[str]
    links: list[tuple[str, str]]
    resource: dict[str, Any]
    scope: str


@dataclass
class ReceivedLog:
    body: Any
    trace_id: str
    span_id: str
    attributes: dict[str, Any]


@dataclass
class OtlpReceiver:
    spans: list[ReceivedSpan] = field(default_factory=list)
    logs: list[ReceivedLog] = field(default_factory=list)
    metrics: dict[str, list[Any]] = field(default_factory=dict)  # name -> data points
    requests: int = 0

    def __enter__(self) -> OtlpReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                receiver._receive(self.path, body)
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _receive(self, path: str, body: bytes) -> None:
        with self._lock:
            self.requests += 1
            if path == "/v1/traces":
                self._traces(body)
            elif path == "/v1/logs":
                self._logs(body)
            elif path == "/v1/metrics":
                self._metrics(body)

    def _traces(self, body: bytes) -> None:
        request = ExportTraceServiceRequest.FromString(body)
        for resource_spans in request.resource_spans:
            resource = _attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    self.spans.append(ReceivedSpan(
                        name=span.name, trace_id=span.trace_id.hex(), span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex(), kind=span.kind,
                        attributes=_attributes(span.attributes), status_code=span.status.code,
                        events=[event.name for event in span.events],
                        links=[(link.trace_id.hex(), link.span_id.hex()) for link in span.links],
                        resource=resource, scope=scope_spans.scope.name))

    def _logs(self, body: bytes) -> None:
        request = ExportLogsServiceRequest.FromString(body)
        for resource_logs in request.resource_logs:
            for scope_logs in resource_logs.scope_logs:
                for record in scope_logs.log_records:
                    self.logs.append(ReceivedLog(_value(record.body), record.trace_id.hex(), record.span_id.hex(),
                                                 _attributes(record.attributes)))

    def _metrics(self, body: bytes) -> None:
        request = ExportMetricsServiceRequest.FromString(body)
        for resource_metrics in request.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    kind = metric.WhichOneof("data")
                    points = list(getattr(metric, kind).data_points) if kind else []
                    self.metrics.setdefault(metric.name, []).extend(points)

    def wait_for(self, ready: Callable[[OtlpReceiver], bool], timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if ready(self):
                    return
            time.sleep(0.05)
        raise AssertionError(f"the OTLP receiver did not get what was expected within {timeout}s: "
                             f"{[s.name for s in self.spans]}, {len(self.logs)} logs, {sorted(self.metrics)}")
