"""What an invocation's span is called and says, worked out once per function.

Names and kinds follow the span the Functions host makes current when it invokes the worker
(the one whose id becomes ``context.trace_context.trace_parent``):

* HTTP: the ASP.NET Core server span, ``"<METHOD> <route template>"`` (``GET api/hello``),
  enriched with ``faas.trigger=http`` and ``http.route`` (azure-functions-host
  ``OpenTelemetryConfigurationExtensions.ConfigureTracing``, ``EnrichWithHttpResponse``).
* Service Bus: the processor's consumer span ``ServiceBusProcessor.ProcessMessage`` (one message;
  a batch is received without a processor span, so it gets the function-level span below).
* Event Hubs: the processor's consumer span ``EventProcessor.Process``.
* Everything else: the WebJobs function-level server span named after the function's log name,
  ``Functions.<name>`` (azure-functions-host ``ActivitySourceWrapper``, azure-webjobs-sdk #3146).

Attributes: ``faas.name`` (the host adds it in ``GrpcWorkerChannel.AddAdditionalTraceContext``),
``faas.trigger`` with the FaaS semantic conventions' well-known values (``http``, ``pubsub``,
``timer``, ``datasource``, ``other``), ``faas.invocation_id``, ``faas.instance`` (this host
process), ``faas.coldstart`` on the host's first invocation, and per trigger what the
conventions add: ``faas.cron`` for timers, ``http.request.method`` / ``url.path`` /
``http.route`` / ``http.response.status_code`` for HTTP, ``messaging.*`` for queues. The query
string and headers are never recorded (function keys travel in ``?code=``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry.trace import SpanKind

from funchost.indexing.spec import FunctionSpec
from funchost.invocation.contracts import InvocationRequest, InvocationResult

FAAS_TRIGGERS = {
    "httpTrigger": "http",
    "timerTrigger": "timer",
    "queueTrigger": "pubsub",
    "serviceBusTrigger": "pubsub",
    "eventHubTrigger": "pubsub",
    "eventGridTrigger": "pubsub",
    "cosmosDBTrigger": "datasource",
    "blobTrigger": "datasource",
}
MESSAGING_SYSTEMS = {"serviceBusTrigger": "servicebus", "eventHubTrigger": "eventhubs"}
# trigger type -> the binding property naming what it consumes
DESTINATIONS = {"queueTrigger": "queueName", "serviceBusTrigger": "queueName", "eventHubTrigger": "eventHubName"}


class FunctionShape:
    """The fixed part of every span of one function."""

    def __init__(self, function: FunctionSpec, route_prefix: str) -> None:
        trigger = function.trigger_type
        self.function = function
        self.faas_trigger = FAAS_TRIGGERS.get(trigger, "other")
        self.metric_attributes: dict[str, Any] = {"faas.name": function.name, "faas.trigger": self.faas_trigger}
        self.attributes: dict[str, Any] = dict(self.metric_attributes)
        self.is_http = trigger == "httpTrigger"
        self.name = f"Functions.{function.name}"
        self.kind = SpanKind.SERVER
        self.route = ""
        if self.is_http:
            from funchost.triggers.http.routing import full_template, function_route

            self.route = full_template(route_prefix, function_route(function))
            self.attributes["http.route"] = self.route
        elif trigger == "serviceBusTrigger" and str(function.trigger.get("cardinality") or "one").lower() != "many":
            self.name, self.kind = "ServiceBusProcessor.ProcessMessage", SpanKind.CONSUMER
        elif trigger == "eventHubTrigger":
            self.name, self.kind = "EventProcessor.Process", SpanKind.CONSUMER
        elif trigger == "timerTrigger" and function.trigger.get("schedule"):
            self.attributes["faas.cron"] = str(function.trigger.get("schedule"))
        if trigger in MESSAGING_SYSTEMS:
            self.attributes["messaging.system"] = MESSAGING_SYSTEMS[trigger]
        destination = function.trigger.get(DESTINATIONS.get(trigger, "")) or function.trigger.get("topicName")
        if destination and trigger in DESTINATIONS:
            self.attributes["messaging.destination.name"] = str(destination)
            self.attributes["messaging.operation.type"] = "process"

    def span_name(self, request: InvocationRequest) -> str:
        if self.is_http:
            method = request.details.get("Method") or "HTTP"
            return f"{method} {self.route}"
        return self.name

    def start_attributes(self, request: InvocationRequest, instance: str, cold: bool) -> dict[str, Any]:
        attributes = dict(self.attributes)
        attributes["faas.invocation_id"] = request.invocation_id
        attributes["faas.instance"] = instance
        if cold:
            attributes["faas.coldstart"] = True
        details = request.details
        if self.is_http:
            attributes["http.request.method"] = str(details.get("Method") or "")
            path = str(details.get("Path") or "")
            attributes["url.path"] = path.split("?", 1)[0]
        else:
            message_id = details.get("MessageId")
            if message_id:
                attributes["messaging.message.id"] = str(message_id)
            count = details.get("Count")
            if isinstance(count, int):
                attributes["messaging.batch.message_count"] = count
        return attributes


def http_status(result: InvocationResult) -> int | None:
    """The status code of an HTTP function's response, from its encoded output."""
    for datum in result.outputs.values():
        if getattr(datum, "type", None) == "http" and isinstance(datum.value, Mapping):
            status: Any = datum.value.get("status_code")
            try:
                return int(getattr(status, "value", status))
            except (TypeError, ValueError):
                return None
    return None
