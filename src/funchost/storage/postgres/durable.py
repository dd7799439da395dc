"""The task hub on PostgreSQL: hosts on several machines share a hub's instances, history, inbox
and activity work items through the server (docs/postgres.md, "Durable").

Every port call is one statement on the async pool, so one round trip and one transaction:

- `lock_instances` takes instances under a new lease token with ``FOR UPDATE SKIP LOCKED`` and
  returns their messages and history in the same statement (durabletask-mssql's
  `_LockNextOrchestration`); hosts polling at once take disjoint instances and never wait.
- `commit` and `complete_activity` are server functions (`durable_schema`) fenced by the token: a
  host whose lease lapsed and was taken over gets `LeaseLost` (or False) and changes nothing.
- Leases, timers and due checks use the server's clock unless a ManualClock drives time; the
  absolute times a caller passes (a timer's fire time, a renewal's end) are moved onto the
  server's clock by the caller's offset from it, so hosts with skewed clocks agree.

Several hubs share the tables, keyed by a hub id (`durable_hubs`: account and lower-cased name,
as the embedded store keeps one file per hub and account).
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from funchost.clock import Clock
from funchost.storage.durable import (
    ORCHESTRATION,
    ActivityItem,
    Commit,
    Committed,
    Delivered,
    Event,
    HubCounts,
    InstanceClaim,
    InstanceExists,
    InstanceQuery,
    InstanceRecord,
    LeaseLost,
    Message,
    NewInstance,
    Outbound,
    QueryPage,
    SessionOutcome,
    WorkItem,
)
from funchost.storage.postgres import durable_schema as schema
from funchost.storage.postgres import durable_sql as sql
from funchost.storage.postgres.db import PgDatabase, server_time
from funchost.storage.postgres.durable_group import Completion, CompletionGroup
from funchost.storage.postgres.durable_session import COMMIT_SESSION

FRESH = 0.1  # seconds an idle poll's next due time answers `next_visible` for


def _time(value: float) -> datetime:
    return datetime.fromtimestamp(value, timezone.utc)


def to_record(row: Sequence[Any]) -> InstanceRecord:
    return InstanceRecord(instance_id=row[0], kind=row[1], name=row[2], version=row[3], execution_id=row[4],
                          status=row[5], input=row[6], output=row[7], custom_status=row[8],
                          created_time=_time(row[9]), last_updated_time=_time(row[10]), parent_instance_id=row[11],
                          entity_exists=bool(row[12]), entity_state=row[13])


def _outbound(messages: Sequence[Outbound]) -> dict[str, list[Any]]:
    return {"ids": [m.instance_id for m in messages], "execs": [m.execution_id for m in messages],
            "events": [json.dumps(m.event) for m in messages], "vis": [m.visible_at for m in messages],
            "ctl": [m.control for m in messages]}


class PostgresTaskHub:
    def __init__(self, database: PgDatabase, account: str, name: str, clock: Clock) -> None:
        self.name = name
        self.account = account
        self._database = database
        self._manual = server_time(clock) is not None  # a ManualClock: the callers' `now` is the time
        self._clock = clock
        self._hub: int | None = None
        self._next_due: dict[str, tuple[float | None, float]] = {}  # by kind: the last idle poll's answer
        self._ready_lock = asyncio.Lock()
        self._completions = CompletionGroup(self._complete)

    async def create_if_not_exists(self) -> None:
        await self._hub_id()

    async def _hub_id(self) -> int:
        if self._hub is None:
            async with self._ready_lock:
                if self._hub is None:
                    await asyncio.to_thread(self._database.migrate, schema.COMPONENT, schema.STEPS)
                    rows = await self._rows(sql.HUB, {"a": self.account, "n": self.name.lower()}, ready=False)
                    self._hub = int(rows[0][0])
        return self._hub

    async def _rows(self, statement: str, args: dict[str, Any], *, ready: bool = True) -> list[Any]:
        if ready:
            args["h"] = await self._hub_id()
        return await self._database.rows(statement, args, prepare=True)

    async def _value(self, statement: str, args: dict[str, Any]) -> Any:
        rows = await self._rows(statement, args)
        return rows[0][0] if rows else None

    def _times(self, ref: float | None = None) -> dict[str, Any]:
        """`now` (None: the server's clock) and `ref`, the caller's time the absolute times it
        passes are relative to."""
        ref = self._clock.now().timestamp() if ref is None else ref
        return {"now": ref if self._manual else None, "ref": ref}

    # -- instances ---------------------------------------------------------------------------------

    async def create_instance(self, instance: NewInstance, *, now: float, dedupe: frozenset[str],
                              claim: InstanceClaim | None = None) -> WorkItem | None:
        rows = await self._rows(sql.CREATE, {
            **self._times(now), "i": instance.instance_id, "nm": instance.name, "ver": instance.version,
            "x": instance.execution_id, "inp": instance.input, "started": json.dumps(instance.started),
            "par": instance.parent_instance_id, "vis": instance.visible_at, "dedupe": sorted(dedupe),
            "owner": claim.owner if claim else None, "lease": claim.lease if claim else None})
        refused = rows[0][-1]
        if refused is not None:
            raise InstanceExists(instance.instance_id, refused)
        row = rows[0]
        return _work_item(row, now + claim.lease) if row[0] is not None and claim is not None else None

    async def get_instance(self, instance_id: str) -> InstanceRecord | None:
        rows = await self._rows(sql.GET, {"i": instance_id})
        return to_record(rows[0]) if rows else None

    async def get_history(self, instance_id: str) -> list[Event]:
        return list(json.loads(await self._value(sql.HISTORY, {"i": instance_id})))

    async def query(self, query: InstanceQuery) -> QueryPage:
        clauses = ["hub_id = %(h)s", "kind = %(kind)s"]
        args: dict[str, Any] = {"kind": query.kind, "top": max(1, query.top) + 1}
        if query.created_from is not None:
            clauses.append("created_time >= %(from)s")
            args["from"] = query.created_from.timestamp()
        if query.created_to is not None:
            clauses.append("created_time <= %(to)s")
            args["to"] = query.created_to.timestamp()
        if query.statuses:
            clauses.append("status = ANY(%(statuses)s)")
            args["statuses"] = sorted(query.statuses)
        if query.prefix:
            clauses.append("starts_with(instance_id, %(prefix)s)")
            args["prefix"] = query.prefix
        if query.name is not None:
            clauses.append("name = %(name)s")
            args["name"] = query.name
        after = _decode_token(query.continuation)
        if after is not None:
            clauses.append("(created_time, instance_id) > (%(after_t)s, %(after_i)s)")
            args["after_t"], args["after_i"] = after
        rows = await self._rows(f"SELECT {sql.INSTANCE} FROM durable_instances WHERE {' AND '.join(clauses)} "
                                "ORDER BY created_time, instance_id LIMIT %(top)s", args)
        top = args["top"] - 1
        records = [to_record(r) for r in rows[:top]]
        more = len(rows) > top
        return QueryPage(records, _encode_token(rows[top - 1][9], rows[top - 1][0]) if more else None)

    async def send(self, messages: Sequence[Outbound], *, now: float) -> None:
        if messages:
            await self._rows(sql.SEND, {**self._times(now), **_outbound(messages)})

    async def purge(self, instance_ids: Sequence[str]) -> int:
        return int(await self._value(sql.PURGE, {"ids": list(instance_ids)}))

    # -- orchestration and entity work -------------------------------------------------------------

    async def lock_instances(self, kind: str, *, owner: str, now: float, lease: float, limit: int,
                             batch: int | None = None) -> list[WorkItem]:
        rows = await self._rows(sql.LOCK, {**self._times(now), "k": kind, "owner": owner, "lease": lease,
                                           "limit": limit, "batch": batch,
                                           "history": kind == ORCHESTRATION})
        items = sorted((_work_item(row, now + lease) for row in rows if row[0] is not None),
                       key=lambda item: item.messages[0].id if item.messages else 0)  # oldest message first
        if not items:
            due = rows[0][-1] if rows else None
            self._next_due[kind] = (None if due is None else float(due), time.monotonic())
        return items

    async def commit(self, item: WorkItem, commit: Commit, *, now: float) -> Committed:
        ok, ids, tasks, tokens, pending = (await self._rows(sql.COMMIT, {**self._times(now),
                                                                         **_commit_args(item, commit)}))[0]
        if not ok:
            raise LeaseLost(f"the lease on '{item.instance.instance_id}' was lost; another host has taken the "
                            "instance over")
        return _committed(commit, now, ids, tasks, tokens, pending)

    async def commit_session(self, item: WorkItem, commit: Commit, activity: ActivityItem, result: Outbound, *,
                             now: float, claim: InstanceClaim | None = None) -> SessionOutcome:
        row = (await self._rows(COMMIT_SESSION, {
            **self._times(now), **_commit_args(item, commit), "act": activity.id, "act_token": activity.lease_token,
            "r_exec": result.execution_id, "r_event": json.dumps(result.event),
            "owner": claim.owner if claim else None, "lease": claim.lease if claim else None}))[0]
        state, ids, tasks, tokens, pending = row[21:26]
        if state == "lost":
            return SessionOutcome(False)
        if state == "committed":
            return SessionOutcome(True, _committed(commit, now, ids, tasks, tokens, pending))
        taken = _work_item(row, now + claim.lease) if row[0] is not None and claim is not None else None
        return SessionOutcome(True, None, taken)

    async def release(self, item: WorkItem) -> None:
        await self._rows(sql.RELEASE, {"i": item.instance.instance_id, "token": item.lease_token})

    async def renew_instance(self, item: WorkItem, *, until: float) -> bool:
        rows = await self._count(sql.RENEW, {**self._times(), "until": until, "i": item.instance.instance_id,
                                             "token": item.lease_token})
        return rows == 1

    async def _count(self, statement: str, args: dict[str, Any]) -> int:
        args["h"] = await self._hub_id()
        async with self._database.connection() as conn:
            return int((await conn.execute(statement, args, prepare=True)).rowcount)

    async def next_visible(self, kind: str, *, now: float) -> float | None:
        """Asked right after a poll that took nothing (the work loop's order): that poll's answer,
        read in its statement."""
        found = self._next_due.pop(kind, None)
        if found is not None and time.monotonic() - found[1] < FRESH:
            return found[0]
        due = await self._value(sql.NEXT_VISIBLE, {**self._times(now), "k": kind})
        return None if due is None else float(due)

    # -- activities --------------------------------------------------------------------------------

    async def lock_activities(self, *, owner: str, now: float, lease: float, limit: int) -> list[ActivityItem]:
        rows = await self._rows(sql.LOCK_ACTIVITIES, {**self._times(now), "owner": owner, "lease": lease,
                                                      "limit": limit})
        return sorted((ActivityItem(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], now + lease) for r in rows),
                      key=lambda item: item.id)

    async def complete_activity(self, item: ActivityItem, result: Outbound, *, now: float,
                                claim: InstanceClaim | None = None) -> Delivered:
        return await self._completions.complete(Completion(item, result, now, claim))

    async def _complete(self, batch: Sequence[Completion]) -> dict[int, Delivered]:
        """One statement for the batch; each instance taken goes to the first completion that asked
        for it (the one whose slot the statement filled)."""
        rows = await self._rows(sql.COMPLETE, {
            **self._times(batch[0].now), "a_ids": [c.item.id for c in batch],
            "tokens": [c.item.lease_token for c in batch], **_outbound([c.result for c in batch]),
            "owners": [c.claim.owner if c.claim else None for c in batch],
            "leases": [c.claim.lease if c.claim else None for c in batch]})
        done, taken = set(rows[0][-1] or ()), {row[0]: row for row in rows if row[0] is not None}
        delivered = {}
        for c in (c for c in batch if c.item.id in done):
            row = taken.pop(c.result.instance_id, None) if c.claim is not None else None
            claimed = _work_item(row, c.now + c.claim.lease) if row is not None and c.claim is not None else None
            delivered[c.item.id] = Delivered(True, claimed)
        return delivered

    async def release_activity(self, item: ActivityItem) -> None:
        await self._rows(sql.RELEASE_ACTIVITY, {"id": item.id, "token": item.lease_token})

    async def renew_activity(self, item: ActivityItem, *, until: float) -> bool:
        return await self._count(sql.RENEW_ACTIVITY, {**self._times(), "until": until, "id": item.id,
                                                      "token": item.lease_token}) == 1

    # -- housekeeping ------------------------------------------------------------------------------

    async def counts(self) -> HubCounts:
        statuses, inbox, activities = (await self._rows(sql.COUNTS, {}))[0]
        return HubCounts({k: int(v) for k, v in (statuses or {}).items()}, int(inbox), int(activities))

    async def aclose(self) -> None:
        await self._completions.aclose()  # the backend's database is closed with the backend


def _committed(commit: Commit, now: float, ids: list[int] | None, tasks: list[int] | None,
               tokens: list[str] | None, pending: bool | None) -> Committed:
    """`durable_commit`'s outputs: the activities it took for `commit.claim`."""
    if not ids or commit.claim is None:
        return Committed([], bool(pending))
    scheduled, expires = {a.task_id: a for a in commit.activities}, now + commit.claim.lease
    claimed = [ActivityItem(activity_id, a.instance_id, a.execution_id, a.task_id, a.name, a.input, 1, token, expires)
               for activity_id, task, token in sorted(zip(ids, tasks or [], tokens or [], strict=True))
               for a in (scheduled[task],)]
    return Committed(claimed, bool(pending))


def _work_item(row: Sequence[Any], lease_expires: float) -> WorkItem:
    ids, execs, events, visible, shift, history = row[15:21]  # then the next due time
    messages = [Message(message_id, row[0], execution_id, event, at - shift)
                for message_id, execution_id, event, at in zip(ids or [], execs or [], json.loads(events or "[]"),
                                                                visible or [], strict=True)]
    return WorkItem(to_record(row), json.loads(history) if history else [], messages, row[14], lease_expires)


def _commit_args(item: WorkItem, commit: Commit) -> dict[str, Any]:
    update, messages = commit.update, _outbound(commit.messages)
    return {
        "i": item.instance.instance_id, "token": item.lease_token, "keep": not commit.release,
        "st": update.status, "x": update.execution_id, "inp": update.input, "outp": update.output,
        "cust": update.custom_status, "nm": update.name, "ver": update.version, "ent_exists": update.entity_exists,
        "ent_state": update.entity_state, "consumed": list(commit.consumed), "reset": commit.reset_history,
        "history": [json.dumps(event) for event in commit.history],
        "m_ids": messages["ids"], "m_execs": messages["execs"], "m_events": messages["events"],
        "m_vis": messages["vis"], "m_ctl": messages["ctl"],
        "a_execs": [a.execution_id for a in commit.activities], "a_tasks": [a.task_id for a in commit.activities],
        "a_names": [a.name for a in commit.activities], "a_inputs": [a.input for a in commit.activities],
        "n_ids": [n.instance_id for n in commit.instances], "n_names": [n.name for n in commit.instances],
        "n_versions": [n.version for n in commit.instances], "n_execs": [n.execution_id for n in commit.instances],
        "n_inputs": [n.input for n in commit.instances],
        "n_started": [json.dumps(n.started) for n in commit.instances],
        "n_parents": [n.parent_instance_id for n in commit.instances],
        "n_vis": [n.visible_at for n in commit.instances],
        "claim_owner": commit.claim.owner if commit.claim else None,
        "claim_lease": commit.claim.lease if commit.claim else None,
        "claim_limit": commit.claim.limit if commit.claim else None,
    }


def _encode_token(created: float, instance_id: str) -> str:
    return base64.urlsafe_b64encode(json.dumps({"t": created, "i": instance_id}).encode()).decode()


def _decode_token(token: str | None) -> tuple[float, str] | None:
    if not token:
        return None
    try:
        decoded = json.loads(base64.urlsafe_b64decode(token.encode()))
        return float(decoded["t"]), str(decoded["i"])
    except (ValueError, KeyError, TypeError):
        return None
