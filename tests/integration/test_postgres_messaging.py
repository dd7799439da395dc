"""Service Bus and Event Hubs namespaces on PostgreSQL shared by two hosts with separate data
folders (two backends on one schema): locks and sessions hold across hosts, lock expiries follow
the server's clock whatever the hosts' clocks say, and concurrent sends to one partition get
sequence numbers and offsets without gaps, in commit order."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from funchost.clock import Clock, SystemClock
from funchost.errors import InvalidInput
from funchost.settings.app_settings import AppSettings
from funchost.storage.eventhubs import EventPosition, EventToSend
from funchost.storage.host_storage import HostStorage, open_storage
from funchost.storage.servicebus import (
    EntityProperties,
    InvalidServiceBusInput,
    OutgoingMessage,
    SessionCannotBeLocked,
)

pytestmark = pytest.mark.postgres


class SkewedClock(SystemClock):
    """A machine whose clock is off by `skew` seconds (the real clock, so the store uses the server's)."""

    def __init__(self, skew: float) -> None:
        self.skew = skew

    def now(self) -> datetime:
        return super().now() + timedelta(seconds=self.skew)


@pytest.fixture
def open_host(tmp_path: Path, postgres_dsn: str, postgres_schema: str) -> AsyncIterator[object]:
    settings = AppSettings({"FUNCHOST_POSTGRES": postgres_dsn, "FUNCHOST_POSTGRES_SCHEMA": postgres_schema},
                           environ={})
    opened: list[HostStorage] = []

    def make(name: str, clock: Clock | None = None) -> HostStorage:
        storage = open_storage("postgres", tmp_path / name, settings, clock or SystemClock())
        opened.append(storage)
        return storage

    async def close() -> None:
        for storage in opened:
            await storage.aclose()

    make.close = close  # type: ignore[attr-defined]
    return make  # type: ignore[return-value]


async def test_a_lock_taken_by_a_host_whose_clock_is_an_hour_behind_holds_on_the_others(open_host) -> None:
    late, on_time = open_host("late", SkewedClock(-3600.0)), open_host("on-time")
    try:
        a, b = late.servicebus("sbemulatorns"), on_time.servicebus("sbemulatorns")
        await a.create_queue("work", EntityProperties(lock_duration=30.0))
        await b.send("work", [OutgoingMessage(b"one")])
        [held] = await a.receive("work")
        assert held.locked_until is not None
        # Locked for 30 s by the server's clock, not until an hour ago by the late host's.
        assert abs((held.locked_until - datetime.now(UTC)).total_seconds() - 30.0) < 5.0
        assert await b.receive("work") == []  # the lock holds on the other host
        await a.complete("work", held.lock_token)  # and its holder can still settle it
        assert (await b.get_entity("work")).active == 0
    finally:
        await open_host.close()


async def test_a_session_is_held_by_one_receiver_across_hosts(open_host) -> None:
    one, two = open_host("one"), open_host("two")
    try:
        a, b = one.servicebus("sbemulatorns"), two.servicebus("sbemulatorns")
        await a.create_queue("orders", EntityProperties(requires_session=True))
        await b.send("orders", [OutgoingMessage(f"{i}".encode(), session_id="s1") for i in range(3)])
        session = await a.accept_session("orders")
        assert session is not None and session.session_id == "s1"
        with pytest.raises(SessionCannotBeLocked):
            await b.accept_session("orders", "s1")
        assert await b.accept_session("orders") is None  # no other session has messages
        await a.set_session_state(session, b"step-2")
        received = await a.receive("orders", 10, session=session)
        assert [m.body for m in received] == [b"0", b"1", b"2"]
        await a.release_session(session)
        again = await b.accept_session("orders", "s1")  # released: the other host takes it
        assert again is not None and await b.get_session_state(again) == b"step-2"
    finally:
        await open_host.close()


async def test_concurrent_sends_from_two_hosts_number_one_partition_without_gaps(open_host) -> None:
    one, two = open_host("one"), open_host("two")
    try:
        a, b = one.eventhubs("localhost"), two.eventhubs("localhost")
        await a.create_hub("log", partition_count=2)

        async def send(broker: object, name: str) -> None:
            for i in range(40):
                await broker.send("log", [EventToSend(f"{name}{i}".encode())] * 2, partition_id="1")  # type: ignore[attr-defined]

        await asyncio.gather(send(a, "a"), send(b, "b"))
        events = await b.read("log", "1", EventPosition.earliest(), 500)
        assert [e.sequence_number for e in events] == list(range(160))
        offsets = [e.offset for e in events]
        assert offsets == sorted(offsets) and len(set(offsets)) == 160
        for host in (a, b):  # each host's own batches in the order it sent them
            name = "a" if host is a else "b"
            mine = [int(e.body.decode()[1:]) for e in events if e.body.decode().startswith(name)]
            assert mine == sorted(mine)
        properties = await a.partition_properties("log", "1")
        assert (properties.last_enqueued_sequence_number, properties.retained_events) == (159, 160)
        assert await a.read("log", "0", EventPosition.earliest(), 10) == []
    finally:
        await open_host.close()


async def test_an_idle_receiver_polls_without_waiting_for_the_namespace_lock(open_host, postgres_dsn: str,
                                                                           postgres_schema: str) -> None:
    import psycopg

    from funchost.storage.postgres.scoped import LOCK_NAMESPACE
    from funchost.storage.postgres.servicebus_schema import namespace_schema

    broker = open_host("one").servicebus("sbemulatorns")
    try:
        await broker.create_queue("quiet")
        assert await broker.receive("quiet") == []  # idle from now on
        with psycopg.connect(postgres_dsn) as holder:  # another host, stuck inside a write of the namespace
            holder.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))",
                           (LOCK_NAMESPACE, namespace_schema(postgres_schema, "sbemulatorns")))
            started = asyncio.get_running_loop().time()
            for _ in range(5):
                assert await broker.receive("quiet") == []
            assert asyncio.get_running_loop().time() - started < 1.0
            holder.rollback()
        await broker.send("quiet", [OutgoingMessage(b"now")])
        assert [m.body for m in await broker.receive("quiet")] == [b"now"]  # a due message takes the lock
    finally:
        await open_host.close()


async def test_a_nul_character_is_refused_with_400_and_nothing_is_written(open_host) -> None:
    storage = open_host("one")
    broker, hubs = storage.servicebus("sbemulatorns"), storage.eventhubs("localhost")
    try:
        await broker.create_queue("q")
        await broker.create_queue("sessions", EntityProperties(requires_session=True))
        with pytest.raises(InvalidServiceBusInput):
            await broker.send("sessions", [OutgoingMessage(b"x", session_id="a\x00b")])
        with pytest.raises(InvalidServiceBusInput):
            await broker.send("q", [OutgoingMessage(b"x", message_id="m\x00")])
        with pytest.raises(InvalidServiceBusInput):
            await broker.accept_session("sessions", "a\x00b")
        with pytest.raises(InvalidServiceBusInput):
            await broker.complete("q", "token\x00")
        assert [await broker.send("q", [OutgoingMessage(b"ok")])] == [[1]]  # no sequence number was used up
        [held] = await broker.receive("q")
        with pytest.raises(InvalidServiceBusInput):
            await broker.dead_letter("q", held.lock_token, "reason\x00")
        await broker.complete("q", held.lock_token)  # the lock was left as it was

        await hubs.create_hub("h", partition_count=1)
        with pytest.raises(InvalidInput):
            await hubs.send("h", [EventToSend(b"e")], partition_key="k\x00")
        with pytest.raises(InvalidInput):
            await hubs.send("h", [EventToSend(b"e", message_id="id\x00")])
        [sent] = await hubs.send("h", [EventToSend(b"e")])
        assert sent.sequence_number == 0  # the refused sends left nothing behind
    finally:
        await open_host.close()
