"""The Event Grid store on a real PostgreSQL server with the hosts' real clocks: two hosts (each
its own data folder) racing for due rows and for a blob-event cursor, and hosts whose clocks
disagree with the server's."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from tests.support.postgres_hosts import enter_schema_of, rows_read

from funchost.clock import SystemClock
from funchost.settings.app_settings import AppSettings
from funchost.storage.eventgrid import DELIVERED, EventGridStore, NewEvent, Target
from funchost.storage.host_storage import HostStorage, open_storage

pytestmark = pytest.mark.postgres


class SkewedClock(SystemClock):
    """A machine whose clock is off by `skew` seconds (the real clock, so the store uses the server's)."""

    def __init__(self, skew: float) -> None:
        self.skew = skew

    def now(self) -> datetime:
        return super().now() + timedelta(seconds=self.skew)


def event(n: int) -> NewEvent:
    return NewEvent({"id": f"ev-{n}", "data": {"n": n}}, (Target("hook", 30, 86400.0),))


@pytest.fixture
async def hosts(tmp_path: Path, postgres_dsn: str, postgres_schema: str) -> AsyncIterator[list[HostStorage]]:
    settings = AppSettings({"FUNCHOST_POSTGRES": postgres_dsn, "FUNCHOST_POSTGRES_SCHEMA": postgres_schema},
                           environ={})
    opened = [open_storage("postgres", tmp_path / f"host-{i}", settings, SystemClock()) for i in range(2)]
    yield opened
    for storage in opened:
        await storage.aclose()


async def test_two_hosts_leasing_at_once_take_each_row_once(hosts: list[HostStorage]) -> None:
    a, b = (h.eventgrid_store() for h in hosts)
    await asyncio.gather(a.next_due(), b.next_due())  # both connected, as running hosts are
    await a.append("t", "EventGridSchema", [event(i) for i in range(200)], time.time())

    async def drain(store: EventGridStore, owner: str) -> list[int]:
        taken: list[int] = []
        while rows := await store.lease_due(owner, time.time(), 60.0, limit=7):
            taken += [r.id for r in rows]
            await store.update(owner, [(r.id, {"state": DELIVERED}) for r in rows])
        return taken

    first, second = await asyncio.gather(drain(a, "host-a"), drain(b, "host-b"))
    assert len(first) + len(second) == 200
    assert len(set(first) | set(second)) == 200
    assert first and second  # both hosts took part
    assert {r.state for r in await b.deliveries()} == {DELIVERED}


async def test_one_of_two_hosts_racing_for_a_cursor_publishes(hosts: list[HostStorage]) -> None:
    a, b = (h.eventgrid_store() for h in hosts)
    await a.init_cursor("blob:acct:t", "")
    results = await asyncio.gather(*(store.append("t", "EventGridSchema", [event(1)], time.time(),
                                                  cursor=("blob:acct:t", "", "01")) for store in (a, b) * 5))
    assert results.count(True) == 1
    assert len(await a.deliveries()) == 1
    assert await b.get_cursor("blob:acct:t") == "01"


async def test_a_lease_holds_on_the_servers_clock_whatever_the_hosts_say(
        tmp_path: Path, postgres_dsn: str, postgres_schema: str) -> None:
    settings = AppSettings({"FUNCHOST_POSTGRES": postgres_dsn, "FUNCHOST_POSTGRES_SCHEMA": postgres_schema},
                           environ={})
    behind = open_storage("postgres", tmp_path / "behind", settings, SkewedClock(-3600.0))
    right = open_storage("postgres", tmp_path / "right", settings, SystemClock())
    try:
        slow, store = behind.eventgrid_store(), right.eventgrid_store()
        await slow.append("t", "EventGridSchema", [event(1)], SkewedClock(-3600.0).now().timestamp())
        # The host an hour behind still sees the event as due now, in its own time...
        slow_now = SkewedClock(-3600.0).now().timestamp()
        (row,) = await slow.lease_due("slow", slow_now, 60.0, limit=10)
        assert abs(row.published - slow_now) < 5 and abs(row.next_attempt - slow_now) < 5
        # ...and its 60 s lease is 60 s on the server's clock: the other host may not take the row.
        assert await store.lease_due("right", time.time(), 60.0, limit=10) == []
        due = await store.next_due()
        assert due is not None and 55 < due - time.time() <= 61
        slow_due = await slow.next_due()
        assert slow_due is not None and 55 < slow_due - SkewedClock(-3600.0).now().timestamp() <= 61
        # A retry scheduled 10 s ahead by the slow host is 10 s ahead for everyone.
        assert await slow.update("slow", [(row.id, {"attempts": 1, "next_attempt": slow_now + 10})]) == 1
        due = await store.next_due()
        assert due is not None and 5 < due - time.time() <= 11
    finally:
        await behind.aclose()
        await right.aclose()


async def test_a_lease_reads_only_the_deliveries_it_takes_however_stale_the_statistics(
        hosts: list[HostStorage], postgres_dsn: str, postgres_schema: str) -> None:
    """Deliveries published in a burst right after the table was made have no statistics yet
    (autovacuum looks a minute later at the soonest); the planner then took the table for nearly
    empty and read every due delivery, sorting them all, for each lease. The lease function reads
    the due index in order instead: the rows its transaction fetched are about the rows it took."""
    import psycopg

    store = hosts[0].eventgrid_store()
    await store.append("t", "EventGridSchema", [event(i) for i in range(3000)], time.time() - 1)
    with psycopg.connect(postgres_dsn) as conn:  # one transaction: its own statistics, before any flush
        schema = enter_schema_of(conn, postgres_schema, "eg_deliveries", unanalyzed=True)
        now = time.time()
        taken = conn.execute("SELECT * FROM eg_lease_due(%s, 16, 'host-a', %s)", (now, now + 60)).fetchall()
        fetched, _ = rows_read(conn, schema, "eg_deliveries")
    assert [row[2] for row in taken] == sorted(row[2] for row in taken) and len(taken) == 16  # oldest first
    assert fetched <= 64  # the bitmap scan and sort fetched all 3,000


async def test_the_next_due_time_reads_a_row_or_two_of_a_long_wait(hosts: list[HostStorage], postgres_dsn: str,
                                                                   postgres_schema: str) -> None:
    """Deliveries waiting out their retry delays: the engine asks when the next one falls due
    every second, and the answer comes from the head of the due index, not a read of all of them."""
    import psycopg

    store = hosts[0].eventgrid_store()
    await store.append("t", "EventGridSchema", [event(i) for i in range(3000)], time.time() + 600)
    with psycopg.connect(postgres_dsn) as conn:
        schema = enter_schema_of(conn, postgres_schema, "eg_deliveries", unanalyzed=False)
        (due,) = conn.execute("SELECT eg_next_due()").fetchone()
        fetched, scanned = rows_read(conn, schema, "eg_deliveries")
        assert (due,) == conn.execute("SELECT min(next_attempt) FROM eg_deliveries").fetchone()
    assert fetched + scanned <= 8  # the aggregate over every waiting row read all 3,000
