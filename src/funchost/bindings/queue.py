"""The Azure Queue storage output binding ("queue").

The library's `QueueMessageOutConverter` has already turned the Python value into a Datum:
``string`` / ``bytes`` for one message, ``json`` for a `func.QueueMessage` or a list. Each message
is encoded per ``extensions.queues.messageEncoding`` and put with create-on-404, as the
extension's AddMessageAndCreateIfNotExists does; local listeners of that queue are woken.
"""

from __future__ import annotations

import json
import re
from typing import Any

from azure.functions.meta import Datum

from funchost.bindings.expressions import invocation_resolver
from funchost.errors import AppLoadError, ConfigError, InvalidResourceName, UnsupportedBindingError
from funchost.indexing.spec import BindingSpec, FunctionSpec
from funchost.invocation.contracts import InvocationRequest
from funchost.runtime.contracts import BindingSupport, Runtime
from funchost.storage.queue_rules import validate_queue_name
from funchost.storage.queue_send import send_message
from funchost.triggers.queue import queues_options
from funchost.triggers.queue.messages import encode_body

_EXPRESSION = re.compile(r"\{([^{}]+)\}")


def resolve_queue_name(template: str, request: InvocationRequest, runtime: Runtime) -> str:
    """The queue name with its binding expressions resolved (`{queueTrigger}`, `{data.x}`,
    `{rand-guid}`, `{DateTime}`, ...), lower-cased as the extension's queue name resolver does."""
    return invocation_resolver(request, runtime).resolve(template).lower()


def message_bodies(datum: Datum) -> list[bytes]:
    """The message bodies an output Datum stands for (one per message)."""
    if datum.type == "bytes":
        return [bytes(datum.value)]
    if datum.type == "string":
        return [str(datum.value).encode("utf-8")]
    if datum.type == "json":
        value = json.loads(datum.value) if isinstance(datum.value, str | bytes) else datum.value
        items = value if isinstance(value, list) else [value]
        return [_item_body(item) for item in items]
    if datum.type in ("int", "double"):
        return [str(datum.value).encode("utf-8")]
    raise ConfigError(f"a queue output cannot be written from a '{datum.type}' value")


def _item_body(item: Any) -> bytes:
    if isinstance(item, str):
        return item.encode("utf-8")
    if isinstance(item, dict) and "body" in item and set(item) <= {"id", "body"}:
        return str(item["body"]).encode("utf-8")  # a func.QueueMessage as the converter writes it
    return json.dumps(item).encode("utf-8")


class QueueOutputSupport:
    binding_type = "queue"

    def validate(self, binding: BindingSpec, function: FunctionSpec, runtime: Runtime) -> None:
        def error(message: str, kind: type[AppLoadError] = AppLoadError) -> AppLoadError:
            return kind(message, function=function.name, file=function.script_file, line=function.source_line)

        if binding.direction != "out":
            raise error("a 'queue' binding can only be an output", UnsupportedBindingError)
        name = str(binding.get("queueName") or "")
        if not _EXPRESSION.search(name):
            try:
                validate_queue_name(name.lower())
            except InvalidResourceName as exc:
                raise error(f"queue output '{binding.name}': {exc}") from None
        try:
            runtime.storage.connection(binding.get("connection"), "queue")
        except ConfigError as exc:
            raise error(f"queue output '{binding.name}': {exc}") from None

    async def read(self, binding: BindingSpec, request: InvocationRequest, runtime: Runtime) -> Datum:
        raise UnsupportedBindingError("a 'queue' binding can only be an output", function=request.function.name)

    async def write(
        self, binding: BindingSpec, datum: Datum, request: InvocationRequest, runtime: Runtime
    ) -> None:
        if datum is None or datum.value is None:
            return
        queue = resolve_queue_name(str(binding.get("queueName") or ""), request, runtime)
        service = runtime.storage.queues(binding.get("connection"))
        encoding = queues_options(runtime).message_encoding
        for body in message_bodies(datum):
            await send_message(service, queue, encode_body(body, encoding), faults=runtime.faults)


SUPPORT: BindingSupport = QueueOutputSupport()
