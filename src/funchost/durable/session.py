"""Extended sessions: an orchestration waiting only for one activity this host runs stays here.

As the Durable extension's extended sessions (``extendedSessionsEnabled``: DTFx keeps the
orchestration's session, its lease and its runtime state in memory between episodes), but
internal and always on: when an episode's commit schedules exactly one activity, takes it for
this host, creates no timer, sub-orchestration or message for the instance itself and leaves no
message waiting, the host keeps the instance's lease (renewed as during an episode) and its
history. When the activity finishes here, the next episode runs from that history plus the
result, and the activity's completion and the episode are committed in one transaction fenced by
both leases (`TaskHub.commit_session`): one statement instead of two, and no history read.

A message for the instance that arrives meanwhile is never lost: the store refuses the combined
commit when the instance has a visible inbox message and delivers the result instead, so the
next episode sees both. A message written by this process ends the session at once (the lease
is given back and the instance's loop takes it); one written by another host waits at most
`SESSION_WINDOW`, as long as polling takes to find it. An activity still running after the
window ends the session the same way, and its result is delivered as usual. A host that dies
holds the instance for no longer than its lease, as during an episode.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace

from funchost.durable.hub import NotifyingHub
from funchost.listeners.renewal import Renewer
from funchost.storage.durable import ORCHESTRATION, ActivityItem, Commit, Message, Outbound, WorkItem

log = logging.getLogger("funchost.durable")

SESSION_WINDOW = 1.0  # seconds an instance is kept for its activity (MAX_POLL of the work loops)
RESULT_ID = -1  # the result's message id in a session's episode: it is in no inbox, nothing to delete

StartRenewer = Callable[[str, WorkItem], Renewer]


def keeps_session(item: WorkItem, commit: Commit, claimable: int) -> bool:
    """Whether an episode's commit may keep the instance for the activity it schedules: exactly
    one, which this host has room to take, and nothing else the orchestration could wake up for
    that this host would not see (its own timers, sub-orchestrations, messages to itself)."""
    instance_id = item.instance.instance_id
    return (claimable >= 1 and item.instance.kind == ORCHESTRATION and len(commit.activities) == 1
            and commit.release and not commit.reset_history and not commit.instances
            and commit.update.status == "Running"
            and not any(m.instance_id == instance_id for m in commit.messages))


def after_commit(item: WorkItem, commit: Commit) -> WorkItem:
    """The work item as the store now holds it: the updated row, the history with the new events."""
    update = commit.update
    record = replace(item.instance, status=update.status, execution_id=update.execution_id, input=update.input,
                     output=update.output, custom_status=update.custom_status)
    history = list(commit.history) if commit.reset_history else [*item.history, *commit.history]
    return WorkItem(record, history, [], item.lease_token, item.lease_expires)


def with_result(item: WorkItem, result: Outbound, now: float) -> WorkItem:
    """The session's next episode: its history and the activity's result as the only message."""
    message = Message(RESULT_ID, result.instance_id, result.execution_id, result.event, now)
    return WorkItem(item.instance, item.history, [message], item.lease_token, item.lease_expires)


@dataclass
class Session:
    item: WorkItem
    activity_id: int
    renewer: Renewer
    expiry: asyncio.TimerHandle | asyncio.Task[None] | None = None

    async def finish(self) -> None:
        if self.expiry is not None:
            self.expiry.cancel()
        await self.renewer.stop()


class Sessions:
    """The instances this host keeps, by the id of the activity each waits for."""

    def __init__(self, hub: NotifyingHub, start_renewer: StartRenewer) -> None:
        self._hub = hub
        self._start_renewer = start_renewer
        self._open: dict[int, Session] = {}
        self._ending: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        return len(self._open)

    def open(self, item: WorkItem, activity: ActivityItem) -> None:
        instance_id = item.instance.instance_id
        session = Session(item, activity.id, self._start_renewer(f"orchestration {instance_id}", item))
        self._open[activity.id] = session
        session.expiry = asyncio.get_running_loop().create_task(self._expire(session), name="durable:session")
        self._hub.watch(instance_id, lambda: self._end(session))

    def take(self, activity: ActivityItem) -> Session | None:
        """The session waiting for `activity` (its renewer still runs: `finish` stops it)."""
        return self._pop(activity.id)

    def _pop(self, activity_id: int) -> Session | None:
        session = self._open.pop(activity_id, None)
        if session is not None:
            self._hub.unwatch(session.item.instance.instance_id)
            if session.expiry is not None:
                session.expiry.cancel()
                session.expiry = None
        return session

    async def close(self) -> None:
        """Give every instance kept back (the host is stopping)."""
        for session in list(self._open.values()):
            self._end(session)
        if self._ending:
            await asyncio.gather(*list(self._ending), return_exceptions=True)

    async def _expire(self, session: Session) -> None:
        await self._hub.clock.sleep(SESSION_WINDOW)
        session.expiry = None
        self._end(session)

    def _end(self, session: Session) -> None:
        if self._open.get(session.activity_id) is not session:
            return
        self._pop(session.activity_id)
        task = asyncio.get_running_loop().create_task(self._give_back(session), name="durable:session-end")
        self._ending.add(task)
        task.add_done_callback(self._ending.discard)

    async def _give_back(self, session: Session) -> None:
        await session.finish()
        try:
            await self._hub.release(session.item)
        except Exception:  # the lease lapses instead; the instance is taken over then
            log.warning("durable: giving back orchestration '%s' failed", session.item.instance.instance_id,
                        exc_info=True)
