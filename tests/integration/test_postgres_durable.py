"""The task hub on PostgreSQL with real clocks: two backends (two machines) on one schema, one of
them an hour ahead. Leases and timers go by the server's clock, so the skewed host's timer fires
when it meant it to, and neither host takes the other's instance before its lease lapses. Two
starts of one new instance id at the same instant create it once."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import psycopg
import pytest
from tests.support.postgres_hosts import host

from funchost.clock import SystemClock
from funchost.durable import history as h
from funchost.storage.durable import (
    ORCHESTRATION,
    RUNNING_STATUSES,
    Commit,
    InstanceExists,
    InstanceUpdate,
    NewInstance,
    Outbound,
)

pytestmark = pytest.mark.postgres

SKEW = 3600.0


class AheadClock(SystemClock):
    """A machine whose clock is an hour fast."""

    def now(self) -> datetime:
        return super().now() + timedelta(seconds=SKEW)



def started(instance_id: str, at: float) -> NewInstance:
    event = h.execution_started(datetime.fromtimestamp(at, timezone.utc), instance_id=instance_id,
                                execution_id="e1", name="orch", version="", input_text=None)
    return NewInstance(instance_id, "orch", "", "e1", None, event)


async def test_timers_and_leases_go_by_the_servers_clock_whatever_the_hosts_clocks_say(
        tmp_path: Path, postgres_dsn: str, postgres_schema: str) -> None:
    ahead_clock, right_clock = AheadClock(), SystemClock()
    ahead = host(tmp_path, "ahead", postgres_dsn, postgres_schema, ahead_clock)
    right = host(tmp_path, "right", postgres_dsn, postgres_schema, right_clock)
    try:
        hub_ahead, hub_right = ahead.task_hub("Skew"), right.task_hub("Skew")
        await hub_ahead.create_if_not_exists()
        now_ahead = ahead_clock.now().timestamp()
        await hub_ahead.create_instance(started("a", now_ahead), now=now_ahead, dedupe=RUNNING_STATUSES)
        # The right host takes it at once: created "now" on the server, not an hour from now.
        (item,) = await hub_right.lock_instances(ORCHESTRATION, owner="right", now=time.time(), lease=2, limit=1)
        await hub_right.release(item)
        update = InstanceUpdate(status="Running", execution_id="e1", input=None, output=None, custom_status=None)
        # The ahead host holds it for 2 s of the server's time: the right host cannot take it before.
        now_ahead = ahead_clock.now().timestamp()
        (held,) = await hub_ahead.lock_instances(ORCHESTRATION, owner="ahead", now=now_ahead, lease=2, limit=1)
        assert await hub_right.lock_instances(ORCHESTRATION, owner="right", now=time.time(), lease=2, limit=1) == []
        # It sets a timer 1 s ahead by its own clock, and commits.
        timer = Outbound("a", {"EventType": 10, "FireAt": "x"}, "e1", visible_at=ahead_clock.now().timestamp() + 1)
        await hub_ahead.commit(held, Commit(update, [m.id for m in held.messages], messages=[timer]),
                               now=ahead_clock.now().timestamp())
        # Not due yet for either host; each is told when, in its own clock's terms (a poll, then the ask).
        assert await hub_right.lock_instances(ORCHESTRATION, owner="right", now=time.time(), lease=2, limit=1) == []
        due_right = await hub_right.next_visible(ORCHESTRATION, now=time.time())
        assert due_right is not None and 0 < due_right - time.time() <= 1.5
        assert await hub_ahead.lock_instances(ORCHESTRATION, owner="ahead", now=ahead_clock.now().timestamp(),
                                              lease=2, limit=1) == []
        due_ahead = await hub_ahead.next_visible(ORCHESTRATION, now=ahead_clock.now().timestamp())
        assert due_ahead is not None and 0 < due_ahead - ahead_clock.now().timestamp() <= 1.5
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # bounded: the timer fires about 1 s after it was set
            found = await hub_right.lock_instances(ORCHESTRATION, owner="right", now=time.time(), lease=2, limit=1)
            if found:
                assert [m.event["EventType"] for m in found[0].messages] == [10]
                break
            await asyncio.sleep(0.05)
        else:
            pytest.fail("the timer set by the host an hour ahead never fired")
    finally:
        await ahead.aclose()
        await right.aclose()


async def test_two_hosts_starting_one_new_instance_id_at_once_create_it_once(
        tmp_path: Path, postgres_dsn: str, postgres_schema: str) -> None:
    """The race the new-id fast path leaves: a start finds no row, another host's start inserts
    one meanwhile, so the first one's insert conflicts. It must still honour the dedupe statuses
    (refused: the instance is Pending now), not replace the other host's fresh instance."""
    first = host(tmp_path, "first", postgres_dsn, postgres_schema)
    try:
        hub = first.task_hub("Race")
        await hub.create_if_not_exists()
        with psycopg.connect(postgres_dsn) as other:  # the other host's start, inside its transaction
            other.execute(f'SET search_path TO "{postgres_schema}"')
            (hub_id,) = other.execute("SELECT hub_id FROM durable_hubs WHERE name = 'race'").fetchone() or (None,)
            other.execute("SELECT durable_create(%s, NULL, 0, 'same', 'orch', '', 'other', NULL, '{}', NULL, "
                          "NULL, %s)", (hub_id, sorted(RUNNING_STATUSES)))
            now = time.time()
            start = asyncio.ensure_future(hub.create_instance(started("same", now), now=now,
                                                              dedupe=RUNNING_STATUSES))
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:  # until this host's insert waits for the other's row
                waiting = other.execute("SELECT count(*) FROM pg_locks WHERE NOT granted").fetchone()
                if waiting and waiting[0]:
                    break
                await asyncio.sleep(0.01)
            else:
                pytest.fail("the second start never waited for the first one's row")
            other.commit()
        with pytest.raises(InstanceExists):
            await start
        record = await hub.get_instance("same")
        assert record is not None and record.execution_id == "other"
    finally:
        await first.aclose()
