"""Where an invocation's trace continues from: the caller's W3C trace context, per trigger.

* HTTP: the request's ``traceparent`` / ``tracestate`` headers (the host's ASP.NET Core
  instrumentation continues them; the invocation span is a child of the caller's span).
* Service Bus: the message's ``traceparent`` / ``tracestate`` application properties, or
  ``Diagnostic-Id`` (what the Azure SDKs stamp on each message they send; the processor's
  ``ServiceBusProcessor.ProcessMessage`` span is its child, Azure.Messaging.ServiceBus
  TROUBLESHOOTING "Instrumentation behaviors"). A batch links every message's context instead.
* Event Hubs: each event's properties, the same way (a single event is the parent, a batch is
  linked, as the OpenTelemetry messaging conventions say for batch receives).
* Other triggers carry no trace context (Storage queues, timers, ...): the span starts a trace,
  as the WebJobs SDK's function-level activity does when there is none
  (azure-webjobs-sdk #3146, azure-functions-host #11311).

Anything that is not a valid W3C ``traceparent`` (the old hierarchical Request-Id format, a
malformed header) is ignored: the invocation starts a new trace.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from funchost.invocation.contracts import InvocationRequest

_PROPAGATOR = TraceContextTextMapPropagator()

# trigger type -> binding data names of one message's / a batch's application properties
MESSAGE_PROPERTIES: dict[str, tuple[str, str]] = {
    "serviceBusTrigger": ("ApplicationProperties", "ApplicationPropertiesArray"),
    "eventHubTrigger": ("Properties", "PropertiesArray"),
}


def incoming(request: InvocationRequest) -> tuple[Context | None, list[trace.Link]]:
    """The parent context (None: a new trace) and the links of an invocation."""
    if request.trace_parent:
        return _valid(_extract(request.trace_parent, request.trace_state)), []
    names = MESSAGE_PROPERTIES.get(request.function.trigger_type)
    if names is None:
        return None, []
    single, batch = names
    data = request.binding_data
    properties = data.get(single)
    if isinstance(properties, Mapping):
        return _valid(_from_properties(properties)), []
    links = []
    for item in data.get(batch) or ():
        context = _valid(_from_properties(item)) if isinstance(item, Mapping) else None
        if context is not None:
            links.append(trace.Link(trace.get_current_span(context).get_span_context()))
    return None, links


def _from_properties(properties: Mapping[str, Any]) -> Context:
    parent = properties.get("traceparent") or properties.get("Diagnostic-Id")
    state = properties.get("tracestate")
    return _extract(parent if isinstance(parent, str) else None, state if isinstance(state, str) else None)


def _extract(trace_parent: str | None, trace_state: str | None) -> Context:
    carrier = {"traceparent": trace_parent or ""}
    if trace_state:
        carrier["tracestate"] = trace_state
    return _PROPAGATOR.extract(carrier)


def _valid(context: Context) -> Context | None:
    return context if trace.get_current_span(context).get_span_context().is_valid else None


def traceparent(span_context: trace.SpanContext) -> str:
    """The W3C header value of a span (what ``context.trace_context.trace_parent`` holds)."""
    return f"00-{span_context.trace_id:032x}-{span_context.span_id:016x}-{int(span_context.trace_flags):02x}"
