"""`harness.servicebus`: send Service Bus messages from a test and look at what happened.

    await host.servicebus.send("orders", {"id": 1}, session_id="customer-7")
    await host.advance(60)                                  # lock expiry, TTL, schedules
    assert await host.servicebus.dead_letters("orders") == ['{"id": 1}']
    assert host.servicebus.completed("process_order") == 1

Entities are those of the app's embedded namespace (Config.json, else created on first use).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from funchost.runtime.contracts import Runtime
from funchost.servicebus.namespaces import ServiceBusNamespace, embedded_namespace
from funchost.storage.servicebus import EntityInfo, OutgoingMessage, ReceivedMessage, split_dead_letter
from funchost.triggers.servicebus import listener_of
from funchost.triggers.servicebus.listener import signal_topic

Body = str | bytes | dict[str, Any] | list[Any]


def _body(body: Body) -> bytes:
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode("utf-8")
    return json.dumps(body).encode("utf-8")


class ServiceBusTools:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    @property
    def namespace(self) -> ServiceBusNamespace:
        return embedded_namespace(self.runtime.storage, self.runtime.app_dir, self.runtime.settings)

    async def send(self, entity: str, body: Body, *, scheduled_enqueue_time: datetime | None = None,
                   **properties: Any) -> int:
        """Send one message to a queue or topic (created on first use when no Config.json declares
        entities); `properties` are OutgoingMessage fields (session_id, message_id,
        application_properties, time_to_live, ...). Returns its sequence number (0 if dropped)."""
        [number] = await self.send_many(entity, [body], scheduled_enqueue_time=scheduled_enqueue_time, **properties)
        return number

    async def send_many(self, entity: str, bodies: list[Body], *, scheduled_enqueue_time: datetime | None = None,
                        **properties: Any) -> list[int]:
        namespace = self.namespace
        await namespace.ensure_entity(entity)
        messages = [OutgoingMessage(_body(b), scheduled_enqueue_time=scheduled_enqueue_time, **properties)
                    for b in bodies]
        numbers = await namespace.broker.send(entity, messages)
        self.runtime.signals.publish(signal_topic(namespace.broker.namespace, entity))
        return numbers

    async def peek(self, path: str, max_messages: int = 100) -> list[ReceivedMessage]:
        """Messages still in a queue, subscription or `<path>/$deadletterqueue` (not locked by a peek)."""
        return await self.namespace.broker.peek(path, max_messages)

    async def bodies(self, path: str) -> list[str]:
        return [m.body.decode("utf-8", errors="replace") for m in await self.peek(path)]

    async def dead_letters(self, path: str) -> list[str]:
        """Bodies in the entity's dead-letter sub-queue."""
        name, _ = split_dead_letter(path)
        return await self.bodies(f"{name}/$deadletterqueue")

    async def info(self, path: str) -> EntityInfo:
        """Counts: active, scheduled, deferred, dead_letter, locked."""
        return await self.namespace.broker.get_entity(path)

    def _listener(self, function_name: str) -> Any:
        listener = listener_of(self.runtime, function_name)
        if listener is None:
            raise KeyError(f"no Service Bus listener for function {function_name!r}")
        return listener

    def completed(self, function_name: str) -> int:
        """Messages this host completed for the function (auto-complete after success)."""
        return int(self._listener(function_name).settler.completed)

    def abandoned(self, function_name: str) -> int:
        """Messages this host abandoned for the function (after a failed invocation)."""
        return int(self._listener(function_name).settler.abandoned)
