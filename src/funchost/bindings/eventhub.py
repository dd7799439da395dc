"""The Event Hubs output binding ("eventHub"), as the host and the extension write it
(servicebus-eventhubs 2.8).

The library's `EventHubConverter` has already encoded the value (str -> string, bytes -> bytes,
int -> int, list -> json). The host then splits it into items (`FunctionBinding.ReadAsEnumerable`):
a JSON array, or a string that looks like one, gives one event per element; a string that looks
like a JSON object is one event re-rendered by Json.NET (indented); anything else is one event.
`EventHubAsyncCollector` gathers the events without a partition key into ONE batch, sent after
the function returned, so they all land in one partition (round robin across sends); a batch
that would pass 1 MB is sent and a new one started; an event too large for an empty batch fails
the invocation with the collector's message.
"""

from __future__ import annotations

import json
from typing import Any

from azure.functions.meta import Datum

from funchost.bindings.expressions import invocation_resolver, parameter_names
from funchost.errors import AppLoadError, ConfigError, StorageError, UnsupportedBindingError
from funchost.eventhubs.namespaces import eventhubs_for
from funchost.indexing.spec import BindingSpec, FunctionSpec
from funchost.invocation.contracts import InvocationRequest
from funchost.runtime.contracts import Runtime
from funchost.storage.eventhubs import MAX_PUBLISH_BYTES, EventToSend, batch_size

_MISSING = object()


def _looks_like_json(text: str) -> bool:
    """The host's `Utility.IsJson`: trimmed, starts and ends with matching braces or brackets."""
    t = text.strip()
    return (t.startswith("{") and t.endswith("}")) or (t.startswith("[") and t.endswith("]"))


def render_token(value: Any) -> str:
    """`JToken.ToString()`: objects and arrays indented, strings raw, .NET spellings of scalars."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "True" if value else "False"
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return json.dumps(value, indent=2, ensure_ascii=False)
    return str(value)


def event_bodies(datum: Datum) -> list[bytes]:
    """The events an output value stands for, in order."""
    if datum.type == "bytes":
        return [bytes(datum.value)]
    if datum.type in ("int", "double"):
        return [str(datum.value).encode("utf-8")]
    if datum.type == "json":
        parsed = json.loads(datum.value) if isinstance(datum.value, str | bytes) else datum.value
        return [render_token(item).encode("utf-8") for item in (parsed if isinstance(parsed, list) else [parsed])]
    if datum.type == "string":
        text = str(datum.value)
        if _looks_like_json(text):
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = _MISSING
            if isinstance(parsed, list):
                return [render_token(item).encode("utf-8") for item in parsed]
            if isinstance(parsed, dict):
                return [render_token(parsed).encode("utf-8")]
        return [text.encode("utf-8")]
    raise ConfigError(f"an Event Hubs output cannot be written from a '{datum.type}' value")


def batches(events: list[EventToSend]) -> list[list[EventToSend]]:
    """`EventHubAsyncCollector`: fill a batch up to the publish limit, then start the next one."""
    result: list[list[EventToSend]] = []
    current: list[EventToSend] = []
    for event in events:
        if batch_size([event]) > MAX_PUBLISH_BYTES:
            raise StorageError(f"Event is too large. Event is approximately {len(event.body)}b and max size is "
                               f"{MAX_PUBLISH_BYTES}b", code="MessageSizeExceeded", status=413)
        if current and batch_size([*current, event]) > MAX_PUBLISH_BYTES:
            result.append(current)
            current = []
        current.append(event)
    if current:
        result.append(current)
    return result


class EventHubOutputSupport:
    binding_type = "eventHub"

    def validate(self, binding: BindingSpec, function: FunctionSpec, runtime: Runtime) -> None:
        def error(message: str, kind: type[AppLoadError] = AppLoadError) -> AppLoadError:
            return kind(message, function=function.name, file=function.script_file, line=function.source_line)

        if binding.direction != "out":
            raise error("an 'eventHub' binding can only be an output", UnsupportedBindingError)
        name = str(binding.get("eventHubName") or "")
        try:
            if parameter_names(name):
                eventhubs_for(runtime).connection(binding.get("connection"))  # the name is known per invocation
            else:
                service = eventhubs_for(runtime)
                service.check(service.target(binding.get("connection"), name))
        except (ConfigError, StorageError) as exc:
            raise error(f"eventHub output '{binding.name}': {exc}") from None

    async def read(self, binding: BindingSpec, request: InvocationRequest, runtime: Runtime) -> Datum:
        raise UnsupportedBindingError("an 'eventHub' binding can only be an output", function=request.function.name)

    async def write(self, binding: BindingSpec, datum: Datum, request: InvocationRequest, runtime: Runtime) -> None:
        if datum is None or datum.value is None:
            return
        resolver = invocation_resolver(request, runtime)
        service = eventhubs_for(runtime)
        target = service.target(binding.get("connection"), resolver.resolve(str(binding.get("eventHubName") or "")))
        for batch in batches([EventToSend(body) for body in event_bodies(datum)]):
            await service.send(target, batch)


SUPPORT = EventHubOutputSupport()
