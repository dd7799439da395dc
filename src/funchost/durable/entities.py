"""Running a batch of entity operations (TaskEntityShim, out-of-process).

The requests waiting in an entity's inbox (oldest first, at most ``maxEntityOperationBatchSize``)
go to the entity function in one call, with the entity's state. The SDK returns the new state and
one result per operation; the state is stored, and every operation that was a call (not a
signal) gets its response event, ``EventRaised(<request id>, {"result": ...})`` with
``"exceptionType": "Error"`` when it failed, delivered to the calling orchestration's execution.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from azure.functions.meta import Datum

from funchost.durable import history as h
from funchost.durable import protocol
from funchost.durable.functions import DurableFunctions
from funchost.durable.hub import NotifyingHub
from funchost.durable.shim import compact
from funchost.invocation.contracts import FunctionInvoker, InvocationRequest
from funchost.storage.durable import Commit, InstanceUpdate, Outbound, WorkItem

log = logging.getLogger("funchost.durable")
REASON = "(null)"


def split_entity_id(instance_id: str) -> tuple[str, str]:
    """``@name@key`` -> (name, key): the name ends at the second ``@``."""
    name, _, key = instance_id[1:].partition("@")
    return name, key


class EntityRunner:
    def __init__(self, hub: NotifyingHub, functions: DurableFunctions, invoker: FunctionInvoker) -> None:
        self.hub = hub
        self.functions = functions
        self.invoker = invoker

    async def run(self, item: WorkItem) -> Commit | None:
        record = item.instance
        name, key = split_entity_id(record.instance_id)
        requests = []
        for message in item.messages:
            event = message.event
            if h.event_type(event) is h.EventType.EventRaised and str(event.get("Name", "")).startswith("op"):
                try:
                    requests.append(json.loads(event.get("Input") or "{}"))
                except ValueError:
                    log.warning("durable: dropped an unreadable request for entity '%s'", record.instance_id)
        consumed = [m.id for m in item.messages]
        if not requests:
            return Commit(_keep(record.entity_exists, record.entity_state), consumed)
        batch = [{"name": r.get("op"), "input": r.get("input"), "isSignal": bool(r.get("signal"))} for r in requests]
        outcome = await self._call(name, key, record.entity_exists, record.entity_state, batch)
        if outcome is None:
            return None
        exists, state, results = outcome
        now = self.hub.clock.now()
        responses = []
        for request, result in zip(requests, results, strict=False):
            if request.get("signal") or not request.get("parent"):
                continue
            response: dict[str, Any] = {"result": result.get("result")}
            if result.get("isError"):
                response["exceptionType"] = "Error"
            event = h.event_raised(now, str(request.get("id")), compact(response))
            responses.append(Outbound(str(request["parent"]), event, request.get("parentExecution")))
        return Commit(_keep(exists, state), consumed, messages=responses)

    async def _call(self, name: str, key: str, exists: bool, state: str | None,
                    batch: list[dict[str, Any]]) -> tuple[bool, str | None, list[dict[str, Any]]] | None:
        function = self.functions.entity(name)
        if function is None:
            message = f"The function '{name}' doesn't exist, is disabled, or is not an entity function."
            return exists, state, [{"isError": True, "result": compact(message)} for _ in batch]
        payload = protocol.entity_payload(name, key, exists, state, batch)
        request = InvocationRequest(function=function, trigger_value=Datum(payload, "json"), reason=REASON,
                                    details={"InstanceId": f"@{name}@{key}"})
        result = await self.invoker.invoke(request)
        if result.abandoned:
            return None
        if not result.succeeded:
            failure = protocol.friendly_message(result.error) if result.error else "the entity function failed"
            return exists, state, [{"isError": True, "result": compact(failure)} for _ in batch]
        output = result.outputs.get("$return")
        try:
            returned = json.loads(output.value) if output is not None else None
        except (TypeError, ValueError):
            returned = None
        if not isinstance(returned, dict):
            failure = "Out of proc orchestrators must return a valid JSON schema."
            return exists, state, [{"isError": True, "result": compact(failure)} for _ in batch]
        results = list(returned.get("results") or [])
        results += [{"isError": True, "result": compact("no result")}] * (len(batch) - len(results))
        return bool(returned.get("entityExists")), returned.get("entityState"), results


def _keep(exists: bool, state: str | None) -> InstanceUpdate:
    return InstanceUpdate(status="Running", execution_id="", input=None, output=None, custom_status=None,
                          entity_exists=exists, entity_state=state if exists else None)
