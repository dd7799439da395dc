"""``host.durable``: drive Durable Functions in a `HostHarness`, on its manual clock.

    instance = await host.durable.start("approval", {"amount": 100})
    await host.advance(3 * 24 * 3600)             # three days of durable timers, in milliseconds
    await host.durable.raise_event(instance, "Approved", True)
    status = await host.durable.wait(instance)
    assert status["runtimeStatus"] == "Completed"

Inputs and event data are Python values, delivered as the orchestrator reads them (as a JSON body
posted to the management API is); statuses are the management API's JSON; `history()` returns
the events exactly as the SDK replays them.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from azure.functions._durable_functions import _serialize_custom_object

from funchost.durable.client import DurableClient
from funchost.durable.service import DurableService
from funchost.durable.shim import compact
from funchost.errors import FunchostError
from funchost.runtime.contracts import Runtime
from funchost.storage.durable import COMPLETED_STATUSES


def _text(value: Any) -> str:
    """A Python value as stored JSON text (custom objects as the SDK serialises them)."""
    return compact(json.loads(json.dumps(value, default=_serialize_custom_object)))


class DurableTools:
    def __init__(self, runtime: Runtime, idle: Callable[[], Awaitable[None]] | None = None) -> None:
        self.runtime = runtime
        self.idle = idle  # the harness's wait_until_idle: each call returns once the host has settled

    @property
    def client(self) -> DurableClient:
        service = self.runtime.services.find(DurableService)
        if service is None:
            raise FunchostError("the app has no durable functions (or the durable service did not start)")
        return service.client

    async def _idle(self) -> None:
        if self.idle is not None:
            await self.idle()

    async def start(self, orchestrator: str, input: Any = None, *, instance_id: str | None = None) -> str:
        """Start an orchestration as the SDK's ``client.start_new`` does; returns the instance id."""
        stored = None if input is None else compact(_text(input))
        instance = await self.client.start_new(orchestrator, instance_id, stored)
        await self._idle()
        return instance

    async def status(self, instance_id: str, *, history: bool = False) -> dict[str, Any] | None:
        return await self.client.status(instance_id, show_history=history, show_history_output=history)

    async def history(self, instance_id: str) -> list[dict[str, Any]]:
        """The current execution's history events, as stored and replayed."""
        return await self.client.hub.store.get_history(instance_id)

    async def wait(self, instance_id: str) -> dict[str, Any]:
        """Let the host finish what it can do now, then return the status (terminal or not)."""
        await self._idle()
        status = await self.status(instance_id)
        if status is None:
            raise FunchostError(f"no orchestration instance '{instance_id}'")
        return status

    async def raise_event(self, instance_id: str, name: str, data: Any = None) -> None:
        await self.client.raise_event(instance_id, name, _text(data))
        await self._idle()

    async def terminate(self, instance_id: str, reason: str | None = None) -> None:
        await self.client.terminate(instance_id, reason)
        await self._idle()

    async def suspend(self, instance_id: str, reason: str | None = None) -> None:
        await self.client.suspend(instance_id, reason)
        await self._idle()

    async def resume(self, instance_id: str, reason: str | None = None) -> None:
        await self.client.resume(instance_id, reason)
        await self._idle()

    async def purge(self, instance_id: str) -> int:
        return await self.client.purge(instance_id)

    async def signal_entity(self, name: str, key: str, operation: str, input: Any = None) -> None:
        await self.client.signal_entity(name, key, operation, None if input is None else compact(_text(input)))
        await self._idle()

    async def entity_state(self, name: str, key: str) -> Any:
        """The entity's state as a Python value; None when the entity does not exist."""
        exists, state = await self.client.read_entity(name, key)
        return json.loads(state) if exists and state is not None else None

    @staticmethod
    def is_finished(status: dict[str, Any]) -> bool:
        return status.get("runtimeStatus") in COMPLETED_STATUSES
