"""Client operations on the task hub, with the extension's rules (DurableClient).

Used by the management HTTP API (and so by the SDK's client), the CLI and the test harness.
Failures are typed so each caller can answer as the extension does: `ArgumentFailure` (the
extension's ArgumentException: HTTP 400), `NotFound` (404), `Gone` (410), and the storage's
`InstanceExists` (HTTP 500, as DTFx's OrchestrationAlreadyExistsException).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from funchost.durable import history as h
from funchost.durable.episode import new_execution_id
from funchost.durable.functions import DurableFunctions
from funchost.durable.hub import NotifyingHub
from funchost.durable.shim import ArgumentError, compact
from funchost.durable.status import status_payload
from funchost.errors import FunchostError
from funchost.storage.durable import (
    COMPLETED_STATUSES,
    ENTITY,
    RUNNING_STATUSES,
    InstanceQuery,
    InstanceRecord,
    NewInstance,
    Outbound,
    QueryPage,
)

MAX_INSTANCE_ID_LENGTH = 256


class ArgumentFailure(FunchostError):
    """The extension's ArgumentException: the client's input is not acceptable."""


class NotFound(FunchostError):
    pass


class Gone(FunchostError):
    pass


def _invalid_character(c: str) -> bool:
    return c in "/\\?#" or ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F


def entity_instance_id(name: str, key: str) -> str:
    """EntityId.GetSchedulerIdFromEntityId: ``@<lower-cased name>@<key>``."""
    return f"@{name.lower()}@{key}"


@dataclass
class DurableClient:
    hub: NotifyingHub
    functions: DurableFunctions
    overridable_states: str = "NonRunningStates"
    default_version: str = ""

    # -- orchestrations ----------------------------------------------------------------------------

    async def start_new(self, name: str, instance_id: str | None, input_text: str | None,
                        version: str | None = None) -> str:
        """`input_text`: the input as stored (JSON text); the SDK sends a JSON string of JSON text."""
        if self.functions.orchestrator(name) is None:
            try:
                self.functions.catalog().check(name, "orchestrator")
            except ArgumentError as exc:
                raise ArgumentFailure(str(exc)) from None
        if not instance_id:
            instance_id = uuid.uuid4().hex
        elif instance_id.startswith("@"):
            raise ArgumentFailure("instanceId (Parameter 'Orchestration instance ids must not start with @.')")
        elif any(_invalid_character(c) for c in instance_id):
            raise ArgumentFailure("instanceId (Parameter 'Orchestration instance ids must not contain /, \\, #, ?, "
                                  "or control characters.')")
        if len(instance_id) > MAX_INSTANCE_ID_LENGTH:
            raise ArgumentFailure(f"Instance ID lengths must not exceed {MAX_INSTANCE_ID_LENGTH} characters.")
        registered = self.functions.orchestrator(name)
        canonical = name if registered is None else next(
            (n for n in self.functions.names["orchestrator"] if n.lower() == name.lower()), name)
        stored_input = input_text if input_text is not None else "null"
        execution_id = new_execution_id()
        version = self.default_version if version is None else version
        started = h.execution_started(self.hub.clock.now(), instance_id=instance_id, execution_id=execution_id,
                                      name=canonical, version=version, input_text=stored_input)
        dedupe = RUNNING_STATUSES if self.overridable_states == "NonRunningStates" else frozenset()
        await self.hub.create_instance(NewInstance(instance_id, canonical, version, execution_id, stored_input,
                                                   started), dedupe=dedupe)
        return instance_id

    async def get(self, instance_id: str) -> InstanceRecord | None:
        record = await self.hub.store.get_instance(instance_id)
        return record if record is not None and record.kind != ENTITY else None

    async def status(self, instance_id: str, *, show_history: bool = False, show_history_output: bool = False,
                     show_input: bool = True) -> dict[str, Any] | None:
        record = await self.get(instance_id)
        if record is None:
            return None
        events = await self.hub.store.get_history(instance_id) if show_history else None
        return status_payload(record, events, show_input=show_input, show_history_output=show_history_output)

    async def query(self, query: InstanceQuery) -> QueryPage:
        return await self.hub.store.query(query)

    async def raise_event(self, instance_id: str, event_name: str, data_text: str | None) -> None:
        if not event_name:
            raise ArgumentFailure("Value cannot be null. (Parameter 'eventName')")
        record = await self._existing(instance_id)
        if record.status in COMPLETED_STATUSES:
            raise Gone(f"Instance with ID {instance_id} is gone: either completed or failed")
        event = h.event_raised(self.hub.clock.now(), event_name, data_text)
        await self.hub.send([Outbound(instance_id, event)])

    async def terminate(self, instance_id: str, reason: str | None) -> None:
        await self._control(instance_id, "terminate", h.execution_terminated(self.hub.clock.now(), reason))

    async def suspend(self, instance_id: str, reason: str | None) -> None:
        await self._control(instance_id, "suspend", h.execution_suspended(self.hub.clock.now(), reason))

    async def resume(self, instance_id: str, reason: str | None) -> None:
        await self._control(instance_id, "resume", h.execution_resumed(self.hub.clock.now(), reason))

    async def _control(self, instance_id: str, verb: str, event: dict[str, Any]) -> None:
        """A control message, delivered even to a suspended instance; refused once it completed."""
        record = await self._existing(instance_id)
        if record.status in COMPLETED_STATUSES:
            raise Gone(f"Cannot {verb} the orchestration instance {instance_id} because instance is in the "
                       f"{record.status} state.")
        await self.hub.send([Outbound(instance_id, event, control=True)])

    async def restart(self, instance_id: str, new_instance_id: bool = True) -> str:
        record = await self.get(instance_id)
        if record is None:
            raise ArgumentFailure(f"An orchestrastion with the instanceId {instance_id} was not found.")
        return await self.start_new(record.name, None if new_instance_id else instance_id, record.input)

    async def purge(self, instance_id: str) -> int:
        if await self.get(instance_id) is None:
            raise NotFound(f"No instance with ID '{instance_id}' was found.")
        return await self.hub.store.purge([instance_id])

    async def purge_by(self, created_from: datetime, created_to: datetime | None, statuses: frozenset[str]) -> int:
        ids: list[str] = []
        token: str | None = None
        while True:
            page = await self.hub.store.query(InstanceQuery(created_from=created_from, created_to=created_to,
                                                            statuses=statuses, top=1000, continuation=token))
            ids += [record.instance_id for record in page.instances]
            token = page.continuation
            if token is None:
                break
        return await self.hub.store.purge(ids) if ids else 0

    async def _existing(self, instance_id: str) -> InstanceRecord:
        record = await self.get(instance_id)
        if record is None:
            raise NotFound(f"No instance with ID '{instance_id}' was found.")
        return record

    # -- entities ----------------------------------------------------------------------------------

    async def signal_entity(self, name: str, key: str, operation: str, input_text: str | None) -> None:
        """`input_text`: the request's serialised input (None when the signal has no input)."""
        if any(_invalid_character(c) for c in key):
            raise ArgumentFailure("entityKey (Parameter 'Entity keys must not contain /, \\, #, ?, or control "
                                  "characters.')")
        try:
            self.functions.catalog().check(name, "entity")
        except ArgumentError as exc:
            raise ArgumentFailure(str(exc)) from None
        request: dict[str, Any] = {"op": operation, "signal": True}
        if input_text is not None:
            request["input"] = input_text
        request["id"] = str(uuid.uuid4())
        request["Timestamp"] = h.format_time(self.hub.clock.now())
        event = h.event_raised(self.hub.clock.now(), "op", compact(request))
        await self.hub.send([Outbound(entity_instance_id(name, key), event)])

    async def read_entity(self, name: str, key: str) -> tuple[bool, str | None]:
        record = await self.hub.store.get_instance(entity_instance_id(name, key))
        if record is None or not record.entity_exists:
            return False, None
        return True, record.entity_state
