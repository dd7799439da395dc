"""The task hub port: what Durable Functions keeps, and the few primitives a backend implements.

A task hub holds instances (orchestrations and entities), the history of each instance's current
execution, an inbox of events per instance (task results, timers, external events, entity
requests; a timer is an inbox message that becomes visible at its fire time), and activity work
items. Work is taken under a lease (``lock_*``) and finished in one transaction that checks the
lease is still held (``complete_*``): an instance is run by one host at a time, a host that dies
loses nothing (its leases expire and another host takes the work over), and an activity runs at
least once. Orchestration semantics (replay, sequence ids, statuses) live above this port, in
``funchost.durable``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from funchost.errors import FunchostError

Event = dict[str, Any]

ORCHESTRATION = "orchestration"
ENTITY = "entity"
# Runtime statuses by name, as the HTTP API reports them (DurableTask.Core OrchestrationStatus).
RUNNING_STATUSES = frozenset({"Running", "Pending", "ContinuedAsNew", "Suspended"})
COMPLETED_STATUSES = frozenset({"Completed", "Failed", "Terminated", "Canceled"})
ALL_STATUSES = RUNNING_STATUSES | COMPLETED_STATUSES


class InstanceExists(FunchostError):
    """An instance with this id is in a state that may not be replaced (dedupe statuses)."""

    def __init__(self, instance_id: str, status: str) -> None:
        self.instance_id = instance_id
        self.status = status
        super().__init__(f"An Orchestration instance with the status {status} already exists.")


class LeaseLost(FunchostError):
    """The work item's lease expired and another host took the work over: nothing was written."""


@dataclass(frozen=True)
class InstanceRecord:
    instance_id: str
    kind: str  # ORCHESTRATION | ENTITY
    name: str
    version: str
    execution_id: str
    status: str
    input: str | None
    output: str | None
    custom_status: str | None
    created_time: datetime
    last_updated_time: datetime
    parent_instance_id: str | None = None
    # Entities only: whether the entity exists and its state as JSON text.
    entity_exists: bool = False
    entity_state: str | None = None


@dataclass(frozen=True)
class Message:
    """An inbox event for an instance. `execution_id` pins it to one execution (task results,
    timers); None means "whatever execution is current" (external events, control events)."""

    id: int
    instance_id: str
    execution_id: str | None
    event: Event
    visible_at: float


@dataclass(frozen=True)
class Outbound:
    """A message to put in an instance's inbox when a work item completes."""

    instance_id: str
    event: Event
    execution_id: str | None = None
    visible_at: float | None = None  # None = visible now
    control: bool = False  # delivered even while the instance is suspended (resume, terminate)


@dataclass(frozen=True)
class NewInstance:
    """An orchestration to create (or replace) with its ExecutionStarted message."""

    instance_id: str
    name: str
    version: str
    execution_id: str
    input: str | None
    started: Event
    parent_instance_id: str | None = None
    visible_at: float | None = None


@dataclass(frozen=True)
class NewActivity:
    instance_id: str
    execution_id: str
    task_id: int
    name: str
    input: str | None


@dataclass
class WorkItem:
    """An instance taken under lease, with its history and the inbox messages to process."""

    instance: InstanceRecord
    history: list[Event]
    messages: list[Message]
    lease_token: str
    lease_expires: float


@dataclass(frozen=True)
class InstanceUpdate:
    """The instance row after an episode (orchestrations) or a batch (entities)."""

    status: str
    execution_id: str
    input: str | None
    output: str | None
    custom_status: str | None
    name: str | None = None
    version: str | None = None
    entity_exists: bool = False
    entity_state: str | None = None


@dataclass(frozen=True)
class ActivityClaim:
    """Take the activities a commit creates under lease for `owner` at once (at most `limit`):
    the host that scheduled them runs them without asking the hub for them again."""

    owner: str
    lease: float
    limit: int


@dataclass
class Commit:
    """Everything an episode or entity batch writes, applied atomically under the lease."""

    update: InstanceUpdate
    consumed: Sequence[int]  # inbox message ids processed (deleted)
    history: Sequence[Event] = ()  # events to append to the current execution's history
    reset_history: bool = False  # a new execution starts: the old history goes
    messages: Sequence[Outbound] = ()
    activities: Sequence[NewActivity] = ()
    instances: Sequence[NewInstance] = ()
    release: bool = True  # False: keep the lease (more work follows in the same work item)
    claim: ActivityClaim | None = None


@dataclass(frozen=True)
class ActivityItem:
    id: int
    instance_id: str
    execution_id: str
    task_id: int
    name: str
    input: str | None
    dequeue_count: int
    lease_token: str
    lease_expires: float


@dataclass(frozen=True)
class Committed:
    """What a commit tells its caller: the new activities it took for `Commit.claim`, and whether
    the instance has visible messages left (another episode is due once the lease is given up)."""

    claimed: list[ActivityItem] = field(default_factory=list)
    pending: bool = True


@dataclass(frozen=True)
class InstanceClaim:
    """Take the orchestration a write wakes (an activity's result, a new instance's start) under a
    new lease for `owner` in the same transaction, if nobody holds it and it is not suspended: the
    host runs its next episode at once instead of after a `lock_instances` (as `ActivityClaim`)."""

    owner: str
    lease: float


@dataclass(frozen=True)
class Delivered:
    """What an activity completion tells its caller: whether the result was delivered (the lease
    held), and the instance it woke when `complete_activity`'s claim took it (else None)."""

    delivered: bool
    claimed: WorkItem | None = None


@dataclass(frozen=True)
class SessionOutcome:
    """What `commit_session` tells its caller. `delivered`: the activity's lease held (else nothing
    was written and the instance's lease was given up). `committed`: the episode was applied with
    the result (None: the instance had new messages or its lease was lost, so the result went to
    its inbox as `complete_activity` delivers it, and `claimed` is the instance taken again for
    the claim, as there)."""

    delivered: bool
    committed: Committed | None = None
    claimed: WorkItem | None = None


@dataclass(frozen=True)
class InstanceQuery:
    created_from: datetime | None = None
    created_to: datetime | None = None
    statuses: frozenset[str] = frozenset()
    prefix: str | None = None
    top: int = 100
    continuation: str | None = None
    kind: str = ORCHESTRATION
    name: str | None = None  # entities: the entity name


@dataclass(frozen=True)
class QueryPage:
    instances: list[InstanceRecord]
    continuation: str | None = None


@dataclass(frozen=True)
class HubCounts:
    """For the CLI and tests: what is waiting in the hub."""

    instances: dict[str, int] = field(default_factory=dict)
    inbox: int = 0
    activities: int = 0


class TaskHub(Protocol):
    name: str

    async def create_if_not_exists(self) -> None:
        """Create the hub's storage (DurabilityProvider.CreateIfNotExistsAsync); raises when the
        store cannot be opened. Called before the dispatchers start."""

    # -- instances (clients) ----------------------------------------------------------------------

    async def create_instance(self, instance: NewInstance, *, now: float, dedupe: frozenset[str],
                              claim: InstanceClaim | None = None) -> WorkItem | None:
        """Create or replace an orchestration (Pending) and queue its ExecutionStarted.
        Raises InstanceExists when the current status is in `dedupe`. With `claim`, also take the
        new instance as `lock_instances` would when its start is due now (else None)."""

    async def get_instance(self, instance_id: str) -> InstanceRecord | None: ...

    async def get_history(self, instance_id: str) -> list[Event]:
        """The current execution's history in order (empty if none)."""

    async def query(self, query: InstanceQuery) -> QueryPage: ...

    async def send(self, messages: Sequence[Outbound], *, now: float) -> None:
        """Put messages in inboxes (entities are created on first message)."""

    async def purge(self, instance_ids: Sequence[str]) -> int:
        """Delete instances with their history, inbox and activities; returns how many existed."""

    # -- orchestration and entity work -------------------------------------------------------------

    async def lock_instances(self, kind: str, *, owner: str, now: float, lease: float, limit: int,
                             batch: int | None = None) -> list[WorkItem]:
        """Take up to `limit` instances of `kind` that have visible inbox messages and no live
        lease; with each, its history and visible messages (at most `batch`, oldest first)."""

    async def commit(self, item: WorkItem, commit: Commit, *, now: float) -> Committed:
        """Apply `commit` if `item`'s lease is still held (else LeaseLost, nothing written)."""

    async def release(self, item: WorkItem) -> None:
        """Give the lease up without writing (the messages stay for the next taker)."""

    async def renew_instance(self, item: WorkItem, *, until: float) -> bool: ...

    async def next_visible(self, kind: str, *, now: float) -> float | None:
        """When the earliest inbox message not yet visible (a timer) becomes visible."""

    # -- activities --------------------------------------------------------------------------------

    async def lock_activities(self, *, owner: str, now: float, lease: float, limit: int) -> list[ActivityItem]: ...

    async def complete_activity(self, item: ActivityItem, result: Outbound, *, now: float,
                                claim: InstanceClaim | None = None) -> Delivered:
        """Delete the work item and deliver its result, if the lease is still held (else not
        delivered); with `claim`, also take the instance it wakes as `lock_instances` would (its
        history and every visible message), when it is free, not suspended and has no other
        activity outstanding (a fan-out's results are left for one fetch to take together)."""

    async def commit_session(self, item: WorkItem, commit: Commit, activity: ActivityItem, result: Outbound, *,
                             now: float, claim: InstanceClaim | None = None) -> SessionOutcome:
        """An extended session's step: the activity's completion and the episode that consumed its
        result in one transaction. Deletes `activity` if its lease is held (else nothing is written
        but `item`'s lease is given up); then applies `commit` if `item`'s lease is held and the
        instance has no visible inbox message (the episode saw everything there is); otherwise
        delivers `result`, gives `item`'s lease up and, with `claim`, takes the instance again as
        `complete_activity` would, so the next episode sees the result and the new messages."""

    async def release_activity(self, item: ActivityItem) -> None: ...

    async def renew_activity(self, item: ActivityItem, *, until: float) -> bool: ...

    # -- housekeeping ------------------------------------------------------------------------------

    async def counts(self) -> HubCounts: ...

    async def aclose(self) -> None: ...
