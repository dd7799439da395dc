"""The invocation piece: one span per attempt, current while the function runs.

The span continues the caller's trace (`propagation`), is what ``context.trace_context`` holds
(``trace_parent`` / ``trace_state`` of the span, as the host sends ``Activity.Current`` to the
worker: azure-functions-host ``WorkerFunctionInvoker``, ``ScriptInvocationContextExtensions
.GetRpcTraceContext``), and is the current OpenTelemetry context while the function runs, so
spans the function starts, with or without ``context.trace_context``, nest under it (the
Python worker attaches the same context around the call: azure-functions-python-worker
``dispatcher.configure_opentelemetry``). Sync functions see it too: the executor copies the
context into the pool thread. It ends with the attempt's outcome: an error status and the
exception as an event on failure (``error.type``), the HTTP status for HTTP functions.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

from funchost.indexing.spec import FunctionSpec
from funchost.invocation.contracts import InvocationResult
from funchost.invocation.middleware import CallNext, Invocation
from funchost.telemetry import propagation
from funchost.telemetry.pipeline import TelemetryPipeline
from funchost.telemetry.spans import FunctionShape, http_status


class InvocationTracing:
    def __init__(self, pipeline: TelemetryPipeline, route_prefix: str) -> None:
        self.pipeline = pipeline
        self.route_prefix = route_prefix
        self._shapes: dict[str, FunctionShape] = {}
        self._cold = True

    def _shape(self, function: FunctionSpec) -> FunctionShape:
        shape = self._shapes.get(function.name)
        if shape is None or shape.function is not function:
            shape = self._shapes[function.name] = FunctionShape(function, self.route_prefix)
        return shape

    async def __call__(self, invocation: Invocation, call_next: CallNext) -> InvocationResult:
        tracer = self.pipeline.tracer
        if tracer is None:  # not started, or stopping
            return await call_next(invocation)
        request = invocation.request
        shape = self._shape(invocation.plan.function)
        parent, links = propagation.incoming(request)
        cold, self._cold = self._cold, False
        span = tracer.start_span(shape.span_name(request), context=parent, kind=shape.kind, links=links,
                                 attributes=shape.start_attributes(request, self.pipeline.instance_id, cold))
        span_context = span.get_span_context()
        token = otel_context.attach(trace.set_span_in_context(span, parent))
        invocation.request = replace(request, trace_parent=propagation.traceparent(span_context),
                                     trace_state=span_context.trace_state.to_header() or None)
        try:
            result = await call_next(invocation)
        except asyncio.CancelledError:
            span.set_status(Status(StatusCode.ERROR, "cancelled"))
            span.end()
            raise
        finally:
            otel_context.detach(token)
            invocation.request = request
        _finish(span, shape, result)
        metrics = self.pipeline.metrics
        if metrics is not None:
            metrics.record(result, shape.metric_attributes)
        return result


def _finish(span: trace.Span, shape: FunctionShape, result: InvocationResult) -> None:
    if shape.is_http:
        status = http_status(result) if result.succeeded else 500
        if status is not None:
            span.set_attribute("http.response.status_code", status)
    error = result.error
    if not result.succeeded:
        if error is not None:
            span.record_exception(error)
            span.set_attribute("error.type", type(error).__qualname__)
        span.set_status(Status(StatusCode.ERROR, result.error_message or "failed"))
    span.end()
