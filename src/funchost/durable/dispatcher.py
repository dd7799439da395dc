"""The three dispatchers of a host: orchestrations, activities, entities.

Each takes work from the task hub under a lease (renewed at half its period while the work
runs), runs it through the executor, and commits the outcome in one transaction that checks the
lease. A host that dies holds nothing for longer than a lease: ``controlQueueVisibilityTimeout``
for orchestrations and entities, ``workItemQueueVisibilityTimeout`` for activities.
"""

from __future__ import annotations

import logging
import socket
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from azure.functions.meta import Datum

from funchost.durable import protocol
from funchost.durable.activities import REASON, ActivityRunner
from funchost.durable.entities import EntityRunner
from funchost.durable.episode import Episode, EpisodeSettings
from funchost.durable.functions import DurableFunctions
from funchost.durable.hub import ACTIVITY, NotifyingHub, topic
from funchost.durable.options import DurableTaskOptions
from funchost.durable.replay import SdkResult
from funchost.durable.session import RESULT_ID, Session, Sessions, after_commit, keeps_session, with_result
from funchost.durable.workloop import WorkLoop
from funchost.invocation.contracts import FunctionInvoker, InvocationRequest
from funchost.listeners.renewal import Renewer
from funchost.storage.durable import (
    ENTITY,
    ORCHESTRATION,
    ActivityClaim,
    ActivityItem,
    Commit,
    Committed,
    Delivered,
    InstanceClaim,
    LeaseLost,
    Outbound,
    WorkItem,
)

log = logging.getLogger("funchost.durable")


class Dispatcher:
    def __init__(self, hub: NotifyingHub, functions: DurableFunctions, invoker: FunctionInvoker,
                 options: DurableTaskOptions) -> None:
        self.hub = hub
        self.functions = functions
        self.invoker = invoker
        self.options = options
        self.owner = f"{socket.gethostname()}:{uuid.uuid4().hex[:8]}"
        self.settings = EpisodeSettings(functions.catalog(), options.default_version,
                                        options.max_orchestration_actions, options.store_inputs_in_history)
        self.activities = ActivityRunner(hub, functions, invoker, self._complete_activity)
        self.entities = EntityRunner(hub, functions, invoker)
        self.sessions = Sessions(hub, self._instance_renewer)
        self._stopping = False
        clock, signals = hub.clock, hub.signals
        self.loops = [
            WorkLoop("orchestrations", limit=options.max_concurrent_orchestrations, clock=clock, signals=signals,
                     topic=topic(hub.name, ORCHESTRATION), fetch=self._fetch_orchestrations,
                     process=self._orchestration, next_due=lambda: self._next_due(ORCHESTRATION)),
            WorkLoop("activities", limit=options.max_concurrent_activities, clock=clock, signals=signals,
                     topic=topic(hub.name, ACTIVITY), fetch=self._fetch_activities, process=self._activity),
            WorkLoop("entities", limit=options.max_concurrent_entities, clock=clock, signals=signals,
                     topic=topic(hub.name, ENTITY), fetch=self._fetch_entities, process=self._entity,
                     next_due=lambda: self._next_due(ENTITY)),
        ]

    async def start(self) -> None:
        for loop in self.loops:
            await loop.start()
        self.hub.claimer = self

    async def stop(self) -> None:
        self._stopping = True
        if self.hub.claimer is self:
            self.hub.claimer = None
        await self.sessions.close()
        for loop in self.loops:
            await loop.stop()
        await self.sessions.close()

    # -- fetching ----------------------------------------------------------------------------------

    async def _fetch_orchestrations(self, limit: int) -> list[WorkItem]:
        return await self.hub.store.lock_instances(ORCHESTRATION, owner=self.owner, now=self.hub.now(),
                                                   lease=self.options.orchestration_lease, limit=limit)

    async def _fetch_entities(self, limit: int) -> list[WorkItem]:
        return await self.hub.store.lock_instances(ENTITY, owner=self.owner, now=self.hub.now(),
                                                   lease=self.options.orchestration_lease, limit=limit,
                                                   batch=self.options.max_entity_batch_size)

    async def _fetch_activities(self, limit: int) -> list[ActivityItem]:
        return await self.hub.store.lock_activities(owner=self.owner, now=self.hub.now(),
                                                    lease=self.options.activity_lease, limit=limit)

    async def _next_due(self, kind: str) -> float | None:
        return await self.hub.store.next_visible(kind, now=self.hub.now())

    # -- processing --------------------------------------------------------------------------------

    def _renewer(self, name: str, renew: Any, lease: float) -> Renewer:
        return Renewer(name, renew, self.hub.clock, interval=lease / 2, minimum=min(1.0, lease / 4)).start()

    async def _orchestration(self, item: WorkItem) -> None:
        await self._under_lease(f"orchestration {item.instance.instance_id}", item, lambda: Episode(
            item, self.hub.clock.now(), self.settings).run(self._call_orchestrator))

    async def _entity(self, item: WorkItem) -> None:
        await self._under_lease(f"entity {item.instance.instance_id}", item, lambda: self.entities.run(item))

    def _instance_renewer(self, name: str, item: WorkItem) -> Renewer:
        lease = self.options.orchestration_lease
        return self._renewer(name, lambda: self.hub.store.renew_instance(item, until=self.hub.now() + lease), lease)

    async def _under_lease(self, name: str, item: WorkItem, work: Callable[[], Awaitable[Commit | None]]) -> None:
        """Run an instance's work while renewing its lease; commit the outcome, or give the lease
        back when there is none (the host is stopping: the messages wait for the next taker)."""
        renewer = self._instance_renewer(name, item)
        try:
            commit = await work()
            if commit is None:
                await self.hub.release(item)
                return
            await self._commit(item, commit)
        except LeaseLost as exc:
            log.warning("durable: %s", exc)
        finally:
            await renewer.stop()

    async def _commit(self, item: WorkItem, commit: Commit) -> None:
        """Commit, taking the new activities this host has room for in the same transaction: they
        start here at once instead of after another fetch (the others are fetched by any host)."""
        activities = self.loops[1]
        reserved = self._claim_activities(commit)
        claimed: list[ActivityItem] = []
        try:
            keep = self._keeps_session(item, commit, reserved)
            done = await self.hub.commit(item, commit)
            claimed = done.claimed
            if keep:
                await self._keep(item, commit, done)
        finally:
            activities.adopt(claimed, reserved)

    def _claim_activities(self, commit: Commit, ending: int = 0) -> int:
        reserved = self.loops[1].reserve(len(commit.activities), ending=ending) if commit.activities else 0
        if reserved:
            commit.claim = ActivityClaim(self.owner, self.options.activity_lease, reserved)
        return reserved

    def _keeps_session(self, item: WorkItem, commit: Commit, reserved: int) -> bool:
        keep = not self._stopping and keeps_session(item, commit, reserved)
        if keep:
            commit.release = False
        return keep

    async def _keep(self, item: WorkItem, commit: Commit, done: Committed) -> None:
        """Keep the instance for the one activity its commit took here (`durable.session`); give
        it back when the activity was not taken or messages wait for the instance."""
        if len(done.claimed) == 1 and not done.pending and not self._stopping:
            self.sessions.open(after_commit(item, commit), done.claimed[0])
        else:
            await self.hub.release(item)

    def reserve(self) -> InstanceClaim | None:
        """A free orchestration slot for an instance a write takes for this host (`Claimer`)."""
        if not self.loops[0].reserve(1):
            return None
        return InstanceClaim(self.owner, self.options.orchestration_lease)

    def adopt(self, item: WorkItem | None, claim: InstanceClaim | None) -> None:
        if claim is not None:
            self.loops[0].adopt([] if item is None else [item], 1)

    async def _complete_activity(self, item: ActivityItem, result: Outbound) -> bool:
        """Deliver an activity's result, taking the orchestration it wakes in the same transaction
        when the orchestration loop has a free slot: its next episode starts here at once instead
        of after another fetch (an instance another host holds is not taken; it is woken as before)."""
        session = self.sessions.take(item)
        if session is not None:
            return await self._session_step(session, item, result)
        claim = self.reserve()
        done = Delivered(False)
        try:
            done = await self.hub.complete_activity(item, result, claim)
            return done.delivered
        finally:
            self.adopt(done.claimed, claim)

    async def _session_step(self, session: Session, item: ActivityItem, result: Outbound) -> bool:
        """The next episode of a kept instance from its history and the result, committed with the
        activity's completion in one transaction (or, when the instance got new messages meanwhile,
        the result delivered and the instance taken again, as `_complete_activity` does)."""
        try:
            commit = await Episode(with_result(session.item, result, self.hub.now()), self.hub.clock.now(),
                                   self.settings).run(self._call_orchestrator)
        except Exception:
            log.exception("durable: the episode of orchestration '%s' failed unexpectedly",
                          session.item.instance.instance_id)
            commit = None
        if commit is None:
            await session.finish()
            await self.hub.release(session.item)
            return await self._complete_activity(item, result)
        commit.consumed = [message_id for message_id in commit.consumed if message_id != RESULT_ID]
        reserved = self._claim_activities(commit, ending=1)  # this activity's slot goes to the next
        claim = self.reserve()
        claimed: list[ActivityItem] = []
        taken: WorkItem | None = None
        try:
            keep = self._keeps_session(session.item, commit, reserved)
            done = await self.hub.commit_session(session.item, commit, item, result, claim)
            await session.finish()
            taken = done.claimed
            if done.committed is not None:
                claimed = done.committed.claimed
                if keep:
                    await self._keep(session.item, commit, done.committed)
            return done.delivered
        finally:
            await session.finish()
            self.loops[1].adopt(claimed, reserved)
            self.adopt(taken, claim)

    async def _call_orchestrator(self, name: str, history: list[dict[str, Any]], started: dict[str, Any]) -> SdkResult | None:
        function = self.functions.orchestrator(name)
        if function is None:
            return SdkResult(None, f"The function '{name}' doesn't exist, is disabled, or is not an orchestrator "
                                   "function.")
        instance = started.get("OrchestrationInstance") or {}
        parent = (started.get("ParentInstance") or {}).get("OrchestrationInstance") or {}
        payload = protocol.orchestrator_payload(history, instance_id=str(instance.get("InstanceId")),
                                                input_text=started.get("Input"),
                                                parent_instance_id=parent.get("InstanceId"),
                                                http_sleep_ms=self.options.http_sleep_ms)
        request = InvocationRequest(function=function, trigger_value=Datum(payload, "json"), reason=REASON,
                                    details={"InstanceId": instance.get("InstanceId")})
        result = await self.invoker.invoke(request)
        if result.abandoned:
            return None
        return protocol.orchestrator_result(result.outputs.get("$return") if result.succeeded else None,
                                            None if result.succeeded else result.error)

    async def _activity(self, item: ActivityItem) -> None:
        lease = self.options.activity_lease
        renewer = self._renewer(f"activity {item.name}", lambda: self.hub.store.renew_activity(
            item, until=self.hub.now() + lease), lease)
        try:
            await self.activities.run(item)
        finally:
            await renewer.stop()
