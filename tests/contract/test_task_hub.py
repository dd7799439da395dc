"""The task hub port (`funchost.storage.durable.TaskHub`), run against every implementation.

Each backend hands it out through `task_hub()` (`--storage azure` keeps task hubs in the data
folder's embedded store, as it does Event Grid's state, so `local_storage` covers every
implementation). The rules checked are the ones Durable Functions relies on: one holder per instance
at a time, a takeover once a lease lapses, commits fenced by the lease, timers invisible until
due, suspended instances receiving only control messages, activities at least once.
"""

from __future__ import annotations

import pytest

from funchost.durable import history as h
from funchost.storage.durable import (
    ENTITY,
    ORCHESTRATION,
    RUNNING_STATUSES,
    ActivityClaim,
    ActivityItem,
    Commit,
    InstanceClaim,
    InstanceExists,
    InstanceQuery,
    InstanceUpdate,
    LeaseLost,
    NewActivity,
    NewInstance,
    Outbound,
    TaskHub,
    WorkItem,
)
from funchost.storage.host_storage import HostStorage

NOW = 1_700_000_000.0


@pytest.fixture
async def hub(local_storage: HostStorage) -> TaskHub:
    store = local_storage.task_hub("ContractHub")
    await store.create_if_not_exists()
    return store


def started(instance_id: str, execution_id: str = "e1") -> NewInstance:
    from datetime import datetime, timezone

    event = h.execution_started(datetime.fromtimestamp(NOW, timezone.utc), instance_id=instance_id,
                                execution_id=execution_id, name="orch", version="", input_text='"x"')
    return NewInstance(instance_id, "orch", "", execution_id, '"x"', event)


def running(execution_id: str = "e1", status: str = "Running") -> InstanceUpdate:
    return InstanceUpdate(status=status, execution_id=execution_id, input='"x"', output=None, custom_status=None)


async def test_instances_are_created_pending_and_running_ones_are_not_replaced(hub: TaskHub) -> None:
    await hub.create_instance(started("a"), now=NOW, dedupe=RUNNING_STATUSES)
    record = await hub.get_instance("a")
    assert record is not None and record.status == "Pending" and record.input == '"x"'
    with pytest.raises(InstanceExists):
        await hub.create_instance(started("a", "e2"), now=NOW, dedupe=RUNNING_STATUSES)
    await hub.create_instance(started("a", "e2"), now=NOW, dedupe=frozenset())  # AnyState replaces
    replaced = await hub.get_instance("a")
    assert replaced is not None and replaced.execution_id == "e2"


async def test_an_instance_is_held_by_one_owner_until_its_lease_lapses(hub: TaskHub) -> None:
    await hub.create_instance(started("a"), now=NOW, dedupe=RUNNING_STATUSES)
    (item,) = await hub.lock_instances(ORCHESTRATION, owner="host1", now=NOW, lease=30, limit=10)
    assert [h.event_type(m.event) for m in item.messages] == [h.EventType.ExecutionStarted]
    assert await hub.lock_instances(ORCHESTRATION, owner="host2", now=NOW + 29, lease=30, limit=10) == []
    (taken,) = await hub.lock_instances(ORCHESTRATION, owner="host2", now=NOW + 31, lease=30, limit=10)
    assert taken.lease_token != item.lease_token and len(taken.messages) == 1
    with pytest.raises(LeaseLost):
        await hub.commit(item, Commit(running(), [m.id for m in item.messages]), now=NOW + 32)
    record = await hub.get_instance("a")
    assert record is not None and record.status == "Pending"  # the stale holder wrote nothing


async def test_a_commit_appends_history_consumes_messages_and_creates_work(hub: TaskHub) -> None:
    await hub.create_instance(started("a"), now=NOW, dedupe=RUNNING_STATUSES)
    (item,) = await hub.lock_instances(ORCHESTRATION, owner="host1", now=NOW, lease=30, limit=10)
    timer = Outbound("a", {"EventType": 11, "TimerId": 1}, "e1", visible_at=NOW + 3600)
    commit = Commit(running(), [m.id for m in item.messages], history=[{"EventType": 12}, {"EventType": 0}],
                    messages=[timer], activities=[NewActivity("a", "e1", 0, "act", '["1"]')])
    await hub.commit(item, commit, now=NOW)
    assert [e["EventType"] for e in await hub.get_history("a")] == [12, 0]
    assert await hub.lock_instances(ORCHESTRATION, owner="host1", now=NOW + 1, lease=30, limit=10) == []
    assert await hub.next_visible(ORCHESTRATION, now=NOW + 1) == NOW + 3600
    (due,) = await hub.lock_instances(ORCHESTRATION, owner="host1", now=NOW + 3600, lease=30, limit=10)
    assert [m.event["TimerId"] for m in due.messages] == [1]
    (activity,) = await hub.lock_activities(owner="w", now=NOW, lease=60, limit=5)
    assert (activity.name, activity.task_id, activity.input, activity.dequeue_count) == ("act", 0, '["1"]', 1)


async def test_activities_run_at_least_once_and_only_the_lease_holder_delivers(hub: TaskHub) -> None:
    await hub.create_instance(started("a"), now=NOW, dedupe=RUNNING_STATUSES)
    (item,) = await hub.lock_instances(ORCHESTRATION, owner="o", now=NOW, lease=30, limit=1)
    await hub.commit(item, Commit(running(), [m.id for m in item.messages],
                                  activities=[NewActivity("a", "e1", 0, "act", None)]), now=NOW)
    (first,) = await hub.lock_activities(owner="w1", now=NOW, lease=60, limit=5)
    assert await hub.lock_activities(owner="w2", now=NOW + 10, lease=60, limit=5) == []
    (second,) = await hub.lock_activities(owner="w2", now=NOW + 61, lease=60, limit=5)
    assert second.dequeue_count == 2
    result = Outbound("a", {"EventType": 5, "TaskScheduledId": 0}, "e1")
    assert (await hub.complete_activity(first, result, now=NOW + 62)).delivered is False
    assert await hub.renew_activity(first, until=NOW + 200) is False
    assert (await hub.complete_activity(second, result, now=NOW + 62)).delivered is True
    (woken,) = await hub.lock_instances(ORCHESTRATION, owner="o", now=NOW + 63, lease=30, limit=1)
    assert [m.event["EventType"] for m in woken.messages] == [5]


async def test_a_released_activity_is_available_again_at_once(hub: TaskHub) -> None:
    await hub.create_instance(started("a"), now=NOW, dedupe=RUNNING_STATUSES)
    (item,) = await hub.lock_instances(ORCHESTRATION, owner="o", now=NOW, lease=30, limit=1)
    await hub.commit(item, Commit(running(), [], activities=[NewActivity("a", "e1", 0, "act", None)]), now=NOW)
    (work,) = await hub.lock_activities(owner="w1", now=NOW, lease=60, limit=5)
    await hub.release_activity(work)
    assert len(await hub.lock_activities(owner="w2", now=NOW, lease=60, limit=5)) == 1


async def test_a_suspended_instance_only_receives_control_messages(hub: TaskHub) -> None:
    await hub.create_instance(started("a"), now=NOW, dedupe=RUNNING_STATUSES)
    (item,) = await hub.lock_instances(ORCHESTRATION, owner="o", now=NOW, lease=30, limit=1)
    await hub.commit(item, Commit(running(status="Suspended"), [m.id for m in item.messages]), now=NOW)
    await hub.send([Outbound("a", {"EventType": 15, "Name": "x"})], now=NOW)
    assert await hub.lock_instances(ORCHESTRATION, owner="o", now=NOW, lease=30, limit=1) == []
    await hub.send([Outbound("a", {"EventType": 20}, control=True)], now=NOW)
    (resumed,) = await hub.lock_instances(ORCHESTRATION, owner="o", now=NOW, lease=30, limit=1)
    assert [m.event["EventType"] for m in resumed.messages] == [20]


async def test_entities_are_created_by_their_first_message_and_batches_are_bounded(hub: TaskHub) -> None:
    await hub.send([Outbound("@counter@k", {"EventType": 15, "Name": "op", "Input": str(i)}) for i in range(3)],
                   now=NOW)
    record = await hub.get_instance("@counter@k")
    assert record is not None and record.kind == ENTITY and not record.entity_exists
    (item,) = await hub.lock_instances(ENTITY, owner="o", now=NOW, lease=30, limit=5, batch=2)
    assert [m.event["Input"] for m in item.messages] == ["0", "1"]
    update = InstanceUpdate(status="Running", execution_id="", input=None, output=None, custom_status=None,
                            entity_exists=True, entity_state="1")
    await hub.commit(item, Commit(update, [m.id for m in item.messages]), now=NOW)
    state = await hub.get_instance("@counter@k")
    assert state is not None and state.entity_exists and state.entity_state == "1"
    assert await hub.lock_instances(ORCHESTRATION, owner="o", now=NOW, lease=30, limit=5) == []


async def test_queries_page_and_filter_and_purge_removes_everything(hub: TaskHub) -> None:
    for i in range(5):
        await hub.create_instance(started(f"job-{i}"), now=NOW + i, dedupe=RUNNING_STATUSES)
    await hub.create_instance(started("other"), now=NOW + 10, dedupe=RUNNING_STATUSES)
    page = await hub.query(InstanceQuery(prefix="job-", top=2))
    assert [r.instance_id for r in page.instances] == ["job-0", "job-1"] and page.continuation
    rest = await hub.query(InstanceQuery(prefix="job-", top=10, continuation=page.continuation))
    assert [r.instance_id for r in rest.instances] == ["job-2", "job-3", "job-4"] and rest.continuation is None
    assert (await hub.query(InstanceQuery(statuses=frozenset({"Completed"})))).instances == []
    assert await hub.purge(["job-0", "missing"]) == 1
    assert await hub.get_instance("job-0") is None
    assert await hub.lock_instances(ORCHESTRATION, owner="o", now=NOW + 20, lease=30, limit=10) != []


async def test_a_host_that_lost_its_lease_changes_nothing(hub: TaskHub) -> None:
    await hub.create_instance(started("a"), now=NOW, dedupe=RUNNING_STATUSES)
    (stale,) = await hub.lock_instances(ORCHESTRATION, owner="host1", now=NOW, lease=30, limit=1)
    (taken,) = await hub.lock_instances(ORCHESTRATION, owner="host2", now=NOW + 31, lease=30, limit=1)
    commit = Commit(running(status="Completed"), [m.id for m in stale.messages], history=[{"EventType": 12}],
                    messages=[Outbound("b", {"EventType": 15, "Name": "x"})],
                    activities=[NewActivity("a", "e1", 0, "act", None)], instances=[started("child")])
    with pytest.raises(LeaseLost):
        await hub.commit(stale, commit, now=NOW + 32)
    assert await hub.renew_instance(stale, until=NOW + 300) is False
    await hub.release(stale)  # a stale release leaves the new holder's lease alone
    assert await hub.lock_instances(ORCHESTRATION, owner="host3", now=NOW + 33, lease=30, limit=1) == []
    assert await hub.get_history("a") == [] and await hub.get_instance("child") is None
    assert await hub.lock_activities(owner="w", now=NOW + 33, lease=60, limit=5) == []
    counts = await hub.counts()
    assert counts.inbox == 1 and counts.activities == 0 and counts.instances == {"Pending": 1}
    await hub.commit(taken, Commit(running(), [m.id for m in taken.messages], history=[{"EventType": 12}]),
                     now=NOW + 34)
    assert [e["EventType"] for e in await hub.get_history("a")] == [12]


async def test_hubs_sharing_a_store_are_separate(local_storage: HostStorage) -> None:
    first, second = local_storage.task_hub("HubOne"), local_storage.task_hub("HubTwo")
    for store in (first, second):
        await store.create_if_not_exists()
    await first.create_instance(started("a"), now=NOW, dedupe=RUNNING_STATUSES)
    assert await second.get_instance("a") is None
    assert await second.lock_instances(ORCHESTRATION, owner="o", now=NOW, lease=30, limit=5) == []
    await second.create_instance(started("a", "e2"), now=NOW, dedupe=RUNNING_STATUSES)
    (item,) = await first.lock_instances(ORCHESTRATION, owner="o", now=NOW, lease=30, limit=5)
    assert item.instance.execution_id == "e1"
    assert await second.purge(["a"]) == 1 and await first.get_instance("a") is not None


async def test_a_commit_can_take_the_activities_it_creates_for_its_host(hub: TaskHub) -> None:
    await hub.create_instance(started("a"), now=NOW, dedupe=RUNNING_STATUSES)
    (item,) = await hub.lock_instances(ORCHESTRATION, owner="o", now=NOW, lease=30, limit=1)
    activities = [NewActivity("a", "e1", n, "act", f'"{n}"') for n in range(3)]
    done = await hub.commit(item, Commit(running(), [m.id for m in item.messages], activities=activities,
                                         claim=ActivityClaim("host1", 60, 2)), now=NOW)
    assert [(a.task_id, a.input, a.dequeue_count) for a in done.claimed] == [(0, '"0"', 1), (1, '"1"', 1)]
    assert not done.pending  # nothing else waits for the instance
    (rest,) = await hub.lock_activities(owner="host2", now=NOW, lease=60, limit=5)  # the third only
    assert rest.task_id == 2
    assert (await hub.complete_activity(done.claimed[0], Outbound("a", {"EventType": 5}, "e1"), now=NOW)).delivered
    lapsed = await hub.lock_activities(owner="host2", now=NOW + 61, lease=60, limit=5)  # the leases lapsed
    assert [(a.task_id, a.dequeue_count) for a in lapsed] == [(1, 2), (2, 2)]


async def test_a_commit_says_whether_messages_wait_for_the_instance(hub: TaskHub) -> None:
    await hub.create_instance(started("a"), now=NOW, dedupe=RUNNING_STATUSES)
    (item,) = await hub.lock_instances(ORCHESTRATION, owner="o", now=NOW, lease=30, limit=1)
    await hub.send([Outbound("a", {"EventType": 15, "Name": "x"})], now=NOW)  # arrives while held
    done = await hub.commit(item, Commit(running(), [m.id for m in item.messages]), now=NOW)
    assert done.pending and done.claimed == []


async def _waiting_on_activity(hub: TaskHub, instance_id: str = "a") -> ActivityItem:
    """An orchestration that scheduled one activity (history written), the activity leased to `w`."""
    await hub.create_instance(started(instance_id), now=NOW, dedupe=RUNNING_STATUSES)
    (item,) = await hub.lock_instances(ORCHESTRATION, owner="o", now=NOW, lease=30, limit=1)
    await hub.commit(item, Commit(running(), [m.id for m in item.messages], history=[{"EventType": 12}],
                                  activities=[NewActivity(instance_id, "e1", 0, "act", None)]), now=NOW)
    (activity,) = await hub.lock_activities(owner="w", now=NOW, lease=60, limit=1)
    return activity


async def test_a_completion_can_take_the_instance_it_wakes_for_its_host(hub: TaskHub) -> None:
    activity = await _waiting_on_activity(hub)
    await hub.send([Outbound("a", {"EventType": 15, "Name": "x"})], now=NOW)  # waiting already: it comes too
    done = await hub.complete_activity(activity, Outbound("a", {"EventType": 5, "TaskScheduledId": 0}, "e1"),
                                       now=NOW + 1, claim=InstanceClaim("host1", 30))
    assert done.delivered and done.claimed is not None
    item = done.claimed
    assert item.instance.instance_id == "a" and item.instance.status == "Running"
    assert item.lease_token.startswith("host1:") and item.lease_expires == NOW + 31
    assert [e["EventType"] for e in item.history] == [12]
    assert [m.event["EventType"] for m in item.messages] == [15, 5]
    # Held like a locked instance: nobody else takes it while the lease lasts, and nothing is left to take.
    assert await hub.lock_instances(ORCHESTRATION, owner="host2", now=NOW + 2, lease=30, limit=5) == []
    committed = await hub.commit(item, Commit(running(), [m.id for m in item.messages],
                                              history=[{"EventType": 15}, {"EventType": 5}]), now=NOW + 2)
    assert not committed.pending
    assert await hub.lock_instances(ORCHESTRATION, owner="host2", now=NOW + 100, lease=30, limit=5) == []
    assert [e["EventType"] for e in await hub.get_history("a")] == [12, 15, 5]


async def test_a_claimed_instance_is_fenced_by_its_lease_like_a_locked_one(hub: TaskHub) -> None:
    activity = await _waiting_on_activity(hub)
    done = await hub.complete_activity(activity, Outbound("a", {"EventType": 5, "TaskScheduledId": 0}, "e1"),
                                       now=NOW + 1, claim=InstanceClaim("host1", 30))
    assert done.claimed is not None
    stale = done.claimed
    (taken,) = await hub.lock_instances(ORCHESTRATION, owner="host2", now=NOW + 32, lease=30, limit=5)
    assert taken.lease_token != stale.lease_token and [m.event["EventType"] for m in taken.messages] == [5]
    assert await hub.renew_instance(stale, until=NOW + 300) is False
    with pytest.raises(LeaseLost):
        await hub.commit(stale, Commit(running(status="Completed"), [m.id for m in stale.messages],
                                       history=[{"EventType": 5}]), now=NOW + 33)
    assert [e["EventType"] for e in await hub.get_history("a")] == [12]  # the stale holder wrote nothing
    await hub.commit(taken, Commit(running(), [m.id for m in taken.messages], history=[{"EventType": 5}]),
                     now=NOW + 34)
    assert [e["EventType"] for e in await hub.get_history("a")] == [12, 5]


async def test_a_completion_claims_nothing_held_by_another_host_or_suspended(hub: TaskHub) -> None:
    activity = await _waiting_on_activity(hub)
    await hub.send([Outbound("a", {"EventType": 15, "Name": "x"})], now=NOW)
    (held,) = await hub.lock_instances(ORCHESTRATION, owner="host2", now=NOW, lease=30, limit=5)
    done = await hub.complete_activity(activity, Outbound("a", {"EventType": 5, "TaskScheduledId": 0}, "e1"),
                                       now=NOW + 1, claim=InstanceClaim("host1", 30))
    assert done.delivered and done.claimed is None
    committed = await hub.commit(held, Commit(running(), [m.id for m in held.messages]), now=NOW + 2)
    assert committed.pending  # the result waits for the next taker, once
    (woken,) = await hub.lock_instances(ORCHESTRATION, owner="host1", now=NOW + 2, lease=30, limit=5)
    assert [m.event["EventType"] for m in woken.messages] == [5]
    await hub.commit(woken, Commit(running(status="Suspended"), [m.id for m in woken.messages],
                                   activities=[NewActivity("a", "e1", 1, "act", None)]), now=NOW + 3)
    (second,) = await hub.lock_activities(owner="w", now=NOW + 3, lease=60, limit=1)
    suspended = await hub.complete_activity(second, Outbound("a", {"EventType": 5, "TaskScheduledId": 1}, "e1"),
                                            now=NOW + 4, claim=InstanceClaim("host1", 30))
    assert suspended.delivered and suspended.claimed is None
    assert await hub.lock_instances(ORCHESTRATION, owner="host1", now=NOW + 5, lease=30, limit=5) == []


async def test_a_stale_completion_claims_nothing(hub: TaskHub) -> None:
    activity = await _waiting_on_activity(hub)
    (again,) = await hub.lock_activities(owner="w2", now=NOW + 61, lease=60, limit=1)  # the lease lapsed
    result = Outbound("a", {"EventType": 5, "TaskScheduledId": 0}, "e1")
    stale = await hub.complete_activity(activity, result, now=NOW + 62, claim=InstanceClaim("host1", 30))
    assert not stale.delivered and stale.claimed is None
    done = await hub.complete_activity(again, result, now=NOW + 62, claim=InstanceClaim("host2", 30))
    assert done.delivered and done.claimed is not None and len(done.claimed.messages) == 1


async def test_completions_at_once_claim_an_instance_once_and_deliver_each_result_once(hub: TaskHub) -> None:
    import asyncio

    await hub.create_instance(started("a"), now=NOW, dedupe=RUNNING_STATUSES)
    (item,) = await hub.lock_instances(ORCHESTRATION, owner="o", now=NOW, lease=30, limit=1)
    await hub.commit(item, Commit(running(), [m.id for m in item.messages],
                                  activities=[NewActivity("a", "e1", n, "act", None) for n in range(3)]), now=NOW)
    activities = await hub.lock_activities(owner="w", now=NOW, lease=60, limit=3)
    done = await asyncio.gather(*(hub.complete_activity(
        a, Outbound("a", {"EventType": 5, "TaskScheduledId": a.task_id}, "e1"), now=NOW + 1,
        claim=InstanceClaim("host1", 30)) for a in activities))
    assert all(d.delivered for d in done)
    (claimed,) = [d.claimed for d in done if d.claimed is not None]
    first = [m.event["TaskScheduledId"] for m in claimed.messages]
    committed = await hub.commit(claimed, Commit(running(), [m.id for m in claimed.messages]), now=NOW + 2)
    rest = await hub.lock_instances(ORCHESTRATION, owner="host2", now=NOW + 2, lease=30, limit=5)
    later = [m.event["TaskScheduledId"] for w in rest for m in w.messages]
    assert committed.pending == bool(later) and sorted(first + later) == [0, 1, 2]


async def test_a_start_can_take_the_instance_it_creates_for_its_host(hub: TaskHub) -> None:
    item = await hub.create_instance(started("a"), now=NOW, dedupe=RUNNING_STATUSES, claim=InstanceClaim("host1", 30))
    assert item is not None and item.instance.status == "Pending" and item.history == []
    assert [h.event_type(m.event) for m in item.messages] == [h.EventType.ExecutionStarted]
    assert item.lease_token.startswith("host1:") and item.lease_expires == NOW + 30
    assert await hub.lock_instances(ORCHESTRATION, owner="host2", now=NOW + 29, lease=30, limit=5) == []
    (taken,) = await hub.lock_instances(ORCHESTRATION, owner="host2", now=NOW + 31, lease=30, limit=5)
    with pytest.raises(LeaseLost):  # fenced like a locked instance
        await hub.commit(item, Commit(running(), [m.id for m in item.messages]), now=NOW + 32)
    await hub.commit(taken, Commit(running(), [m.id for m in taken.messages]), now=NOW + 32)
    assert await hub.lock_instances(ORCHESTRATION, owner="host2", now=NOW + 100, lease=30, limit=5) == []


async def test_a_taken_start_is_the_item_a_fetch_returns_for_new_and_replaced_ids(hub: TaskHub) -> None:
    fetched = await hub.create_instance(started("fetched"), now=NOW, dedupe=RUNNING_STATUSES)
    (fetched,) = await hub.lock_instances(ORCHESTRATION, owner="host1", now=NOW, lease=30, limit=5)
    taken = await hub.create_instance(started("taken"), now=NOW, dedupe=RUNNING_STATUSES,
                                      claim=InstanceClaim("host1", 30))
    assert taken is not None

    def shape(item: WorkItem) -> tuple[object, ...]:
        record = item.instance
        return (record.kind, record.name, record.version, record.execution_id, record.status, record.input,
                record.output, record.created_time, record.parent_instance_id, item.history,
                [(m.execution_id, {**m.event, "OrchestrationInstance": None}, m.visible_at) for m in item.messages],
                item.lease_expires)

    assert shape(taken) == shape(fetched)
    # an id that exists and may be replaced: the old execution goes, the new one is taken
    await hub.commit(taken, Commit(running(status="Completed"), [m.id for m in taken.messages]), now=NOW + 1)
    again = await hub.create_instance(started("taken", "e2"), now=NOW + 2, dedupe=RUNNING_STATUSES,
                                      claim=InstanceClaim("host1", 30))
    assert again is not None and again.instance.execution_id == "e2" and again.history == []
    assert [m.execution_id for m in again.messages] == ["e2"] and again.lease_token != taken.lease_token
    assert await hub.lock_instances(ORCHESTRATION, owner="host2", now=NOW + 3, lease=30, limit=5) == []


async def test_a_start_takes_nothing_refused_or_not_yet_due(hub: TaskHub) -> None:
    await hub.create_instance(started("a"), now=NOW, dedupe=RUNNING_STATUSES)
    with pytest.raises(InstanceExists):
        await hub.create_instance(started("a", "e2"), now=NOW, dedupe=RUNNING_STATUSES,
                                  claim=InstanceClaim("host1", 30))
    (item,) = await hub.lock_instances(ORCHESTRATION, owner="host2", now=NOW, lease=30, limit=5)
    assert item.instance.execution_id == "e1"  # the refused start took nothing
    await hub.commit(item, Commit(running(), [m.id for m in item.messages]), now=NOW)
    later = started("b")
    scheduled = NewInstance(later.instance_id, later.name, later.version, later.execution_id, later.input,
                            later.started, visible_at=NOW + 60)
    assert await hub.create_instance(scheduled, now=NOW, dedupe=RUNNING_STATUSES,
                                     claim=InstanceClaim("host1", 30)) is None
    assert await hub.lock_instances(ORCHESTRATION, owner="host2", now=NOW + 1, lease=30, limit=5) == []
    (due,) = await hub.lock_instances(ORCHESTRATION, owner="host2", now=NOW + 60, lease=30, limit=5)
    assert due.instance.instance_id == "b"


async def test_a_result_with_more_activities_outstanding_leaves_the_instance_for_one_fetch(hub: TaskHub) -> None:
    await hub.create_instance(started("a"), now=NOW, dedupe=RUNNING_STATUSES)
    (item,) = await hub.lock_instances(ORCHESTRATION, owner="o", now=NOW, lease=30, limit=1)
    await hub.commit(item, Commit(running(), [m.id for m in item.messages],
                                  activities=[NewActivity("a", "e1", n, "act", None) for n in range(2)]), now=NOW)
    first, second = await hub.lock_activities(owner="w", now=NOW, lease=60, limit=2)
    early = await hub.complete_activity(first, Outbound("a", {"EventType": 5, "TaskScheduledId": 0}, "e1"),
                                        now=NOW + 1, claim=InstanceClaim("host1", 30))
    assert early.delivered and early.claimed is None  # the other result is still to come
    last = await hub.complete_activity(second, Outbound("a", {"EventType": 5, "TaskScheduledId": 1}, "e1"),
                                       now=NOW + 1, claim=InstanceClaim("host1", 30))
    assert last.claimed is not None and [m.event["TaskScheduledId"] for m in last.claimed.messages] == [0, 1]


async def _in_session(hub: TaskHub) -> tuple[WorkItem, ActivityItem]:
    """An episode that scheduled one activity, took it for its host and kept the instance's lease."""
    await hub.create_instance(started("a"), now=NOW, dedupe=RUNNING_STATUSES)
    (item,) = await hub.lock_instances(ORCHESTRATION, owner="o", now=NOW, lease=30, limit=1)
    done = await hub.commit(item, Commit(running(), [m.id for m in item.messages], history=[{"EventType": 12}],
                                         activities=[NewActivity("a", "e1", 0, "act", None)],
                                         claim=ActivityClaim("o", 60, 1), release=False), now=NOW)
    assert not done.pending and len(done.claimed) == 1
    return item, done.claimed[0]


RESULT = Outbound("a", {"EventType": 5, "TaskScheduledId": 0}, "e1")


async def test_a_session_commits_the_result_with_the_next_episode(hub: TaskHub) -> None:
    item, activity = await _in_session(hub)
    await hub.send([Outbound("a", {"EventType": 15, "Name": "later"}, visible_at=NOW + 100)], now=NOW)  # a timer
    assert await hub.lock_instances(ORCHESTRATION, owner="o2", now=NOW + 1, lease=30, limit=5) == []  # still held
    done = await hub.commit_session(item, Commit(running(status="Completed"), [], history=[{"EventType": 5}]),
                                    activity, RESULT, now=NOW + 1, claim=InstanceClaim("o", 30))
    assert done.delivered and done.committed is not None and done.claimed is None
    assert [e["EventType"] for e in await hub.get_history("a")] == [12, 5]
    record = await hub.get_instance("a")
    assert record is not None and record.status == "Completed"
    counts = await hub.counts()
    assert counts.activities == 0 and counts.inbox == 1  # the result never went through the inbox
    (later,) = await hub.lock_instances(ORCHESTRATION, owner="o2", now=NOW + 100, lease=30, limit=5)  # released
    assert [m.event["Name"] for m in later.messages] == ["later"]


async def test_a_session_can_keep_the_instance_for_its_next_activity(hub: TaskHub) -> None:
    item, activity = await _in_session(hub)
    done = await hub.commit_session(item, Commit(running(), [], history=[{"EventType": 5}, {"EventType": 4}],
                                                 activities=[NewActivity("a", "e1", 1, "act", None)],
                                                 claim=ActivityClaim("o", 60, 1), release=False),
                                    activity, RESULT, now=NOW + 1)
    assert done.committed is not None and [a.task_id for a in done.committed.claimed] == [1]
    assert not done.committed.pending
    await hub.send([Outbound("a", {"EventType": 15, "Name": "x"})], now=NOW + 2)
    assert await hub.lock_instances(ORCHESTRATION, owner="o2", now=NOW + 2, lease=30, limit=5) == []  # still held
    again = await hub.commit_session(item, Commit(running(status="Completed"), []), done.committed.claimed[0],
                                     Outbound("a", {"EventType": 5, "TaskScheduledId": 1}, "e1"), now=NOW + 3)
    assert again.delivered and again.committed is None  # the event arrived: the result waits beside it
    (taken,) = await hub.lock_instances(ORCHESTRATION, owner="o2", now=NOW + 3, lease=30, limit=5)
    assert [m.event["EventType"] for m in taken.messages] == [15, 5]
    assert [e["EventType"] for e in taken.history] == [12, 5, 4]


async def test_a_session_that_got_messages_delivers_the_result_and_takes_the_instance_again(hub: TaskHub) -> None:
    item, activity = await _in_session(hub)
    await hub.send([Outbound("a", {"EventType": 15, "Name": "x"})], now=NOW)  # arrives while kept
    done = await hub.commit_session(item, Commit(running(status="Completed"), [], history=[{"EventType": 5}]),
                                    activity, RESULT, now=NOW + 1, claim=InstanceClaim("host1", 30))
    assert done.delivered and done.committed is None and done.claimed is not None
    taken = done.claimed
    assert taken.lease_token.startswith("host1:") and taken.lease_token != item.lease_token
    assert [m.event["EventType"] for m in taken.messages] == [15, 5]
    assert [e["EventType"] for e in taken.history] == [12]  # the episode was not written
    record = await hub.get_instance("a")
    assert record is not None and record.status == "Running"
    assert (await hub.counts()).activities == 0


async def test_a_session_whose_activity_lease_lapsed_writes_nothing_and_gives_the_instance_back(hub: TaskHub) -> None:
    item, activity = await _in_session(hub)
    (rerun,) = await hub.lock_activities(owner="w2", now=NOW + 61, lease=60, limit=5)  # taken over
    done = await hub.commit_session(item, Commit(running(status="Completed"), [], history=[{"EventType": 5}]),
                                    activity, RESULT, now=NOW + 62, claim=InstanceClaim("o", 30))
    assert not done.delivered and done.committed is None and done.claimed is None
    assert [e["EventType"] for e in await hub.get_history("a")] == [12] and (await hub.counts()).inbox == 0
    woken = await hub.complete_activity(rerun, RESULT, now=NOW + 63, claim=InstanceClaim("w2", 30))
    assert woken.delivered and woken.claimed is not None  # the instance was given back: the rerun's result takes it


async def test_a_session_whose_instance_was_taken_over_only_delivers_the_result(hub: TaskHub) -> None:
    item, activity = await _in_session(hub)
    await hub.send([Outbound("a", {"EventType": 15, "Name": "x"})], now=NOW + 31)
    (other,) = await hub.lock_instances(ORCHESTRATION, owner="o2", now=NOW + 31, lease=30, limit=5)  # lapsed
    done = await hub.commit_session(item, Commit(running(status="Completed"), [], history=[{"EventType": 5}]),
                                    activity, RESULT, now=NOW + 32, claim=InstanceClaim("o", 30))
    assert done.delivered and done.committed is None and done.claimed is None
    assert [e["EventType"] for e in await hub.get_history("a")] == [12]
    await hub.commit(other, Commit(running(), [m.id for m in other.messages], history=[{"EventType": 15}]),
                     now=NOW + 33)  # the new holder's lease is untouched
    (result,) = await hub.lock_instances(ORCHESTRATION, owner="o2", now=NOW + 34, lease=30, limit=5)
    assert [m.event["EventType"] for m in result.messages] == [5]
