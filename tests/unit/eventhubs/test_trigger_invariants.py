"""The spec's Event Hubs invariants (servicebus-eventhubs 3.3, EH-1 .. EH-6) through the real
in-process host on a manual clock."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest

from funchost.testing import write_app

APP = """
import json, threading, time
import azure.functions as func

app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)
SEEN = []
ACTIVE = {"now": 0, "max": 0}
GATE = threading.Event(); GATE.set()
LOCK = threading.Lock()

@app.event_hub_message_trigger(arg_name="event", event_hub_name="single", connection="EH")
def single(event: func.EventHubEvent) -> None:
    with LOCK:
        ACTIVE["now"] += 1; ACTIVE["max"] = max(ACTIVE["max"], ACTIVE["now"])
    GATE.wait(10)
    body = event.get_body().decode()
    SEEN.append(("single", body, event.sequence_number, dict(event.metadata)))
    with LOCK:
        ACTIVE["now"] -= 1
    if body.startswith("fail"):
        raise RuntimeError("boom " + body)

@app.event_hub_message_trigger(arg_name="events", event_hub_name="many", connection="EH", cardinality="many",
                               data_type="string")
def many(events) -> None:
    SEEN.append(("many", [e.get_body().decode() for e in events], [e.sequence_number for e in events],
                 events[0].metadata))

@app.route(route="out")
@app.event_hub_output(arg_name="out", event_hub_name="sink", connection="EH")
def out(req: func.HttpRequest, out: func.Out[str]) -> str:
    out.set(req.get_body().decode())
    return "OK"

@app.route(route="outlist")
@app.event_hub_output(arg_name="out", event_hub_name="sink", connection="EH")
def outlist(req: func.HttpRequest, out: func.Out[list[str]]) -> str:
    out.set(json.loads(req.get_body()))
    return "OK"
"""


def module():  # type: ignore[no-untyped-def]
    return sys.modules["function_app"]


def seen(kind: str) -> list:  # type: ignore[type-arg]
    return [s for s in module().SEEN if s[0] == kind]


@pytest.fixture
def app_dir(tmp_path):  # type: ignore[no-untyped-def]
    return write_app(tmp_path / "app", APP, host_json={"version": "2.0", "extensions": {"eventHubs": {
        "maxEventBatchSize": 5}}})


async def test_single_metadata_is_what_the_host_sends(funchost_app, app_dir) -> None:  # type: ignore[no-untyped-def]
    host = await funchost_app(app_dir)
    await host.eventhubs.send("single", ["a"], properties={"app": "x"})
    await host.advance(1)
    [(_, body, seq, metadata)] = seen("single")
    assert (body, seq) == ("a", 0)
    # PartitionKey is null, so the host does not send it at all.
    assert set(metadata) == {"PartitionContext", "Offset", "SequenceNumber", "EnqueuedTimeUtc", "Properties",
                             "SystemProperties"}
    assert metadata["Properties"] == {"app": "x"}
    system = metadata["SystemProperties"]
    assert system["PartitionKey"] is None and system["SequenceNumber"] == 0 and system["Offset"] == metadata["Offset"]
    assert {"x-opt-sequence-number", "x-opt-offset", "x-opt-enqueued-time"} <= set(system)
    assert "Z" not in metadata["EnqueuedTimeUtc"] and "+" not in metadata["EnqueuedTimeUtc"]  # DateTime, Unspecified
    assert metadata["PartitionContext"]["EventHubName"] == "single"


async def test_eh1_one_partition_in_order_one_invocation_at_a_time(funchost_app, app_dir) -> None:  # type: ignore[no-untyped-def]
    host = await funchost_app(app_dir)
    for i in range(6):
        await host.eventhubs.send("single", [f"e{i}"], partition_key="device")
    await host.advance(1)
    await host.wait_until_idle()
    assert [s[1] for s in seen("single")] == [f"e{i}" for i in range(6)]
    assert [s[2] for s in seen("single")] == list(range(6))
    assert module().ACTIVE["max"] == 1


async def test_eh2_checkpoint_after_failure_and_restart_resumes_after_it(funchost_app, app_dir, tmp_path) -> None:  # type: ignore[no-untyped-def]
    host = await funchost_app(app_dir, data_dir=tmp_path / "data")
    sent = await host.eventhubs.send("single", ["fail-1", "ok-2"], partition_id="0")
    await host.advance(1)
    await host.wait_until_idle()
    assert [s[1] for s in seen("single")] == ["fail-1", "ok-2"]  # the failure is not retried
    checkpoint = (await host.eventhubs.checkpoints("single"))["0"]
    assert (checkpoint.sequence_number, checkpoint.offset) == (1, sent[1].offset)
    await host.stop()
    module().SEEN.clear()
    host2 = await funchost_app(app_dir, data_dir=tmp_path / "data")
    await host2.eventhubs.send("single", ["ok-3"], partition_id="0")
    await host2.advance(1)
    await host2.wait_until_idle()
    assert [s[1] for s in seen("single")] == ["ok-3"]  # resumes at checkpoint + 1


async def stored_checkpoints(data_dir, hub):  # type: ignore[no-untyped-def]
    """The checkpoints on disk, read without starting a host (which would process at once)."""
    from funchost.clock import SystemClock
    from funchost.settings.app_settings import AppSettings
    from funchost.storage.backend import create_backend
    from funchost.triggers.eventhub.checkpoints import BlobCheckpointStore

    storage = create_backend("embedded", data_dir, AppSettings({}, environ={}), SystemClock())
    try:
        found = await BlobCheckpointStore(storage.blobs()).list_checkpoints("localhost", hub, "$Default")
    finally:
        await storage.aclose()
    return {c.partition_id: c for c in found}


async def send_offline(data_dir, hub, bodies, partition_id):  # type: ignore[no-untyped-def]
    """Events written before any host runs (as another process would)."""
    from funchost.clock import SystemClock
    from funchost.settings.app_settings import AppSettings
    from funchost.storage.backend import create_backend
    from funchost.storage.eventhubs import EventToSend

    storage = create_backend("embedded", data_dir, AppSettings({}, environ={}), SystemClock())
    try:
        broker = storage.eventhubs("localhost")
        await broker.create_hub(hub)
        await broker.send(hub, [EventToSend(b.encode()) for b in bodies], partition_id=partition_id)
    finally:
        await storage.aclose()


async def test_eh3_host_stop_during_an_invocation_writes_no_checkpoint(funchost_app, app_dir, tmp_path) -> None:  # type: ignore[no-untyped-def]
    host = await funchost_app(app_dir, data_dir=tmp_path / "data")
    gate = module().GATE
    gate.clear()
    await host.eventhubs.send("single", ["slow"], partition_id="0")
    await host.advance(1)
    stopping = asyncio.ensure_future(host.stop())
    await asyncio.sleep(0.2)
    gate.set()
    await stopping
    assert [s[1] for s in seen("single")] == ["slow"]  # the invocation finished...
    assert "0" not in await stored_checkpoints(tmp_path / "data", "single")  # ...but was not checkpointed
    again = await funchost_app(app_dir, data_dir=tmp_path / "data")
    await again.advance(1)
    await again.wait_until_idle()
    assert [s[1] for s in seen("single")] == ["slow"]  # redelivered to the next host (a fresh app module)
    assert (await again.eventhubs.checkpoints("single"))["0"].sequence_number == 0


async def test_eh4_batch_checkpoint_frequency_and_initial_offset_from_end(tmp_path, funchost_app) -> None:  # type: ignore[no-untyped-def]
    app = write_app(tmp_path / "app", APP, host_json={"version": "2.0", "extensions": {"eventHubs": {
        "batchCheckpointFrequency": 2, "initialOffsetOptions": {"type": "fromEnd"}}}})
    data = tmp_path / "data"
    await send_offline(data, "single", ["before-start"], "0")
    host = await funchost_app(app, data_dir=data)
    await host.advance(1)
    await host.eventhubs.send("single", ["x1"], partition_id="0")
    await host.advance(1)
    await host.wait_until_idle()
    assert "0" not in await host.eventhubs.checkpoints("single")  # first batch: not yet
    await host.eventhubs.send("single", ["x2"], partition_id="0")
    await host.advance(1)
    await host.wait_until_idle()
    assert [s[1] for s in seen("single")] == ["x1", "x2"]  # fromEnd: the earlier event is skipped
    assert (await host.eventhubs.checkpoints("single"))["0"].sequence_number == 2  # every 2nd batch


async def test_eh4_default_start_is_the_earliest_event(funchost_app, app_dir, tmp_path) -> None:  # type: ignore[no-untyped-def]
    await send_offline(tmp_path / "data", "many", ["early"], "1")
    host = await funchost_app(app_dir, data_dir=tmp_path / "data")
    await host.advance(1)
    await host.wait_until_idle()
    assert [s[1] for s in seen("many")] == [["early"]]


async def test_eh6_batches_are_bounded_and_arrays_match(funchost_app, app_dir) -> None:  # type: ignore[no-untyped-def]
    host = await funchost_app(app_dir)
    await host.eventhubs.send("many", [f"m{i}" for i in range(12)], partition_id="2")
    await host.advance(1)
    await host.wait_until_idle()
    batches = seen("many")
    assert [len(b[1]) for b in batches] == [5, 5, 2]  # maxEventBatchSize 5
    assert [x for b in batches for x in b[1]] == [f"m{i}" for i in range(12)]
    metadata = batches[0][3]
    assert len(metadata["SystemPropertiesArray"]) == 5 and metadata["SequenceNumberArray"] == [0, 1, 2, 3, 4]
    assert "PartitionKeyArray" in metadata and metadata["PartitionKeyArray"] == []  # nulls are dropped (QUIRK)
    assert (await host.eventhubs.checkpoints("many"))["2"].sequence_number == 11


async def test_output_splits_json_arrays_into_events_in_one_partition(funchost_app, app_dir) -> None:  # type: ignore[no-untyped-def]
    host = await funchost_app(app_dir)
    assert (await host.http("POST", "/api/out", content=json.dumps(["a", "b", {"c": 1}]))).text == "OK"
    assert (await host.http("POST", "/api/out", content="plain")).text == "OK"
    assert (await host.http("POST", "/api/outlist", content=json.dumps(["x", "y"]))).text == "OK"
    events = await host.eventhubs.events("sink")
    bodies = sorted(e.body.decode() for e in events)
    assert bodies == sorted(["a", "b", '{\n  "c": 1\n}', "plain", "x", "y"])
    first_batch = [e for e in events if e.body in (b"a", b"b")]
    assert len({e.partition_id for e in first_batch}) == 1


async def test_min_batch_size_waits_max_wait_time_for_a_partial_batch(tmp_path, funchost_app) -> None:  # type: ignore[no-untyped-def]
    app = write_app(tmp_path / "app", APP, host_json={"version": "2.0", "extensions": {"eventHubs": {
        "maxEventBatchSize": 10, "minEventBatchSize": 3, "maxWaitTime": "00:00:30"}}})
    host = await funchost_app(app)
    await host.advance(1)
    await host.eventhubs.send("many", ["a"], partition_id="0")
    await host.advance(1)  # first invocation without a checkpoint: no waiting (adjusted wait 0)
    assert [s[1] for s in seen("many")] == [["a"]]
    await host.eventhubs.send("many", ["b"], partition_id="0")
    await host.advance(10)
    assert len(seen("many")) == 1  # below the minimum: cached
    await host.eventhubs.send("many", ["c", "d"], partition_id="0")
    await host.advance(1)
    assert [s[1] for s in seen("many")] == [["a"], ["b", "c", "d"]]  # the minimum reached
    await host.eventhubs.send("many", ["e"], partition_id="0")
    await host.advance(29)
    assert len(seen("many")) == 2
    await host.advance(2)
    assert [s[1] for s in seen("many")][-1] == ["e"]  # maxWaitTime passed: partial batch
    assert (await host.eventhubs.checkpoints("many"))["0"].sequence_number == 4


async def test_a_failed_checkpoint_write_is_logged_and_the_next_batch_checkpoints(funchost_app, app_dir) -> None:  # type: ignore[no-untyped-def]
    from funchost.errors import ServiceUnavailable

    host = await funchost_app(app_dir)
    host.faults.arm("eventhubs.checkpoint.before", ServiceUnavailable("storage unreachable"))
    await host.eventhubs.send("single", ["one"], partition_id="3")
    await host.advance(1)
    assert "3" not in await host.eventhubs.checkpoints("single")
    await host.eventhubs.send("single", ["two"], partition_id="3")
    await host.advance(1)
    assert [s[1] for s in seen("single")] == ["one", "two"]
    assert (await host.eventhubs.checkpoints("single"))["3"].sequence_number == 1


async def test_the_admin_api_gives_a_batch_function_a_list_of_one_event(funchost_app, app_dir) -> None:  # type: ignore[no-untyped-def]
    """`POST /admin/functions/many {"input": "x"}`: WebJobs converts the string to one event and
    BindMultiple hands a cardinality-many function an array of it."""
    host = await funchost_app(app_dir)
    result = await host.invoke("many", "from-admin")
    assert result.succeeded, result.error
    [(_, bodies, _, metadata)] = seen("many")
    assert bodies == ["from-admin"]
    assert "PartitionContext" not in metadata  # never received: no partition
    single = await host.invoke("single", "one")
    assert single.succeeded and [s[1] for s in seen("single")] == ["one"]
