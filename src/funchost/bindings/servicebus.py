"""The Service Bus output binding ("serviceBus"): `service_bus_queue_output` / `service_bus_topic_output`.

As the host does it (shared spec §1.7): the value is written through an
`IAsyncCollector<string>`, split by `ReadAsEnumerable` first — a string that looks like a JSON
array becomes one message per element, a JSON object one message (re-rendered by Json.NET,
indented) — and each item becomes a message with a UTF-8 body, `ContentType` "text/plain" and
a new MessageId. Python output cannot set any other property (no SessionId, so a
session-enabled entity refuses it). Messages are sent after the function returns, in one
atomic send; local listeners of the entity are woken.
"""

from __future__ import annotations

import json
import re
from typing import Any

from azure.functions.meta import Datum

from funchost.bindings.expressions import invocation_resolver
from funchost.errors import AppLoadError, ConfigError, InvocationError, UnsupportedBindingError
from funchost.indexing.spec import BindingSpec, FunctionSpec
from funchost.invocation.contracts import InvocationRequest
from funchost.runtime.contracts import Runtime
from funchost.servicebus.namespaces import ServiceBusNamespace, open_namespace, resolve_connection
from funchost.storage.servicebus import (
    OutgoingMessage,
    ServiceBusError,
    validate_entity_name,
)
from funchost.triggers.servicebus.listener import signal_topic

TEXT_PLAIN = "text/plain"
_EXPRESSION = re.compile(r"\{([^{}]+)\}")
NULL_MESSAGE = "A brokered message cannot contain a null string instance."

# Real namespaces: one SDK client per (host, connection setting), as the extension caches senders.
_REAL: dict[tuple[int, str], ServiceBusNamespace] = {}


def _looks_like_json(text: str) -> bool:
    """Utility.IsJson: trimmed, starts with '{' and ends with '}', or '[' ... ']'."""
    stripped = text.strip()
    return (stripped.startswith("{") and stripped.endswith("}")) or (stripped.startswith("[") and stripped.endswith("]"))


def _token_text(token: Any) -> str:
    """JToken.ToString(): strings raw, objects/arrays indented, booleans as .NET prints them."""
    if token is None:
        raise InvocationError(NULL_MESSAGE)
    if isinstance(token, str):
        return token
    if isinstance(token, bool):
        return "True" if token else "False"
    if isinstance(token, dict | list):
        return json.dumps(token, indent=2, ensure_ascii=False)
    return json.dumps(token)


def message_texts(datum: Datum) -> list[bytes]:
    """The message bodies one output value stands for."""
    if datum.type == "bytes":
        return [bytes(datum.value)]
    if datum.type in ("int", "double"):
        return [str(datum.value).encode("utf-8")]
    if datum.type not in ("string", "json"):
        raise ConfigError(f"a Service Bus output cannot be written from a '{datum.type}' value")
    text = str(datum.value)
    if not _looks_like_json(text):
        return [text.encode("utf-8")]
    try:
        parsed = json.loads(text)
    except ValueError:
        return [text.encode("utf-8")]
    items = parsed if isinstance(parsed, list) else [parsed]
    return [_token_text(item).encode("utf-8") for item in items]


def entity_of(binding: BindingSpec) -> tuple[str, bool]:
    """(queue or topic name, is_topic)."""
    queue = binding.get("queueName")
    if queue:
        return str(queue), False
    return str(binding.get("topicName") or ""), True


class ServiceBusOutputSupport:
    binding_type = "serviceBus"

    def validate(self, binding: BindingSpec, function: FunctionSpec, runtime: Runtime) -> None:
        def error(message: str, kind: type[AppLoadError] = AppLoadError) -> AppLoadError:
            return kind(f"Service Bus output '{binding.name}': {message}", function=function.name,
                        file=function.script_file, line=function.source_line)

        if binding.direction != "out":
            raise error("a 'serviceBus' binding can only be an output", UnsupportedBindingError)
        name, is_topic = entity_of(binding)
        if not name:
            raise error("set queue_name or topic_name")
        try:
            if "{" not in name:
                validate_entity_name(name, "topic" if is_topic else "queue")
            resolve_connection(binding.get("connection"), runtime.settings)
        except ServiceBusError as exc:
            raise error(str(exc).split(": ", 1)[-1]) from None
        except ConfigError as exc:
            raise error(str(exc)) from None

    async def read(self, binding: BindingSpec, request: InvocationRequest, runtime: Runtime) -> Datum:
        raise UnsupportedBindingError("a 'serviceBus' binding can only be an output", function=request.function.name)

    async def write(self, binding: BindingSpec, datum: Datum, request: InvocationRequest, runtime: Runtime) -> None:
        if datum is None or datum.value is None:
            return
        name, is_topic = entity_of(binding)
        name = invocation_resolver(request, runtime).resolve(name)
        namespace = _namespace(binding, runtime)
        if is_topic:
            await namespace.ensure_topic(name)
        else:
            await namespace.ensure_queue(name)
        messages = [OutgoingMessage(body, content_type=TEXT_PLAIN) for body in message_texts(datum)]
        await namespace.broker.send(name, messages)
        runtime.signals.publish(signal_topic(namespace.broker.namespace, name))


def _namespace(binding: BindingSpec, runtime: Runtime) -> ServiceBusNamespace:
    connection = resolve_connection(binding.get("connection"), runtime.settings)
    if connection.embedded:
        return open_namespace(connection, runtime.storage, runtime.app_dir, runtime.settings)
    key = (id(runtime), connection.setting_name.lower())
    if key not in _REAL:
        _REAL[key] = open_namespace(connection, runtime.storage, runtime.app_dir, runtime.settings)
    return _REAL[key]


SUPPORT = ServiceBusOutputSupport()
