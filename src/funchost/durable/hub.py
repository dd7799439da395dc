"""The task hub as the durable package uses it: the storage port plus in-process wake-ups.

Every write that creates work (an instance's inbox message, an activity work item) publishes a
signal for the matching dispatcher of this process, so work produced here starts at once instead
of at the next poll. Work produced by other processes is found by polling.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Protocol

from funchost.clock import Clock
from funchost.runtime.signals import Signals
from funchost.storage.durable import (
    ENTITY,
    ORCHESTRATION,
    ActivityItem,
    Commit,
    Committed,
    Delivered,
    InstanceClaim,
    NewInstance,
    Outbound,
    SessionOutcome,
    TaskHub,
    WorkItem,
)

ACTIVITY = "activity"


def topic(hub_name: str, kind: str) -> Hashable:
    return ("durable", hub_name.lower(), kind)


def kind_of(instance_id: str) -> str:
    return ENTITY if instance_id.startswith("@") else ORCHESTRATION


class Claimer(Protocol):
    """The orchestration loop of this process (the dispatcher), when it runs: `reserve` holds a
    free slot for an instance a write may take (None: no room), `adopt` runs what was taken in it
    (or frees the slot)."""

    def reserve(self) -> InstanceClaim | None: ...

    def adopt(self, item: WorkItem | None, claim: InstanceClaim | None) -> None: ...


class NotifyingHub:
    def __init__(self, store: TaskHub, signals: Signals, clock: Clock) -> None:
        self.store = store
        self.name = store.name
        self.signals = signals
        self.clock = clock
        self.claimer: Claimer | None = None  # set while this process's dispatchers run
        self._watchers: dict[str, Callable[[], None]] = {}  # instances kept in a session, by id

    def watch(self, instance_id: str, on_message: Callable[[], None]) -> None:
        """Call `on_message` when this process writes a message for the instance (`durable.session`)."""
        self._watchers[instance_id] = on_message

    def unwatch(self, instance_id: str) -> None:
        self._watchers.pop(instance_id, None)

    def _written(self, instance_id: str) -> None:
        watcher = self._watchers.get(instance_id)
        if watcher is not None:
            watcher()

    def now(self) -> float:
        return self.clock.now().timestamp()

    def notify(self, kind: str) -> None:
        self.signals.publish(topic(self.name, kind))

    def _notify_messages(self, messages: Sequence[Outbound]) -> None:
        for kind in {kind_of(m.instance_id) for m in messages}:
            self.notify(kind)
        if self._watchers:
            for message in messages:
                self._written(message.instance_id)

    async def create_instance(self, instance: NewInstance, *, dedupe: frozenset[str]) -> None:
        """A new instance starts on this host at once when its orchestration loop has room (the
        create takes it); otherwise the orchestration loops look for it."""
        claimer = self.claimer
        claim = claimer.reserve() if claimer is not None else None
        taken: WorkItem | None = None
        try:
            taken = await self.store.create_instance(instance, now=self.now(), dedupe=dedupe, claim=claim)
        finally:
            if claimer is not None:
                claimer.adopt(taken, claim)
        if taken is None:
            self.notify(ORCHESTRATION)
        self._written(instance.instance_id)

    async def send(self, messages: Sequence[Outbound]) -> None:
        await self.store.send(messages, now=self.now())
        self._notify_messages(messages)

    async def commit(self, item: WorkItem, commit: Commit) -> Committed:
        """After a commit the instance's own loop looks again if messages are waiting (they arrived
        while the instance was held, or were held back while it was suspended); the activity loops
        look for the new activities the committing host did not take itself."""
        done = await self.store.commit(item, commit, now=self.now())
        self._committed(item, commit, done)
        return done

    def _committed(self, item: WorkItem, commit: Commit, done: Committed) -> None:
        if done.pending:
            self.notify(kind_of(item.instance.instance_id))
        if len(done.claimed) < len(commit.activities):
            self.notify(ACTIVITY)
        if commit.instances:
            self.notify(ORCHESTRATION)
            for instance in commit.instances:
                self._written(instance.instance_id)
        self._notify_messages(commit.messages)

    async def release(self, item: WorkItem) -> None:
        await self.store.release(item)
        self.notify(kind_of(item.instance.instance_id))

    async def complete_activity(self, item: ActivityItem, result: Outbound,
                                claim: InstanceClaim | None = None) -> Delivered:
        """The orchestration loops look for the woken instance unless this host's claim took it."""
        done = await self.store.complete_activity(item, result, now=self.now(), claim=claim)
        if done.delivered and done.claimed is None:
            self.notify(ORCHESTRATION)
            self._written(result.instance_id)
        return done

    async def commit_session(self, item: WorkItem, commit: Commit, activity: ActivityItem, result: Outbound,
                             claim: InstanceClaim | None = None) -> SessionOutcome:
        """As `commit` when the episode was committed; as `complete_activity` when it was not."""
        done = await self.store.commit_session(item, commit, activity, result, now=self.now(), claim=claim)
        if done.committed is not None:
            self._committed(item, commit, done.committed)
        elif done.claimed is None:
            self.notify(ORCHESTRATION)
        return done
