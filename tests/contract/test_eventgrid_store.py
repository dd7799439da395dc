"""Event Grid store rules every backend must follow: atomic appends, cursors, leased deliveries.

`other` is a second handle on the same store (as a second host sharing the data folder opens
it): what one host leases the other must not take, and updates apply only for the holder.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from funchost.storage.eventgrid import (
    DEADLETTERED,
    DELIVERED,
    PENDING,
    EventGridStore,
    NewEvent,
    Target,
)

from .conftest import backend_settings, open_for_test

NOW = 1_000_000.0


def event(n: int, *subscriptions: str, attempts: int = 30, ttl: float = 86400.0) -> NewEvent:
    return NewEvent({"id": f"ev-{n}", "subject": f"/s/{n}", "data": {"n": n}},
                    tuple(Target(s, attempts, ttl) for s in subscriptions))


@pytest.fixture
async def other(local_backend_name: str, tmp_path: Path, manual_clock: object,
                request: pytest.FixtureRequest) -> AsyncIterator[EventGridStore]:
    """A second host's store: the same data folder (embedded), or the same server and schema from a
    data folder of its own (postgres: hosts on other machines share nothing else)."""
    settings = backend_settings(local_backend_name, request)
    folder = tmp_path / ("data" if local_backend_name == "embedded" else "other-host")
    storage = open_for_test(local_backend_name, folder, settings, manual_clock)
    yield storage.eventgrid_store()
    await storage.aclose()


async def test_append_writes_one_delivery_per_matching_subscription(eventgrid_store: EventGridStore) -> None:
    assert await eventgrid_store.append("orders", "EventGridSchema", [event(1, "a", "b"), event(2, "a"),
                                                                      event(3)], NOW)
    rows = await eventgrid_store.deliveries()
    assert [(r.subscription, r.event["id"]) for r in rows] == [("a", "ev-1"), ("b", "ev-1"), ("a", "ev-2")]
    row = rows[0]
    assert (row.topic, row.schema, row.state, row.attempts, row.max_attempts) == (
        "orders", "EventGridSchema", PENDING, 0, 30)
    assert row.next_attempt == NOW and row.expires == NOW + 86400 and row.published == NOW
    assert row.size == len(b'{"id":"ev-1","subject":"/s/1","data":{"n":1}}')
    assert [r.event["id"] for r in await eventgrid_store.deliveries("b")] == ["ev-1"]


async def test_cursor_compare_and_set_makes_appends_exactly_once(eventgrid_store: EventGridStore,
                                                                 other: EventGridStore) -> None:
    assert await eventgrid_store.get_cursor("blob:acct:t") is None
    assert await eventgrid_store.init_cursor("blob:acct:t", "") == ""
    assert await other.init_cursor("blob:acct:t", "ignored") == ""  # already set: kept
    assert await eventgrid_store.append("t", "EventGridSchema", [event(1, "a")], NOW, cursor=("blob:acct:t", "", "01"))
    # The other host read the old cursor too: its append of the same changes is refused.
    assert not await other.append("t", "EventGridSchema", [event(1, "a")], NOW, cursor=("blob:acct:t", "", "01"))
    assert await other.get_cursor("blob:acct:t") == "01"
    assert len(await eventgrid_store.deliveries()) == 1


async def test_a_leased_row_is_not_due_for_anyone_else(eventgrid_store: EventGridStore, other: EventGridStore) -> None:
    await eventgrid_store.append("t", "EventGridSchema", [event(i, "a") for i in range(3)], NOW)
    mine = await eventgrid_store.lease_due("host-a", NOW, 60.0, limit=2)
    assert [r.event["id"] for r in mine] == ["ev-0", "ev-1"]
    theirs = await other.lease_due("host-b", NOW, 60.0, limit=10)
    assert [r.event["id"] for r in theirs] == ["ev-2"]
    assert await other.lease_due("host-b", NOW, 60.0, limit=10) == []
    assert await other.next_due() == NOW + 60  # when the leases run out
    later = await other.lease_due("host-b", NOW + 60, 60.0, limit=10)  # a lease that ran out is free again
    assert sorted(r.event["id"] for r in later) == ["ev-0", "ev-1", "ev-2"]


async def test_the_next_due_time_is_the_earliest_of_waiting_and_leased_rows(eventgrid_store: EventGridStore) -> None:
    await eventgrid_store.append("t", "EventGridSchema", [event(i, "a") for i in range(3)], NOW)
    first, second, third = await eventgrid_store.lease_due("h", NOW, 60.0, limit=3)
    assert await eventgrid_store.update("h", [(first.id, {"next_attempt": NOW + 100}),
                                              (second.id, {"next_attempt": NOW + 30})]) == 2
    assert await eventgrid_store.next_due() == NOW + 30  # a released row waiting for its retry
    assert await eventgrid_store.update("h", [(second.id, {"state": DELIVERED})]) == 0  # released already
    assert [r.id for r in await eventgrid_store.lease_due("h", NOW + 30, 60.0, limit=3)] == [second.id]
    # Leased until NOW + 90 (the third until NOW + 60): the third's lease ends first.
    assert await eventgrid_store.next_due() == NOW + 60
    assert await eventgrid_store.update("h", [(third.id, {"state": DELIVERED}), (second.id, {"state": DELIVERED})]) == 2
    assert await eventgrid_store.next_due() == NOW + 100  # only the first is left, waiting
    assert await eventgrid_store.update("h", [(first.id, {"state": DELIVERED})]) == 0  # not leased: no change
    [row] = await eventgrid_store.lease_due("h", NOW + 100, 60.0, limit=3)
    assert await eventgrid_store.update("h", [(row.id, {"state": DELIVERED})]) == 1
    assert await eventgrid_store.next_due() is None


async def test_updates_apply_only_to_rows_the_owner_still_holds(eventgrid_store: EventGridStore,
                                                                other: EventGridStore) -> None:
    await eventgrid_store.append("t", "EventGridSchema", [event(1, "a"), event(2, "a")], NOW)
    first, second = await eventgrid_store.lease_due("host-a", NOW, 60.0, limit=10)
    assert await other.update("host-b", [(first.id, {"state": DELIVERED})]) == 0  # not theirs
    changed = await eventgrid_store.update("host-a", [
        (first.id, {"state": DELIVERED, "attempts": 1, "last_outcome": "Succeeded", "last_status": 200,
                    "last_attempt": NOW, "finished": NOW}),
        (second.id, {"attempts": 1, "next_attempt": NOW + 10, "last_outcome": "Busy", "last_status": 503}),
    ])
    assert changed == 2
    by_id = {r.id: r for r in await eventgrid_store.deliveries()}
    assert (by_id[first.id].state, by_id[first.id].last_status) == (DELIVERED, 200)
    assert (by_id[second.id].state, by_id[second.id].attempts, by_id[second.id].next_attempt) == (PENDING, 1, NOW + 10)
    assert await eventgrid_store.update("host-a", [(second.id, {"state": DELIVERED})]) == 0  # lease released
    assert await eventgrid_store.next_due() == NOW + 10
    assert [r.id for r in await other.lease_due("host-b", NOW + 10, 60.0, limit=10)] == [second.id]


async def test_stats_per_subscription(eventgrid_store: EventGridStore) -> None:
    await eventgrid_store.append("t", "EventGridSchema", [event(1, "a", "b"), event(2, "a")], NOW)
    rows = await eventgrid_store.lease_due("h", NOW, 60.0, limit=10)
    a1, b1, a2 = rows
    await eventgrid_store.update("h", [(a1.id, {"state": DELIVERED}), (b1.id, {"state": DEADLETTERED}),
                                       (a2.id, {"attempts": 2, "next_attempt": NOW + 30})])
    stats = {s.subscription: s for s in await eventgrid_store.stats()}
    assert (stats["a"].delivered, stats["a"].pending, stats["a"].retrying, stats["a"].next_attempt) == (1, 1, 1, NOW + 30)
    assert (stats["b"].deadlettered, stats["b"].pending) == (1, 0)


async def test_endpoint_validations_are_remembered_per_endpoint(eventgrid_store: EventGridStore,
                                                                other: EventGridStore) -> None:
    assert not await eventgrid_store.is_validated("hook", "hash-1")
    await eventgrid_store.set_validated("hook", "hash-1", NOW)
    assert await other.is_validated("hook", "hash-1")
    assert not await other.is_validated("hook", "hash-2")  # the endpoint changed: validate again
