"""Running one activity work item: invoke the function, deliver TaskCompleted or TaskFailed.

As TaskActivityShim: the input is the JSON text the orchestrator sent; success stores the
function's JSON result; a user-code failure or a timeout becomes TaskFailed with ``Activity
function '<name>' failed: <message>``; a host stopping mid-call gives the work item back (it runs
again). The result is delivered only while the lease is held, so a host that lost the work item
to another host after a pause writes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import datetime

from funchost.durable import history as h
from funchost.durable import protocol
from funchost.durable.functions import DurableFunctions
from funchost.durable.http_activity import HTTP_ACTIVITY, call_http
from funchost.durable.hub import NotifyingHub
from funchost.invocation.contracts import FunctionInvoker, InvocationRequest
from funchost.runtime import activity
from funchost.storage.durable import ActivityItem, Outbound

log = logging.getLogger("funchost.durable")
REASON = "(null)"  # the host logs durable trigger invocations without a reason


Complete = Callable[[ActivityItem, Outbound], Awaitable[bool]]


class ActivityRunner:
    """`complete` delivers a result (default: the hub's `complete_activity`); the dispatcher's also
    takes the orchestration it wakes when this host has room for it."""

    def __init__(self, hub: NotifyingHub, functions: DurableFunctions, invoker: FunctionInvoker,
                 complete: Complete | None = None) -> None:
        self.hub = hub
        self.functions = functions
        self.invoker = invoker
        self.complete = complete or self._complete

    async def _complete(self, item: ActivityItem, result: Outbound) -> bool:
        return (await self.hub.complete_activity(item, result)).delivered

    async def run(self, item: ActivityItem) -> None:
        if item.name == HTTP_ACTIVITY:
            with activity.busy():  # framework work, not a user function: the harness waits for it
                ok, text = await call_http(item.input)
            now = self.hub.clock.now()
            event = h.task_completed(now, item.task_id, text) if ok else h.task_failed(now, item.task_id, text, None)
            await self._deliver(item, event)
            return
        function = self.functions.activity(item.name)
        now = self.hub.clock.now()
        if function is None:
            reason = f"Activity function '{item.name}' failed: Activity function '{item.name}' does not exist."
            await self._deliver(item, h.task_failed(now, item.task_id, reason, None))
            return
        request = InvocationRequest(function=function, trigger_value=protocol.activity_datum(item.input),
                                    binding_data={"instanceId": item.instance_id}, reason=REASON,
                                    details={"InstanceId": item.instance_id, "TaskEventId": item.task_id})
        result = await self.invoker.invoke(request)
        if result.abandoned:
            await self.hub.store.release_activity(item)
            return
        done: datetime = self.hub.clock.now()
        if result.succeeded:
            event = h.task_completed(done, item.task_id, protocol.activity_result(result.outputs.get("$return")))
        else:
            reason, details = protocol.activity_failure(item.name, result.error)
            event = h.task_failed(done, item.task_id, reason, details)
        await self._deliver(item, event)

    async def _deliver(self, item: ActivityItem, event: dict[str, object]) -> None:
        delivered = await self.complete(item, Outbound(item.instance_id, event, item.execution_id))
        if not delivered:
            log.warning("durable: the lease on activity '%s' (task %d of '%s') lapsed; another host runs it again",
                        item.name, item.task_id, item.instance_id)
