"""Service Bus broker rules every `ServiceBusBroker` implementation must follow (docs/servicebus.md).

Run against each implementation (the embedded SQLite broker, the PostgreSQL one) on a ManualClock, so lock
durations, TTLs and schedules are exercised without waiting.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from funchost.clock import ManualClock
from funchost.storage.backend import create_backend
from funchost.storage.servicebus import (
    CorrelationFilter,
    EntityProperties,
    InvalidServiceBusInput,
    MessageLockLost,
    MessageSizeExceeded,
    MessagingEntityAlreadyExists,
    MessagingEntityNotFound,
    OutgoingMessage,
    Rule,
    SessionCannotBeLocked,
    SessionLockLost,
    SqlFilter,
)

from .conftest import LOCAL_STATE_BACKENDS, backend_settings

IMPLEMENTATIONS = LOCAL_STATE_BACKENDS


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture(params=IMPLEMENTATIONS)
async def broker(request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock) -> AsyncIterator[object]:
    storage = create_backend(request.param, tmp_path / "data", backend_settings(request.param, request), clock)
    yield storage.servicebus("sbemulatorns")
    await storage.aclose()


def msg(body: str, **kwargs: object) -> OutgoingMessage:
    return OutgoingMessage(body.encode(), **kwargs)  # type: ignore[arg-type]


def bodies(messages: list) -> list[str]:  # type: ignore[type-arg]
    return [m.body.decode() for m in messages]


# -- entities and names -----------------------------------------------------------------------------


async def test_entity_names_follow_the_service_rules(broker):
    for bad in ("", "-orders", "orders-", "a b", "x" * 261, "a//b"):
        with pytest.raises(InvalidServiceBusInput):
            await broker.create_queue(bad)
    await broker.create_queue("Orders.v1/eu_west-2")
    with pytest.raises(MessagingEntityAlreadyExists):
        await broker.create_queue("orders.V1/EU_WEST-2")  # names are case-insensitive
    await broker.create_topic("events")
    with pytest.raises(InvalidServiceBusInput):
        await broker.create_subscription("events", "has/slash")
    with pytest.raises(MessagingEntityNotFound):
        await broker.create_subscription("nope", "sub")


async def test_unknown_entities_are_not_found(broker):
    with pytest.raises(MessagingEntityNotFound):
        await broker.send("missing", [msg("x")])
    with pytest.raises(MessagingEntityNotFound):
        await broker.receive("missing")
    with pytest.raises(MessagingEntityNotFound):
        await broker.get_entity("events/Subscriptions/none")


async def test_entity_properties_are_validated():
    with pytest.raises(InvalidServiceBusInput, match="LockDuration"):
        EntityProperties(lock_duration=301)
    with pytest.raises(InvalidServiceBusInput, match="MaxDeliveryCount"):
        EntityProperties(max_delivery_count=0)


async def test_message_size_limit_is_256_kb_with_properties(broker):
    await broker.create_queue("big")
    await broker.send("big", [OutgoingMessage(b"x" * (256 * 1024 - 100))])
    with pytest.raises(MessageSizeExceeded):
        await broker.send("big", [OutgoingMessage(b"x" * (256 * 1024 - 100), application_properties={"p": "y" * 200})])
    assert (await broker.get_entity("big")).active == 1  # the rejected send stored nothing


# -- peek-lock --------------------------------------------------------------------------------------


async def test_receive_locks_in_sequence_order_and_complete_deletes(broker):
    await broker.create_queue("q")
    assert await broker.send("q", [msg("a"), msg("b"), msg("c")]) == [1, 2, 3]
    first = await broker.receive("q", 2)
    assert bodies(first) == ["a", "b"]
    assert [m.delivery_count for m in first] == [1, 1]
    assert all(m.lock_token and m.locked_until for m in first)
    assert bodies(await broker.receive("q", 5)) == ["c"]  # locked messages are invisible
    await broker.complete("q", first[0].lock_token)
    with pytest.raises(MessageLockLost):
        await broker.complete("q", first[0].lock_token)  # settled twice
    info = await broker.get_entity("q")
    assert (info.active, info.locked) == (2, 2)


async def test_abandon_makes_it_visible_at_once_with_delivery_count_plus_one(broker):
    await broker.create_queue("q")
    await broker.send("q", [msg("a"), msg("b")])
    [a] = await broker.receive("q")
    await broker.abandon("q", a.lock_token, {"reason": "retry"})
    again = await broker.receive("q", 2)
    assert bodies(again) == ["a", "b"]  # back at the head, in sequence order
    assert again[0].delivery_count == 2
    assert again[0].application_properties == {"reason": "retry"}


async def test_lock_expiry_redelivers_and_renewal_extends(broker, clock):
    await broker.create_queue("q", EntityProperties(lock_duration=30))
    await broker.send("q", [msg("a")])
    [held] = await broker.receive("q")
    await clock.advance(20)
    renewed = await broker.renew_lock("q", held.lock_token)
    assert renewed == clock.now() + timedelta(seconds=30)
    await clock.advance(20)
    assert await broker.receive("q") == []  # still locked thanks to the renewal
    await clock.advance(11)
    [again] = await broker.receive("q")
    assert again.delivery_count == 2 and again.lock_token != held.lock_token
    with pytest.raises(MessageLockLost):
        await broker.complete("q", held.lock_token)  # the old lock is gone


async def test_settling_after_lock_expiry_fails(broker, clock):
    await broker.create_queue("q", EntityProperties(lock_duration=10))
    await broker.send("q", [msg("a")])
    [held] = await broker.receive("q")
    await clock.advance(10)
    with pytest.raises(MessageLockLost):
        await broker.complete("q", held.lock_token)
    with pytest.raises(MessageLockLost):
        await broker.complete("q", "00000000-0000-0000-0000-000000000000")


async def test_max_delivery_count_dead_letters_with_the_reason(broker, clock):
    await broker.create_queue("q", EntityProperties(max_delivery_count=3, lock_duration=10))
    await broker.send("q", [msg("poison")])
    for attempt in range(1, 3):
        [m] = await broker.receive("q")
        assert m.delivery_count == attempt
        await broker.abandon("q", m.lock_token)
    [m] = await broker.receive("q")
    assert m.delivery_count == 3
    await clock.advance(10)  # the last lock expires rather than being abandoned
    assert await broker.receive("q") == []
    [dead] = await broker.peek("q/$DeadLetterQueue")
    assert dead.dead_letter_reason == "MaxDeliveryCountExceeded"
    assert dead.delivery_count == 3
    assert dead.application_properties["DeadLetterReason"] == "MaxDeliveryCountExceeded"
    [received] = await broker.receive("q/$deadletterqueue")  # a DLQ is received like a queue
    await broker.complete("q/$deadletterqueue", received.lock_token)
    assert (await broker.get_entity("q")).dead_letter == 0


async def test_explicit_dead_letter_and_defer(broker):
    await broker.create_queue("q")
    await broker.send("q", [msg("bad"), msg("later")])
    bad, later = await broker.receive("q", 2)
    await broker.dead_letter("q", bad.lock_token, "Invalid", "no customer id")
    await broker.defer("q", later.lock_token)
    assert await broker.receive("q") == []  # deferred: only by sequence number
    [dead] = await broker.receive("q/$deadletterqueue")
    assert (dead.dead_letter_reason, dead.dead_letter_error_description) == ("Invalid", "no customer id")
    with pytest.raises(InvalidServiceBusInput):
        await broker.dead_letter("q/$deadletterqueue", dead.lock_token)
    [deferred] = await broker.receive_deferred("q", [later.sequence_number])
    assert deferred.body == b"later" and deferred.state == "deferred"
    await broker.complete("q", deferred.lock_token)
    assert (await broker.get_entity("q")).deferred == 0


# -- time to live, schedules, duplicates ------------------------------------------------------------


async def test_expired_messages_are_dropped_or_dead_lettered(broker, clock):
    await broker.create_queue("drop", EntityProperties(default_message_ttl=60))
    await broker.create_queue("keep", EntityProperties(dead_lettering_on_message_expiration=True))
    await broker.send("drop", [msg("old"), msg("short", time_to_live=10), msg("capped", time_to_live=3600)])
    await broker.send("keep", [msg("expiring", time_to_live=5)])
    [m] = await broker.peek("drop", from_sequence=3)
    assert m.expires_at == m.enqueued_time + timedelta(seconds=60)  # the entity default caps the TTL
    await clock.advance(30)
    assert bodies(await broker.peek("drop")) == ["old", "capped"]
    await clock.advance(31)
    assert await broker.receive("drop", 5) == []
    assert await broker.receive("keep") == []
    [dead] = await broker.receive("keep/$deadletterqueue")
    assert dead.dead_letter_reason == "TTLExpiredException"
    assert (await broker.get_entity("drop")).dead_letter == 0


async def test_scheduled_messages_appear_at_their_time_and_can_be_cancelled(broker, clock):
    await broker.create_queue("q")
    later = clock.now() + timedelta(minutes=5)
    seq_a, seq_b = await broker.send("q", [msg("a", scheduled_enqueue_time=later),
                                           msg("b", scheduled_enqueue_time=later)])
    assert (await broker.get_entity("q")).scheduled == 2
    await broker.cancel_scheduled("q", [seq_b])
    await clock.advance(299)
    assert await broker.receive("q") == []
    await clock.advance(1)
    [a] = await broker.receive("q", 5)
    assert a.body == b"a" and a.sequence_number == seq_a and a.enqueued_time == later


async def test_duplicate_detection_drops_repeats_inside_the_window(broker, clock):
    await broker.create_queue("dedup", EntityProperties(requires_duplicate_detection=True,
                                                        duplicate_detection_window=60))
    await broker.create_queue("plain")
    assert (await broker.send("dedup", [msg("1", message_id="m1"), msg("2", message_id="m1")]))[1] == 0
    await clock.advance(30)
    await broker.send("dedup", [msg("3", message_id="m1")])
    await broker.send("plain", [msg("1", message_id="m1"), msg("2", message_id="m1")])
    assert bodies(await broker.peek("dedup")) == ["1"]
    assert bodies(await broker.peek("plain")) == ["1", "2"]
    await clock.advance(61)
    await broker.send("dedup", [msg("4", message_id="m1")])
    assert bodies(await broker.peek("dedup")) == ["1", "4"]


# -- sessions ---------------------------------------------------------------------------------------


async def test_session_entities_need_a_session_id_and_a_session(broker):
    await broker.create_queue("s", EntityProperties(requires_session=True))
    with pytest.raises(InvalidServiceBusInput, match="SessionId"):
        await broker.send("s", [msg("no session")])
    await broker.send("s", [msg("a", session_id="1")])
    with pytest.raises(InvalidServiceBusInput, match="session"):
        await broker.receive("s")
    await broker.create_queue("plain")
    with pytest.raises(InvalidServiceBusInput):
        await broker.accept_session("plain")


async def test_one_receiver_per_session_and_fifo_across_redelivery(broker):
    await broker.create_queue("s", EntityProperties(requires_session=True))
    await broker.send("s", [msg("a1", session_id="A"), msg("b1", session_id="B"), msg("a2", session_id="A")])
    first = await broker.accept_session("s")
    second = await broker.accept_session("s")
    assert (first.session_id, second.session_id) == ("A", "B")
    assert await broker.accept_session("s") is None
    with pytest.raises(SessionCannotBeLocked):
        await broker.accept_session("s", "A")
    [a1] = await broker.receive("s", session=first)
    await broker.abandon("s", a1.lock_token)
    again = await broker.receive("s", 5, session=first)
    assert bodies(again) == ["a1", "a2"] and again[0].delivery_count == 2
    with pytest.raises(SessionLockLost):
        await broker.receive("s", session=second.__class__(first.entity, "A", second.token, second.locked_until))


async def test_session_state_renewal_release_and_expiry(broker, clock):
    await broker.create_queue("s", EntityProperties(requires_session=True, lock_duration=30))
    await broker.send("s", [msg("a", session_id="A")])
    session = await broker.accept_session("s")
    await broker.set_session_state(session, b"step-2")
    [held] = await broker.receive("s", session=session)
    await clock.advance(20)
    session = await broker.renew_session_lock(session)
    await clock.advance(20)
    assert await broker.get_session_state(session) == b"step-2"
    await broker.release_session(session)  # unsettled messages come back
    other = await broker.accept_session("s")
    [again] = await broker.receive("s", session=other)
    assert again.delivery_count == 2
    await clock.advance(31)  # the session lock expires: settlement fails, the session is free
    with pytest.raises((SessionLockLost, MessageLockLost)):
        await broker.complete("s", again.lock_token)
    third = await broker.accept_session("s")
    assert third is not None and third.token != other.token
    assert await broker.get_session_state(third) == b"step-2"


# -- topics -----------------------------------------------------------------------------------------


async def test_topic_fan_out_gives_each_subscription_its_own_copy(broker):
    await broker.create_topic("events")
    await broker.create_subscription("events", "audit")
    await broker.create_subscription("events", "billing")
    await broker.send("events", [msg("e1")])
    [audit] = await broker.receive("events/Subscriptions/audit")
    await broker.abandon("events/Subscriptions/audit", audit.lock_token)
    [billing] = await broker.receive("events/subscriptions/BILLING")
    assert billing.delivery_count == 1  # independent lock and count
    [again] = await broker.receive("events/Subscriptions/audit")
    assert again.delivery_count == 2


async def test_correlation_and_sql_filters_and_actions(broker):
    await broker.create_topic("t")
    await broker.create_subscription("t", "json", rules=[Rule("ct", CorrelationFilter(content_type="application/json"))])
    await broker.create_subscription("t", "prop", rules=[Rule("p", CorrelationFilter(properties={"prop1": "value1"}))])
    await broker.create_subscription("t", "sql", rules=[Rule(
        "s", SqlFilter("sys.MessageId = '123456' AND userProp1 = 'value1'"), "SET sys.To = 'Entity'; SET seen = 1")])
    await broker.create_subscription("t", "numbers", rules=[Rule(
        "n", SqlFilter("amount > 10 AND region IN ('eu', 'us') AND sys.Label LIKE 'ord%' AND NOT EXISTS(test)"))])
    await broker.send("t", [
        msg("j", content_type="application/json"),
        msg("p", application_properties={"prop1": "value1"}),
        msg("s", message_id="123456", application_properties={"userProp1": "value1"}),
        msg("n", subject="order", application_properties={"amount": 11, "region": "eu"}),
        msg("n-test", subject="order", application_properties={"amount": 11, "region": "eu", "test": True}),
        msg("none", application_properties={"amount": "11"}),
    ])
    assert bodies(await broker.peek("t/Subscriptions/json")) == ["j"]
    assert bodies(await broker.peek("t/Subscriptions/prop")) == ["p"]
    [s] = await broker.peek("t/Subscriptions/sql")
    assert (s.body, s.to, s.application_properties) == (b"s", "Entity", {"userProp1": "value1", "seen": 1})
    assert bodies(await broker.peek("t/Subscriptions/numbers")) == ["n"]


async def test_bad_sql_is_rejected_when_the_rule_is_created(broker):
    await broker.create_topic("t")
    with pytest.raises(InvalidServiceBusInput, match="SQL"):
        await broker.create_subscription("t", "bad", rules=[Rule("r", SqlFilter("a = = 1"))])
    with pytest.raises(InvalidServiceBusInput):
        await broker.create_subscription("t", "bad", rules=[Rule("r", SqlFilter("sys.Nope = 1"))])


async def test_forwarding_moves_messages_and_dead_letters(broker):
    await broker.create_queue("target")
    await broker.create_queue("dlq-target")
    await broker.create_queue("source", EntityProperties(forward_to="target"))
    await broker.create_queue("fragile", EntityProperties(max_delivery_count=1,
                                                          forward_dead_lettered_messages_to="dlq-target"))
    await broker.send("source", [msg("x")])
    assert bodies(await broker.peek("target")) == ["x"]
    await broker.send("fragile", [msg("y")])
    [y] = await broker.receive("fragile")
    await broker.abandon("fragile", y.lock_token)
    [moved] = await broker.peek("dlq-target")
    assert moved.application_properties["DeadLetterReason"] == "MaxDeliveryCountExceeded"


# -- several hosts on one namespace -------------------------------------------------------------------


@pytest.mark.parametrize("kind", IMPLEMENTATIONS)
async def test_two_brokers_on_one_namespace_never_receive_the_same_message(kind, request, tmp_path, clock):
    # Embedded: two hosts on one data folder. PostgreSQL: each its own folder, one server.
    folders = [tmp_path / "data"] * 2 if kind == "embedded" else [tmp_path / "a", tmp_path / "b"]
    stores = [create_backend(kind, folder, backend_settings(kind, request), clock) for folder in folders]
    brokers = [s.servicebus("sbemulatorns") for s in stores]
    await brokers[0].create_queue("shared")
    await brokers[1].send("shared", [msg(str(i)) for i in range(200)])
    seen: list[str] = []

    async def drain(b: object) -> None:
        while batch := await b.receive("shared", 7):  # type: ignore[attr-defined]
            seen.extend(bodies(batch))
            await asyncio.gather(*(b.complete("shared", m.lock_token) for m in batch))  # type: ignore[attr-defined]

    await asyncio.gather(drain(brokers[0]), drain(brokers[1]))
    assert sorted(seen, key=int) == [str(i) for i in range(200)]
    for store in stores:
        await store.aclose()


async def test_receive_and_delete_and_purge(broker):
    await broker.create_queue("q")
    await broker.send("q", [msg("a"), msg("b"), msg("c")])
    [a] = await broker.receive_and_delete("q")
    assert (a.body, a.lock_token) == (b"a", None)
    [b] = await broker.receive("q")
    await broker.dead_letter("q", b.lock_token, "bad")
    assert await broker.purge("q/$deadletterqueue") == 1
    assert await broker.purge("q") == 1
    info = await broker.get_entity("q")
    assert (info.active, info.dead_letter) == (0, 0)
