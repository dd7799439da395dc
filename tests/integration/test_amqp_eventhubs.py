"""The unmodified azure-eventhub client against funchost's AMQP endpoint (the embedded broker on
SQLite, and on PostgreSQL)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient
from tests.support.amqp import SERVED_BACKENDS, ServedAmqp, serve_amqp, served_settings

WAIT = 60


@pytest.fixture(params=SERVED_BACKENDS)
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServedAmqp]:
    with serve_amqp(tmp_path, settings=served_settings(request.param, request), backend=request.param) as served:
        yield served


def producer(served: ServedAmqp, hub: str = "eh1") -> EventHubProducerClient:
    return EventHubProducerClient.from_connection_string(served.connection_string, eventhub_name=hub)


def consume(served: ServedAmqp, count: int, hub: str = "eh1", **kwargs: Any) -> list[Any]:
    """Receive until `count` events arrived (or fail after WAIT seconds)."""
    got: list[Any] = []
    done = threading.Event()
    client = EventHubConsumerClient.from_connection_string(served.connection_string, consumer_group="$Default",
                                                           eventhub_name=hub)

    def on_event(context: Any, event: Any) -> None:
        if event is not None:
            got.append((context.partition_id, event))
            if len(got) >= count:
                done.set()

    thread = threading.Thread(target=lambda: client.receive(on_event=on_event, **kwargs), daemon=True)
    thread.start()
    done.wait(WAIT)
    client.close()
    thread.join(WAIT)
    assert len(got) >= count, f"received {len(got)} of {count}"
    return got


def test_hub_and_partition_properties(served: ServedAmqp) -> None:
    with producer(served) as client:
        assert client.get_partition_ids() == ["0", "1", "2", "3"]
        assert client.get_eventhub_properties()["eventhub_name"] == "eh1"
        batch = client.create_batch(partition_id="2")
        batch.add(EventData("x"))
        client.send_batch(batch)
        properties = client.get_partition_properties("2")
    assert properties["last_enqueued_sequence_number"] == 0
    assert properties["is_empty"] is False


def test_batches_to_a_partition_and_by_key_then_read_from_earliest(served: ServedAmqp) -> None:
    with producer(served) as client:
        batch = client.create_batch(partition_id="1")
        for i in range(3):
            batch.add(EventData(f"p{i}", ))
        client.send_batch(batch)
        keyed = client.create_batch(partition_key="customer-7")
        keyed.add(EventData("k0"))
        keyed.add(EventData("k1"))
        client.send_batch(keyed)
        client.send_event(EventData("single", ))
    got = consume(served, 3, partition_id="1", starting_position="-1")
    assert [e.body_as_str() for _, e in got[:3]] == ["p0", "p1", "p2"]
    assert [e.sequence_number for _, e in got[:3]] == [0, 1, 2]
    assert got[0][1].offset is not None
    everything = consume(served, 6, starting_position="-1")
    bodies = sorted(e.body_as_str() for _, e in everything)
    assert bodies == sorted(["p0", "p1", "p2", "k0", "k1", "single"])
    partitions = {e.body_as_str(): p for p, e in everything}
    assert partitions["k0"] == partitions["k1"]
    assert everything[[e.body_as_str() for _, e in everything].index("k0")][1].partition_key == b"customer-7"


def test_starting_at_a_sequence_number_and_properties_round_trip(served: ServedAmqp) -> None:
    with producer(served) as client:
        batch = client.create_batch(partition_id="0")
        for i in range(4):
            event = EventData(f"e{i}")
            event.properties = {"n": i}
            batch.add(event)
        client.send_batch(batch)
    got = consume(served, 2, partition_id="0", starting_position=1, track_last_enqueued_event_properties=True)
    assert [e.body_as_str() for _, e in got[:2]] == ["e2", "e3"]
    assert got[0][1].properties == {b"n": 2}


def test_a_higher_owner_level_takes_the_partition_over(served: ServedAmqp) -> None:
    from funchost.amqp.eventhubs_consumer import Epochs

    class FakeLink:
        detached: list[str] = []

        async def detach(self, condition: str, description: str) -> None:
            self.detached.append(condition)

    epochs = Epochs()
    low, high, none = FakeLink(), FakeLink(), FakeLink()
    key = ("eh1", "$default", "0")
    assert served.run(epochs.claim(key, low, 1)) is None  # type: ignore[arg-type]
    assert served.run(epochs.claim(key, high, 2)) is None  # type: ignore[arg-type]
    assert low.detached == ["amqp:link:stolen"]
    assert served.run(epochs.claim(key, none, None)) is not None  # type: ignore[arg-type]
    assert served.run(epochs.claim(key, low, 1)) is not None  # type: ignore[arg-type]


def test_starting_at_an_enqueued_time(served: ServedAmqp) -> None:
    import datetime as dt

    with producer(served) as client:
        batch = client.create_batch(partition_id="3")
        batch.add(EventData("old"))
        client.send_batch(batch)
        time.sleep(0.05)
        middle = dt.datetime.now(dt.UTC)
        time.sleep(0.05)
        batch = client.create_batch(partition_id="3")
        batch.add(EventData("new"))
        client.send_batch(batch)
    got = consume(served, 1, partition_id="3", starting_position=middle)
    assert [e.body_as_str() for _, e in got] == ["new"]


def test_the_blob_checkpoint_store_over_the_storage_endpoints(served: ServedAmqp, tmp_path: Path) -> None:
    """All partitions with BlobCheckpointStore: ownership and checkpoints in blobs; a second run
    resumes after the checkpoint."""
    from azure.eventhub.extensions.checkpointstoreblob import BlobCheckpointStore
    from azure.storage.blob import BlobServiceClient
    from tests.support.endpoints import serve_endpoints

    context = serve_endpoints(tmp_path / "blobs")
    storage = served.run(context.__aenter__())
    try:
        BlobServiceClient.from_connection_string(storage.connection_string).create_container("checkpoints")
        with producer(served) as client:
            for partition in ("0", "1"):
                batch = client.create_batch(partition_id=partition)
                batch.add(EventData(f"first-{partition}"))
                client.send_batch(batch)

        def run(count: int) -> list[str]:
            store = BlobCheckpointStore.from_connection_string(storage.connection_string, "checkpoints")
            got: list[str] = []
            done = threading.Event()
            client = EventHubConsumerClient.from_connection_string(
                served.connection_string, consumer_group="$Default", eventhub_name="eh1", checkpoint_store=store,
                load_balancing_interval=1)

            def on_event(context: Any, event: Any) -> None:
                if event is not None:
                    got.append(event.body_as_str())
                    context.update_checkpoint(event)
                    if len(got) >= count:
                        done.set()

            thread = threading.Thread(target=lambda: client.receive(on_event=on_event, starting_position="-1"),
                                      daemon=True)
            thread.start()
            done.wait(WAIT)
            client.close()
            thread.join(WAIT)
            return got

        assert sorted(run(2)) == ["first-0", "first-1"]
        with producer(served) as client:
            batch = client.create_batch(partition_id="0")
            batch.add(EventData("second-0"))
            client.send_batch(batch)
        assert run(1) == ["second-0"]
    finally:
        served.run(context.__aexit__(None, None, None))


def test_a_consumer_with_a_higher_owner_level_takes_the_partition(served: ServedAmqp) -> None:
    def start(level: int, seen: list[str], errors: list[BaseException]) -> tuple[Any, threading.Thread]:
        client = EventHubConsumerClient.from_connection_string(served.connection_string, consumer_group="$Default",
                                                               eventhub_name="eh1")
        thread = threading.Thread(target=lambda: client.receive(
            on_event=lambda _, e: e is not None and seen.append(e.body_as_str()),
            on_error=lambda _, err: errors.append(err), partition_id="0", owner_level=level,
            starting_position="-1"), daemon=True)
        thread.start()
        return client, thread

    def send(body: str) -> None:
        with producer(served) as client:
            batch = client.create_batch(partition_id="0")
            batch.add(EventData(body))
            client.send_batch(batch)

    def until(check: Any) -> bool:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline and not check():
            time.sleep(0.1)
        return bool(check())

    first_seen: list[str] = []
    first_errors: list[BaseException] = []
    second_seen: list[str] = []
    send("a")
    first, first_thread = start(1, first_seen, first_errors)
    try:
        assert until(lambda: first_seen == ["a"])
        second, second_thread = start(2, second_seen, [])
        try:
            assert until(lambda: second_seen == ["a"])
            assert until(lambda: first_errors), "the lower owner level was not disconnected"
            assert "stolen" in str(first_errors[0]).lower() or "owner" in str(first_errors[0]).lower()
        finally:
            second.close()
            second_thread.join(WAIT)
    finally:
        first.close()
        first_thread.join(WAIT)


def test_a_wrong_key_is_an_authentication_error(served: ServedAmqp) -> None:
    from azure.eventhub.exceptions import AuthenticationError

    wrong = served.connection_string.replace("SAS_KEY_VALUE", "not-the-key")
    with EventHubProducerClient.from_connection_string(wrong, eventhub_name="eh1", retry_total=0) as client:
        with pytest.raises(AuthenticationError):
            client.get_partition_ids()


def test_starting_after_an_offset_and_last_enqueued_properties(served: ServedAmqp) -> None:
    with producer(served) as client:
        batch = client.create_batch(partition_id="1")
        for i in range(3):
            batch.add(EventData(f"o{i}"))
        client.send_batch(batch)
    first = consume(served, 3, partition_id="1", starting_position="-1")
    offset = first[0][1].offset
    seen: list[tuple[str, Any]] = []
    done = threading.Event()
    client = EventHubConsumerClient.from_connection_string(served.connection_string, consumer_group="$Default",
                                                           eventhub_name="eh1")

    def on_event(context: Any, event: Any) -> None:
        if event is not None:
            seen.append((event.body_as_str(), context.last_enqueued_event_properties))
            if len(seen) >= 2:
                done.set()

    thread = threading.Thread(target=lambda: client.receive(
        on_event=on_event, partition_id="1", starting_position=offset, track_last_enqueued_event_properties=True),
        daemon=True)
    thread.start()
    done.wait(WAIT)
    client.close()
    thread.join(WAIT)
    assert [body for body, _ in seen] == ["o1", "o2"]
    last = seen[-1][1]
    assert last["sequence_number"] == 2 and last["offset"] == first[2][1].offset
    assert last["enqueued_time"] is not None and last["retrieval_time"] is not None
