"""The unmodified azure-servicebus client against funchost's AMQP endpoint (the embedded broker on
SQLite, and on PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from azure.servicebus import (
    NEXT_AVAILABLE_SESSION,
    ServiceBusClient,
    ServiceBusMessage,
    ServiceBusReceiveMode,
    ServiceBusSubQueue,
)
from azure.servicebus.exceptions import (
    MessageLockLostError,
    MessagingEntityNotFoundError,
    OperationTimeoutError,
    ServiceBusAuthenticationError,
    SessionCannotBeLockedError,
)
from tests.support.amqp import SERVED_BACKENDS, ServedAmqp, serve_amqp, served_settings

WAIT = 10


@pytest.fixture(params=SERVED_BACKENDS)
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServedAmqp]:
    with serve_amqp(tmp_path, settings=served_settings(request.param, request), backend=request.param) as served:
        yield served


@pytest.fixture
def client(served: ServedAmqp) -> Iterator[ServiceBusClient]:
    with ServiceBusClient.from_connection_string(served.connection_string) as client:
        yield client


def receive(client: ServiceBusClient, queue: str, count: int, **kwargs: object) -> list:
    got: list = []
    with client.get_queue_receiver(queue, **kwargs) as receiver:  # type: ignore[arg-type]
        while len(got) < count:
            batch = receiver.receive_messages(max_message_count=count - len(got), max_wait_time=WAIT)
            assert batch, f"received {len(got)} of {count}"
            got.extend(batch)
    return got


def test_send_single_and_batch_then_receive_and_complete(client: ServiceBusClient, served: ServedAmqp) -> None:
    with client.get_queue_sender("orders") as sender:
        sender.send_messages(ServiceBusMessage("one", application_properties={"k": "v"}, subject="s",
                                               message_id="m1", content_type="text/plain"))
        batch = sender.create_message_batch()
        batch.add_message(ServiceBusMessage("two"))
        batch.add_message(ServiceBusMessage("three"))
        sender.send_messages(batch)
    with client.get_queue_receiver("orders") as receiver:
        got = []
        while len(got) < 3:
            got.extend(receiver.receive_messages(max_message_count=3, max_wait_time=WAIT))
        assert [str(m) for m in got] == ["one", "two", "three"]
        first = got[0]
        assert (first.message_id, first.subject, first.content_type) == ("m1", "s", "text/plain")
        assert first.application_properties == {b"k": b"v"}
        assert [m.sequence_number for m in got] == [1, 2, 3]
        assert first.locked_until_utc is not None and first.lock_token
        for message in got:
            receiver.complete_message(message)
    info = served.run(served.endpoint.router.servicebus.broker.get_entity("orders"))
    assert info.active == 0 and info.locked == 0


def test_abandon_increments_the_delivery_count_and_dead_letter_keeps_reason(client: ServiceBusClient) -> None:
    with client.get_queue_sender("q") as sender:
        sender.send_messages(ServiceBusMessage("x"))
    with client.get_queue_receiver("q") as receiver:
        (message,) = receiver.receive_messages(max_wait_time=WAIT)
        assert message.delivery_count == 0
        receiver.abandon_message(message)
        (again,) = receiver.receive_messages(max_wait_time=WAIT)
        assert again.delivery_count == 1
        receiver.dead_letter_message(again, reason="bad", error_description="really bad")
    (dead,) = receive(client, "q", 1, sub_queue=ServiceBusSubQueue.DEAD_LETTER)
    assert str(dead) == "x"
    assert (dead.dead_letter_reason, dead.dead_letter_error_description) == ("bad", "really bad")


def test_defer_then_receive_deferred_and_complete(client: ServiceBusClient) -> None:
    with client.get_queue_sender("q") as sender:
        sender.send_messages(ServiceBusMessage("later"))
    with client.get_queue_receiver("q") as receiver:
        (message,) = receiver.receive_messages(max_wait_time=WAIT)
        receiver.defer_message(message)
        (deferred,) = receiver.receive_deferred_messages([message.sequence_number])
        assert str(deferred) == "later"
        receiver.complete_message(deferred)
        assert receiver.peek_messages(max_message_count=5) == []


def test_renew_lock_peek_schedule_and_cancel(client: ServiceBusClient) -> None:
    with client.get_queue_sender("q") as sender:
        sender.send_messages([ServiceBusMessage("p1"), ServiceBusMessage("p2")])
        later = datetime.now(UTC) + timedelta(hours=1)
        (seq,) = sender.schedule_messages(ServiceBusMessage("scheduled"), later)
        (seq2,) = sender.schedule_messages(ServiceBusMessage("cancelled"), later)
        sender.cancel_scheduled_messages(seq2)
    with client.get_queue_receiver("q") as receiver:
        peeked = receiver.peek_messages(max_message_count=10)
        assert [str(m) for m in peeked] == ["p1", "p2", "scheduled"]
        assert peeked[2].sequence_number == seq
        (message,) = receiver.receive_messages(max_wait_time=WAIT)
        before = message.locked_until_utc
        after = receiver.renew_message_lock(message)
        assert after >= before
        receiver.complete_message(message)


def test_receive_and_delete(client: ServiceBusClient) -> None:
    with client.get_queue_sender("q") as sender:
        sender.send_messages(ServiceBusMessage("gone"))
    (message,) = receive(client, "q", 1, receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE)
    assert str(message) == "gone"
    with client.get_queue_receiver("q") as receiver:
        assert receiver.peek_messages() == []


def test_settling_with_a_lost_lock_raises_message_lock_lost(client: ServiceBusClient, served: ServedAmqp) -> None:
    with client.get_queue_sender("q") as sender:
        sender.send_messages(ServiceBusMessage("x"))
    with client.get_queue_receiver("q") as receiver:
        (message,) = receiver.receive_messages(max_wait_time=WAIT)
        served.run(served.endpoint.router.servicebus.broker.complete("q", str(message.lock_token)))
        with pytest.raises(MessageLockLostError):
            receiver.complete_message(message)


def test_topic_subscription_fan_out(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    with serve_amqp(tmp_path) as served:
        served.run(served.endpoint.router.servicebus.ensure_subscription("events", "audit"))
        served.run(served.endpoint.router.servicebus.ensure_subscription("events", "mail"))
        with ServiceBusClient.from_connection_string(served.connection_string) as client:
            with client.get_topic_sender("events") as sender:
                sender.send_messages(ServiceBusMessage("fan"))
            for name in ("audit", "mail"):
                with client.get_subscription_receiver("events", name) as receiver:
                    (message,) = receiver.receive_messages(max_wait_time=WAIT)
                    assert str(message) == "fan"
                    receiver.complete_message(message)


def test_sessions_next_available_named_state_and_renew(client: ServiceBusClient, served: ServedAmqp) -> None:
    from funchost.storage.servicebus import EntityProperties

    served.run(served.endpoint.router.servicebus.broker.create_queue("sq", EntityProperties(requires_session=True)))
    with client.get_queue_sender("sq") as sender:
        sender.send_messages([ServiceBusMessage("a1", session_id="a"), ServiceBusMessage("b1", session_id="b")])
    with client.get_queue_receiver("sq", session_id=NEXT_AVAILABLE_SESSION, max_wait_time=WAIT) as receiver:
        session = receiver.session
        (message,) = receiver.receive_messages(max_wait_time=WAIT)
        assert message.session_id == session.session_id
        session.set_state(b"state-1")
        assert session.get_state() == b"state-1"
        assert session.renew_lock() is not None
        receiver.complete_message(message)
        with pytest.raises(SessionCannotBeLockedError), no_retries(served) as once:
            with once.get_queue_receiver("sq", session_id=session.session_id) as other:
                other.receive_messages(max_wait_time=2)
    other_id = "b" if session.session_id == "a" else "a"
    with client.get_queue_receiver("sq", session_id=other_id) as receiver:
        (message,) = receiver.receive_messages(max_wait_time=WAIT)
        assert str(message) == f"{other_id}1"
        receiver.complete_message(message)
    with pytest.raises(OperationTimeoutError), no_retries(served) as once:
        with once.get_queue_receiver("sq", session_id=NEXT_AVAILABLE_SESSION, max_wait_time=2) as receiver:
            receiver.receive_messages(max_wait_time=2)


def no_retries(served: ServedAmqp) -> ServiceBusClient:
    """A client that reports the endpoint's first refusal (the SDK's default retries the
    session-lock errors with back-off for about 40 s before raising the same error)."""
    return ServiceBusClient.from_connection_string(served.connection_string, retry_total=0)


def test_unknown_entity_with_a_config_is_not_found(tmp_path: Path) -> None:
    app = tmp_path / "app"
    app.mkdir()
    (app / "Config.json").write_text('{"UserConfig": {"Namespaces": [{"Name": "sbemulatorns", "Queues": '
                                     '[{"Name": "known", "Properties": {}}], "Topics": []}]}}')
    with serve_amqp(tmp_path) as served, ServiceBusClient.from_connection_string(served.connection_string) as client:
        with client.get_queue_sender("known") as sender:
            sender.send_messages(ServiceBusMessage("ok"))
        with pytest.raises(MessagingEntityNotFoundError):
            with client.get_queue_sender("missing") as sender:
                sender.send_messages(ServiceBusMessage("x"))


def test_a_wrong_key_is_an_authentication_error(served: ServedAmqp) -> None:
    wrong = served.connection_string.replace("SAS_KEY_VALUE", "not-the-key")
    with ServiceBusClient.from_connection_string(wrong, retry_total=0) as client:
        with pytest.raises(ServiceBusAuthenticationError):
            with client.get_queue_sender("q") as sender:
                sender.send_messages(ServiceBusMessage("x"))


def test_the_async_client(served: ServedAmqp) -> None:
    import asyncio

    from azure.servicebus.aio import ServiceBusClient as AsyncClient

    async def run() -> list[str]:
        async with AsyncClient.from_connection_string(served.connection_string) as client:
            async with client.get_queue_sender("aq") as sender:
                await sender.send_messages([ServiceBusMessage("x"), ServiceBusMessage("y")])
            async with client.get_queue_receiver("aq", prefetch_count=10) as receiver:
                got: list = []
                while len(got) < 2:
                    got.extend(await receiver.receive_messages(max_message_count=2, max_wait_time=WAIT))
                for message in got:
                    await receiver.complete_message(message)
                return [str(m) for m in got]

    assert asyncio.run(run()) == ["x", "y"]


def test_prefetched_messages_are_released_when_the_receiver_closes(client: ServiceBusClient) -> None:
    """azure-servicebus 7.15 releases what it prefetched but did not hand out: those messages are
    available again at once, not after their lock expires."""
    with client.get_queue_sender("pre") as sender:
        sender.send_messages([ServiceBusMessage(f"m{i}") for i in range(5)])
    with client.get_queue_receiver("pre", prefetch_count=10) as receiver:
        (first, *_) = receiver.receive_messages(max_message_count=1, max_wait_time=WAIT)
        receiver.complete_message(first)
    rest = receive(client, "pre", 4)
    assert sorted(str(m) for m in rest) == ["m1", "m2", "m3", "m4"]
