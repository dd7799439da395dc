"""The Event Hubs broker Protocol, against every broker that can run here.

The embedded and the PostgreSQL brokers run in this suite; the real-namespace broker (`eventhubs/sdk.py`) needs
an Event Hubs namespace, which CI has not; its translation layer has unit tests instead
(tests/unit/eventhubs/test_sdk_translation.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from funchost.clock import ManualClock
from funchost.errors import InvalidInput, InvalidResourceName
from funchost.storage.backend import create_backend
from funchost.storage.eventhub_partitioning import partition_index_for_key
from funchost.storage.eventhubs import (
    MAX_PUBLISH_BYTES,
    ConsumerGroupNotFound,
    EventHubBroker,
    EventHubNotFound,
    EventPosition,
    EventToSend,
    MessageSizeExceeded,
)

from .conftest import LOCAL_STATE_BACKENDS, backend_settings

BROKERS = LOCAL_STATE_BACKENDS


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture(params=BROKERS)
async def broker(request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock) -> AsyncIterator[EventHubBroker]:
    storage = create_backend(request.param, tmp_path / "data", backend_settings(request.param, request), clock)
    yield storage.eventhubs("localhost")
    await storage.aclose()


def events(*bodies: str) -> list[EventToSend]:
    return [EventToSend(b.encode()) for b in bodies]


async def test_hub_has_partitions_and_default_group(broker: EventHubBroker) -> None:
    hub = await broker.create_hub("Telemetry", partition_count=3)
    assert hub.partition_ids == ("0", "1", "2") and hub.consumer_groups == ("$Default",)
    assert (await broker.hub("telemetry")).name == "Telemetry"  # names are case-insensitive
    with pytest.raises(EventHubNotFound):
        await broker.hub("other")


async def test_a_send_is_one_batch_in_one_partition_with_growing_sequence_and_offset(broker: EventHubBroker) -> None:
    await broker.create_hub("h", partition_count=4)
    first = await broker.send("h", events("a", "b", "c"))
    assert len({e.partition_id for e in first}) == 1
    assert [e.sequence_number for e in first] == [0, 1, 2]
    assert first[0].offset < first[1].offset < first[2].offset
    second = await broker.send("h", events("d"))
    assert second[0].partition_id != first[0].partition_id  # round robin across sends
    again = await broker.send("h", events("e"), partition_id=first[0].partition_id)
    assert again[0].sequence_number == 3 and again[0].offset > first[2].offset


async def test_partition_key_goes_where_the_service_hashes_it(broker: EventHubBroker) -> None:
    await broker.create_hub("h", partition_count=4)
    for key in ("device-1", "device-2", "7"):
        sent = await broker.send("h", events("x", "y"), partition_key=key)
        assert {e.partition_id for e in sent} == {str(partition_index_for_key(key, 4))}
        assert all(e.partition_key == key for e in sent)


async def test_read_positions(broker: EventHubBroker, clock: ManualClock) -> None:
    await broker.create_hub("h", partition_count=1)
    sent = await broker.send("h", events("a", "b"))
    clock_mark = clock.now() + timedelta(seconds=5)
    await clock.advance(10)
    sent += await broker.send("h", events("c"))
    read = broker.read
    assert [e.body for e in await read("h", "0", EventPosition.earliest(), 10)] == [b"a", b"b", b"c"]
    assert [e.body for e in await read("h", "0", EventPosition.earliest(), 2)] == [b"a", b"b"]
    assert [e.body for e in await read("h", "0", EventPosition.after_sequence(0), 10)] == [b"b", b"c"]
    assert [e.body for e in await read("h", "0", EventPosition("sequence", 1, True), 10)] == [b"b", b"c"]
    assert [e.body for e in await read("h", "0", EventPosition.after_offset(sent[1].offset), 10)] == [b"c"]
    assert [e.body for e in await read("h", "0", EventPosition.enqueued_at_or_after(clock_mark), 10)] == [b"c"]
    assert await read("h", "0", EventPosition.latest(), 10) == []
    props = await broker.partition_properties("h", "0")
    assert (props.beginning_sequence_number, props.last_enqueued_sequence_number, props.retained_events) == (0, 2, 3)


async def test_properties_and_system_fields_round_trip(broker: EventHubBroker) -> None:
    await broker.create_hub("h", partition_count=1)
    await broker.send("h", [EventToSend(b"\x00\xff", {"n": 1, "s": "x"}, content_type="application/octet-stream",
                                        correlation_id="c", message_id="m")], partition_key="k")
    [e] = await broker.read("h", "0", EventPosition.earliest(), 10)
    assert (e.body, dict(e.properties), e.content_type, e.correlation_id, e.message_id, e.partition_key) == (
        b"\x00\xff", {"n": 1, "s": "x"}, "application/octet-stream", "c", "m", "k")


async def test_retention_hides_and_purges_old_events(broker: EventHubBroker, clock: ManualClock) -> None:
    await broker.create_hub("h", partition_count=1, retention_seconds=3600)
    await broker.send("h", events("old"))
    await clock.advance(3601)
    assert await broker.read("h", "0", EventPosition.earliest(), 10) == []
    await broker.send("h", events("new"))
    [e] = await broker.read("h", "0", EventPosition.earliest(), 10)
    assert (e.body, e.sequence_number) == (b"new", 1)  # sequence numbers never restart
    props = await broker.partition_properties("h", "0")
    assert (props.beginning_sequence_number, props.retained_events) == (1, 1)


async def test_one_publish_is_limited_to_1_mb(broker: EventHubBroker) -> None:
    await broker.create_hub("h", partition_count=1)
    with pytest.raises(MessageSizeExceeded, match="exceeds the limit"):
        await broker.send("h", [EventToSend(b"x" * MAX_PUBLISH_BYTES)])
    with pytest.raises(MessageSizeExceeded):
        await broker.send("h", [EventToSend(b"x" * (MAX_PUBLISH_BYTES // 2))] * 2)
    assert await broker.read("h", "0", EventPosition.earliest(), 10) == []  # nothing of a refused send is kept
    await broker.send("h", [EventToSend(b"x" * (MAX_PUBLISH_BYTES - 1000))])


@pytest.mark.parametrize("name", ["", "-x", "x-", "a b", "x" * 257, "a/b"])
async def test_invalid_hub_names(broker: EventHubBroker, name: str) -> None:
    with pytest.raises(InvalidResourceName):
        await broker.create_hub(name)


async def test_invalid_partition_count_and_partition(broker: EventHubBroker) -> None:
    with pytest.raises(InvalidResourceName):
        await broker.create_hub("h", partition_count=33)
    await broker.create_hub("h", partition_count=2)
    with pytest.raises(InvalidInput):
        await broker.send("h", events("a"), partition_id="7")
    with pytest.raises(EventHubNotFound):
        await broker.send("nope", events("a"))


async def test_consumer_groups(broker: EventHubBroker) -> None:
    await broker.create_hub("open", partition_count=1)
    await broker.ensure_consumer_group("open", "analytics")  # created on first use
    assert "analytics" in (await broker.hub("open")).consumer_groups
    await broker.create_hub("fixed", partition_count=1, consumer_groups=["cg1"])
    await broker.ensure_consumer_group("fixed", "cg1")
    await broker.ensure_consumer_group("fixed", "$default")
    with pytest.raises(ConsumerGroupNotFound):
        await broker.ensure_consumer_group("fixed", "other")
    with pytest.raises(InvalidResourceName):
        await broker.ensure_consumer_group("open", "bad name")


@pytest.mark.parametrize("kind", BROKERS)
async def test_two_broker_objects_on_one_namespace_share_one_log(kind: str, request: pytest.FixtureRequest,
                                                                 tmp_path: Path, clock: ManualClock) -> None:
    # Embedded: two hosts on one data folder. PostgreSQL: each its own folder, one server.
    second_folder = tmp_path / ("data" if kind == "embedded" else "other")
    first = create_backend(kind, tmp_path / "data", backend_settings(kind, request), clock)
    second = create_backend(kind, second_folder, backend_settings(kind, request), clock)
    try:
        await first.eventhubs("localhost").create_hub("h", partition_count=1)
        a = await first.eventhubs("localhost").send("h", events("a"))
        b = await second.eventhubs("localhost").send("h", events("b"))
        assert (a[0].sequence_number, b[0].sequence_number) == (0, 1)
        read = await second.eventhubs("localhost").read("h", "0", EventPosition.earliest(), 10)
        assert [e.body for e in read] == [b"a", b"b"]
    finally:
        await first.aclose()
        await second.aclose()
