"""Queues on PostgreSQL across hosts: two backends with separate data folders on one schema (two
machines that share nothing but the server) share an account's queues; receives at once take
disjoint messages; concurrent deletes are grouped and still answered one by one; a ManualClock
drives visibility; a put on one host wakes the queue listeners of another (LISTEN/NOTIFY)."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from pathlib import Path

import pytest
from tests.support.postgres_hosts import enter_schema_of, host, rows_read

from funchost.clock import ManualClock
from funchost.errors import MessageNotFound, PopReceiptMismatch
from funchost.runtime.signals import Signals, queue_topic

pytestmark = pytest.mark.postgres



async def test_two_hosts_share_queues_and_receive_disjoint_messages(tmp_path: Path, postgres_dsn: str,
                                                                   postgres_schema: str) -> None:
    a, b = host(tmp_path, "a", postgres_dsn, postgres_schema), host(tmp_path, "b", postgres_dsn, postgres_schema)
    try:
        assert "queues" not in a.local_services
        qa, qb = a.queues(), b.queues()
        await qa.create_queue("work")
        for i in range(100):
            await qb.put_message("work", f"m{i}")
        got = await asyncio.gather(*(q.get_messages("work", max_messages=32) for q in (qa, qb) * 4))
        ids = [m.id for batch in got for m in batch]
        assert len(ids) == len(set(ids)) == 100
        assert not list((tmp_path / "a").rglob("queues.db"))  # nothing in the data folder
    finally:
        await a.aclose()
        await b.aclose()


async def test_grouped_deletes_answer_each_caller(tmp_path: Path, postgres_dsn: str, postgres_schema: str) -> None:
    a = host(tmp_path, "a", postgres_dsn, postgres_schema)
    try:
        queues = a.queues()
        await queues.create_queue("q")
        for i in range(50):
            await queues.put_message("q", str(i))
        messages = await queues.get_messages("q", max_messages=32) + await queues.get_messages("q", max_messages=32)
        calls = [queues.delete_message("q", m.id, m.pop_receipt or "") for m in messages[:40]]
        calls.append(queues.delete_message("q", messages[40].id, "stale"))
        calls.append(queues.delete_message("q", messages[0].id, messages[0].pop_receipt or ""))  # twice
        calls.append(queues.delete_message("q", messages[41].id[:-1] + "f", messages[41].pop_receipt or ""))
        outcomes = await asyncio.gather(*calls, return_exceptions=True)
        assert outcomes[:40] == [None] * 40
        assert isinstance(outcomes[40], PopReceiptMismatch)
        assert isinstance(outcomes[41], MessageNotFound)
        assert isinstance(outcomes[42], MessageNotFound)
        assert (await queues.get_queue_properties("q")).approximate_message_count == 10
    finally:
        await a.aclose()


async def test_manual_clock_drives_visibility_and_expiry(tmp_path: Path, postgres_dsn: str,
                                                         postgres_schema: str) -> None:
    clock = ManualClock()
    a = host(tmp_path, "a", postgres_dsn, postgres_schema, clock)
    try:
        queues = a.queues()
        await queues.create_queue("q")
        await queues.put_message("q", "later", visibility_timeout=60, time_to_live=120)
        assert await queues.get_messages("q") == []
        await clock.advance(60)
        [message] = await queues.get_messages("q", visibility_timeout=30)
        assert message.dequeue_count == 1 and message.next_visible_time == clock.now().replace(microsecond=0) \
            + timedelta(seconds=30)
        await clock.advance(61)
        assert await queues.peek_messages("q") == []  # expired
        with pytest.raises(MessageNotFound):
            await queues.delete_message("q", message.id, message.pop_receipt or "")
    finally:
        await a.aclose()


async def test_account_views_address_the_account_by_name(tmp_path: Path, postgres_dsn: str,
                                                         postgres_schema: str) -> None:
    a, b = host(tmp_path, "a", postgres_dsn, postgres_schema), host(tmp_path, "b", postgres_dsn, postgres_schema)
    try:
        await a.for_account("other").queues().create_queue("x")
        assert await b.for_account("other").queues().list_queues() == ["x"]
        assert await b.queues().list_queues() == []
    finally:
        await a.aclose()
        await b.aclose()


async def test_a_put_on_one_host_wakes_the_listeners_of_another(tmp_path: Path, postgres_dsn: str,
                                                               postgres_schema: str) -> None:
    a, b = host(tmp_path, "a", postgres_dsn, postgres_schema), host(tmp_path, "b", postgres_dsn, postgres_schema)
    signals_a, signals_b = Signals(), Signals()
    signals_a.bind_loop(asyncio.get_running_loop())
    signals_b.bind_loop(asyncio.get_running_loop())
    try:
        a.attach_signals(signals_a)
        b.attach_signals(signals_b)
        woken_a, woken_b = asyncio.Event(), asyncio.Event()
        signals_a.subscribe(queue_topic(a.queues().account_name, "Work"), woken_a.set)
        signals_b.subscribe(queue_topic(b.queues().account_name, "Work"), woken_b.set)
        await asyncio.wait_for(a._wakeups().listening.wait(), 10)
        await asyncio.wait_for(b._wakeups().listening.wait(), 10)
        woken_a.clear()  # the catch-up wake of the connect
        woken_b.clear()
        await a.queues().create_queue("Work")
        started = time.monotonic()
        await a.queues().put_message("Work", "hello")
        await asyncio.wait_for(woken_b.wait(), 1.0)  # a queue listener's poll interval is 1 s to 1 min
        latency = time.monotonic() - started
        assert latency < 0.5
        await asyncio.sleep(0.05)
        assert not woken_a.is_set()  # its own notification is dropped (the host's wrapper woke it)
        woken_b.clear()
        await a.queues().put_message("Work", "later", visibility_timeout=30)  # invisible: no wake-up
        await asyncio.sleep(0.1)
        assert not woken_b.is_set()
    finally:
        await a.aclose()
        await b.aclose()


async def test_the_wake_ups_of_the_other_shared_services_reach_the_other_host(
        tmp_path: Path, postgres_dsn: str, postgres_schema: str) -> None:
    a, b = host(tmp_path, "a", postgres_dsn, postgres_schema), host(tmp_path, "b", postgres_dsn, postgres_schema)
    for backend in (a, b):  # as once every service is on the server
        backend.local_services = ()
    signals_a, signals_b = Signals(), Signals()
    signals_a.bind_loop(asyncio.get_running_loop())
    signals_b.bind_loop(asyncio.get_running_loop())
    try:
        a.attach_signals(signals_a)
        b.attach_signals(signals_b)
        woken: dict[str, asyncio.Event] = {}
        topics = {"durable": ("durable", "hub", "activity"), "servicebus": ("servicebus", "ns", "orders"),
                  "eventhub": ("eventhub", "telemetry"), "documents": ("documents", "CosmosDB", "db", "items")}
        for kind, topic in topics.items():
            woken[kind] = asyncio.Event()
            signals_b.subscribe(topic, woken[kind].set)
        own = asyncio.Event()
        signals_a.subscribe(topics["durable"], own.set)
        await asyncio.wait_for(a._wakeups().listening.wait(), 10)
        await asyncio.wait_for(b._wakeups().listening.wait(), 10)
        for event in woken.values():
            event.clear()  # the catch-up wakes of the connect
        started = time.monotonic()
        for topic in topics.values():
            signals_a.publish(topic)
        await asyncio.wait_for(asyncio.gather(*(event.wait() for event in woken.values())), 2.0)
        assert time.monotonic() - started < 1.0
        own.clear()
        await asyncio.sleep(0.1)
        assert not own.is_set()  # a host does not hear its own relay back
    finally:
        await a.aclose()
        await b.aclose()


async def test_a_receive_and_a_peek_read_only_the_messages_they_return_however_stale_the_statistics(
        tmp_path: Path, postgres_dsn: str, postgres_schema: str) -> None:
    """A queue filled in a burst right after its table was made has no statistics yet (autovacuum
    looks a minute later at the soonest); the planner then took the table for nearly empty and
    read every visible message, sorting them all, for each batch. The receive function reads the
    index in order instead: the rows its transaction fetched are about the rows it took."""
    import psycopg

    a = host(tmp_path, "a", postgres_dsn, postgres_schema)
    try:
        queues = a.queues()
        await queues.create_queue("burst")
        for _ in range(6):
            await asyncio.gather(*(queues.put_message("burst", "x") for _ in range(500)))
        account = queues.account_name  # type: ignore[attr-defined]
    finally:
        await a.aclose()
    with psycopg.connect(postgres_dsn) as conn:  # one transaction: its own statistics, before any flush
        schema = enter_schema_of(conn, postgres_schema, "queue_messages", unanalyzed=True)
        peeked = conn.execute("SELECT * FROM queue_peek(NULL, %s, %s, 32)", (account, "burst")).fetchall()
        fetched_by_peek, _ = rows_read(conn, schema, "queue_messages")
        taken = conn.execute("SELECT * FROM queue_receive(NULL, %s, %s, 16, 30, %s)", (account, "burst", "n")).fetchall()
        fetched, _ = rows_read(conn, schema, "queue_messages")
    assert len(peeked) == 32 and [row[0] for row in taken] == [row[0] for row in peeked[:16]]  # the same order
    assert fetched_by_peek <= 64  # a peek too: reading the index in order
    assert fetched - fetched_by_peek <= 64  # the bitmap scan and sort fetched all 3,000
