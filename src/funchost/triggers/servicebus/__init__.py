"""The Service Bus trigger ("serviceBusTrigger"): `service_bus_queue_trigger` and `service_bus_topic_trigger`.

listener.py decides when to receive (concurrency, sessions, batches), processor.py renews locks
and settles, messages.py builds the invocation the worker would receive, options.py reads
host.json. The namespace (embedded broker or a real one) comes from `funchost.servicebus`.
A function whose entity is missing or mismatched is reported in error when its listener starts;
the rest of the app runs.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from funchost.errors import AppLoadError, ConfigError, InvalidInput
from funchost.indexing.spec import BindingSpec, FunctionSpec
from funchost.invocation.contracts import InvocationRequest
from funchost.runtime.contracts import Listener, Runtime
from funchost.servicebus.config import load_config
from funchost.servicebus.namespaces import announce, open_namespace, resolve_connection
from funchost.storage.servicebus import (
    ReceivedMessage,
    ServiceBusError,
    split_dead_letter,
    subscription_path,
    validate_entity_name,
    validate_subscription_name,
)
from funchost.triggers.servicebus.listener import ServiceBusListener
from funchost.triggers.servicebus.messages import build_batch, build_single
from funchost.triggers.servicebus.options import ServiceBusOptions

log = logging.getLogger("funchost.servicebus")

# (id(runtime), function name) -> its listener, for the test tools' completion counts.
_LISTENERS: dict[tuple[int, str], ServiceBusListener] = {}


def listener_of(runtime: Runtime, function_name: str) -> ServiceBusListener | None:
    return _LISTENERS.get((id(runtime), function_name))


def entity_of(function: FunctionSpec) -> tuple[str, str]:
    """(receive path, wake-up entity): the queue, or `<topic>/Subscriptions/<sub>` and its topic;
    either may end in `/$deadletterqueue`, the usual way to process dead letters on Azure (the
    extension hands the path to the SDK's receiver, which reads the sub-queue)."""
    trigger = function.trigger
    queue = trigger.get("queueName")
    if queue:
        base, _ = split_dead_letter(str(queue))
        return str(queue), base.partition("/Subscriptions/")[0]
    topic, subscription = str(trigger.get("topicName") or ""), str(trigger.get("subscriptionName") or "")
    return subscription_path(topic, subscription), topic


def _validate_source(trigger: BindingSpec) -> None:
    """The entity a trigger reads: a queue, `topic/Subscriptions/sub` as a queue name, or a topic and
    subscription; each may name its `$deadletterqueue` sub-queue."""
    if trigger.get("queueName"):
        path, _ = split_dead_letter(str(trigger.get("queueName")))
        topic, marker, subscription = path.partition("/Subscriptions/")
        if marker:
            validate_entity_name(topic, "topic")
            validate_subscription_name(subscription)
        else:
            validate_entity_name(path, "queue")
    elif trigger.get("topicName"):
        validate_entity_name(str(trigger.get("topicName")), "topic")
        validate_subscription_name(split_dead_letter(str(trigger.get("subscriptionName") or ""))[0])
    else:
        raise ConfigError("set queue_name, or topic_name and subscription_name")


def servicebus_options(runtime: Runtime) -> ServiceBusOptions:
    try:
        options = runtime.options.extension("serviceBus")
    except KeyError:
        return ServiceBusOptions()
    return options if isinstance(options, ServiceBusOptions) else ServiceBusOptions()


def _flag(function: FunctionSpec, key: str, default: bool) -> bool:
    value = function.trigger.get(key)
    if value is None:
        return default
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if not isinstance(value, bool):
        raise ConfigError(f"serviceBusTrigger: '{key}' must be true or false, got {value!r}")
    return value


def is_batch(function: FunctionSpec) -> bool:
    cardinality = str(function.trigger.get("cardinality") or "one").lower()
    if cardinality not in ("one", "many"):
        raise ConfigError(f"serviceBusTrigger: cardinality must be 'one' or 'many', got {cardinality!r}")
    return cardinality == "many"



class ServiceBusTriggerSupport:
    trigger_type = "serviceBusTrigger"

    def validate(self, function: FunctionSpec, runtime: Runtime) -> None:
        def fail(message: str) -> AppLoadError:
            return AppLoadError(f"serviceBusTrigger: {message}", function=function.name,
                                file=function.script_file, line=function.source_line)

        trigger = function.trigger
        try:
            _validate_source(trigger)
            is_batch(function)
            _flag(function, "isSessionsEnabled", False)
            _flag(function, "autoCompleteMessages", True)
            connection = resolve_connection(trigger.get("connection"), runtime.settings)
            if connection.embedded:
                load_config(runtime.app_dir, runtime.settings)  # a broken Config.json names itself
        except (ServiceBusError, ConfigError) as exc:
            message = str(exc).split(": ", 1)[-1] if isinstance(exc, ServiceBusError) else str(exc)
            raise fail(message) from None

    def create_listener(self, function: FunctionSpec, runtime: Runtime) -> Listener:
        """A namespace that cannot be opened, an entity that is missing or does not fit the
        function (sessions) raise here or in `start`: the host puts the function in error and
        retries, as for any listener."""
        trigger = function.trigger
        connection = resolve_connection(trigger.get("connection"), runtime.settings)
        shared = "the PostgreSQL server (--storage postgres)" if runtime.storage.kind == "postgres" else None
        announce(connection, runtime, runtime.data_dir, shared)
        namespace = open_namespace(connection, runtime.storage, runtime.app_dir, runtime.settings)
        options = servicebus_options(runtime)
        auto_complete = _flag(function, "autoCompleteMessages", options.auto_complete_messages)
        path, wake = entity_of(function)
        endpoint = connection.fully_qualified_namespace or f"{namespace.broker.namespace} (embedded)"

        def report(reason: str) -> None:  # a real namespace found unreachable after the start
            runtime.function_errors.add(function.name, reason)
            log.error("Function 'Functions.%s' is in error: %s. The rest of the app runs.", function.name, reason,
                      extra={"event": "FunctionError", "function": function.name, "error": reason})

        listener = ServiceBusListener(function, runtime, namespace, path, wake, options,
                                      sessions=_flag(function, "isSessionsEnabled", False),
                                      batch=is_batch(function), auto_complete=auto_complete, endpoint=endpoint,
                                      on_error=report)
        _LISTENERS[(id(runtime), function.name)] = listener
        return listener

    def describe(self, function: FunctionSpec, runtime: Runtime) -> str:
        return "serviceBusTrigger"

    async def admin_request(self, function: FunctionSpec, runtime: Runtime, body: Any) -> InvocationRequest:
        """`{"input": "..."}` becomes a message as `ServiceBusModelFactory` builds it from a string
        (ConvertFromString): the body only, every other property at its default."""
        if not isinstance(body, dict) or body.get("input") is None:
            raise InvalidInput("the request body must be a JSON object with an 'input' property")
        value = body["input"]
        text = value if isinstance(value, str) else json.dumps(value)
        message = ReceivedMessage(body=text.encode("utf-8"), message_id="", sequence_number=0,
                                  enqueued_time=datetime(1, 1, 1, tzinfo=UTC), expires_at=None, delivery_count=0,
                                  lock_token="00000000-0000-0000-0000-000000000000", locked_until=None,
                                  state="active")
        if is_batch(function):
            return build_batch(function, [message], entity_of(function)[0])
        return build_single(function, message, entity_of(function)[0])


SUPPORT = ServiceBusTriggerSupport()
