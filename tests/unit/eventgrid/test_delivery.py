"""The delivery engine on a manual clock: schedule, TTL, attempts, status rules, dead letters,
batching, timeouts, restart durability and two engines on one store."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from funchost.clock import ManualClock
from funchost.eventgrid.config import DeadLetterConfig, RetryPolicy
from funchost.eventgrid.delivery import DeliveryEngine
from funchost.eventgrid.destinations import FunctionSender, QueueSender
from funchost.storage.sqlite.blobs import SqliteBlobService
from funchost.storage.sqlite.eventgrid import SqliteEventStore
from funchost.storage.sqlite.queues import SqliteQueueService

from .helpers import FakeInvoker, Rig, StatusSender, config, event, function_spec, sub

SCHEDULE = [0, 10, 40, 100, 400, 1000, 2800, 6400, 17200, 38800, 82000]  # cumulative seconds


async def test_full_retry_schedule_then_ttl_drops(tmp_path: Path) -> None:
    sender = StatusSender(500)
    rig = await Rig(tmp_path, config(sub()), {"webhook": sender}).start()
    await rig.publish(event())
    await rig.advance(24 * 3600 + 60)
    assert [round(t) for t in sender.times] == SCHEDULE  # the 12th attempt (at 34 h) is past the TTL
    assert [c for c, _ in sender.calls] == list(range(11))  # aeg-delivery-count
    [row] = await rig.rows()
    assert row.state == "dropped" and row.reason == "TimeToLiveExceeded" and row.attempts == 11
    await rig.stop()


async def test_every_twelve_hours_after_six_hours(tmp_path: Path) -> None:
    sender = StatusSender(503)
    long_ttl = sub(retry=RetryPolicy(30, 1440))
    rig = await Rig(tmp_path, config(long_ttl), {"webhook": sender}).start()
    await rig.publish(event())
    await rig.advance(23 * 3600)
    gaps = [b - a for a, b in zip(sender.times, sender.times[1:], strict=False)]
    assert gaps == [10, 30, 60, 300, 600, 1800, 3600, 10800, 21600, 43200]
    await rig.stop()


async def test_max_delivery_attempts(tmp_path: Path) -> None:
    sender = StatusSender(500)
    rig = await Rig(tmp_path, config(sub(retry=RetryPolicy(3, 1440))), {"webhook": sender}).start()
    await rig.publish(event())
    await rig.advance(3600)
    assert [round(t) for t in sender.times] == [0, 10, 40]
    [row] = await rig.rows()
    assert (row.state, row.reason, row.attempts) == ("dropped", "MaxDeliveryAttemptsExceeded", 3)
    await rig.stop()


async def test_short_ttl_ends_retries_at_the_ttl(tmp_path: Path) -> None:
    sender = StatusSender(500)
    rig = await Rig(tmp_path, config(sub(retry=RetryPolicy(30, 1))), {"webhook": sender}).start()
    await rig.publish(event())
    await rig.advance(59)
    [row] = await rig.rows()
    assert row.state == "pending"
    await rig.advance(2)
    assert [round(t) for t in sender.times] == [0, 10, 40]
    [row] = await rig.rows()
    assert (row.state, row.reason) == ("dropped", "TimeToLiveExceeded")
    await rig.stop()


@pytest.mark.parametrize("status,kind,retried", [
    (400, "webhook", False), (401, "webhook", False), (403, "webhook", False), (413, "webhook", False),
    (404, "webhook", True), (408, "webhook", True), (500, "webhook", True), (503, "webhook", True),
    (401, "storageQueue", True), (403, "storageQueue", False), (400, "storageQueue", False),
    (413, "storageQueue", False), (205, "webhook", True),
])
async def test_status_code_rules(tmp_path: Path, status: int, kind: str, retried: bool) -> None:
    sender = StatusSender(status)
    rig = await Rig(tmp_path, config(sub(kind=kind)), {kind: sender}).start()
    await rig.publish(event())
    await rig.advance(11)
    assert len(sender.calls) == (2 if retried else 1)
    [row] = await rig.rows()
    if not retried:
        assert (row.state, row.reason, row.last_status) == ("dropped", "UndeliverableDueToClientError", status)
    await rig.stop()


@pytest.mark.parametrize("status", [200, 201, 202, 203, 204])
async def test_success_codes(tmp_path: Path, status: int) -> None:
    rig = await Rig(tmp_path, config(sub()), {"webhook": StatusSender(status)}).start()
    await rig.publish(event())
    [row] = await rig.rows()
    assert (row.state, row.attempts) == ("delivered", 1)
    await rig.stop()


async def test_retry_then_success(tmp_path: Path) -> None:
    sender = StatusSender(lambda n: 200 if n == 3 else 500)
    rig = await Rig(tmp_path, config(sub()), {"webhook": sender}).start()
    await rig.publish(event())
    await rig.advance(100)
    [row] = await rig.rows()
    assert (row.state, row.attempts) == ("delivered", 3) and len(sender.calls) == 3
    await rig.stop()


async def test_dead_letter_blob_path_and_fields(tmp_path: Path) -> None:
    clock = ManualClock()
    blobs = SqliteBlobService(tmp_path / "acct", "devstoreaccount1", clock)
    dl = sub(name="My-Sub", retry=RetryPolicy(2, 1440), dead_letter=DeadLetterConfig("deadletters"))
    rig = await Rig(tmp_path, config(dl), {"webhook": StatusSender(404)}, blobs=blobs, clock=clock).start()
    await rig.publish(event())
    await rig.advance(10)  # second and last attempt
    [row] = await rig.rows()
    assert row.state == "deadlettering"
    await rig.advance(299)
    assert not (await blobs.list_blobs("deadletters")).items if await blobs.container_exists("deadletters") else True
    await rig.advance(1)  # five minutes after the last attempt
    [row] = await rig.rows()
    assert row.state == "deadlettered"
    [item] = (await blobs.list_blobs("deadletters")).items
    t = clock.now()
    assert item.name.startswith(f"MY-SUB/{t.year}/{t.month}/{t.day}/{t.hour}/") and item.name.endswith(".json")
    body, _ = await blobs.download_blob("deadletters", item.name)
    [dead] = json.loads(body)
    assert dead["id"] == "ev-1" and dead["data"] == {"n": 1}
    assert dead["deadLetterReason"] == "MaxDeliveryAttemptsExceeded"
    assert dead["deliveryAttempts"] == 2 and dead["lastDeliveryOutcome"] == "NotFound"
    assert dead["lastHttpStatusCode"] == 404
    assert dead["publishTime"].endswith("Z") and dead["lastDeliveryAttemptTime"].endswith("Z")
    await rig.stop()
    await blobs.aclose()


async def test_cloudevents_dead_letter_fields_are_lower_case(tmp_path: Path) -> None:
    clock = ManualClock()
    blobs = SqliteBlobService(tmp_path / "acct", "devstoreaccount1", clock)
    dl = sub(retry=RetryPolicy(1, 1440), dead_letter=DeadLetterConfig("dead"))
    rig = await Rig(tmp_path, config(dl, schema="CloudEventSchemaV1_0"), {"webhook": StatusSender(400)},
                    blobs=blobs, clock=clock).start()
    await rig.publish({"specversion": "1.0", "id": "c1", "source": "/app", "type": "t"},
                      schema="CloudEventSchemaV1_0")
    await rig.advance(300)
    [item] = (await blobs.list_blobs("dead")).items
    [dead] = json.loads((await blobs.download_blob("dead", item.name))[0])
    assert dead["deadletterreason"] == "UndeliverableDueToClientError" and dead["deliveryattempts"] == 1
    assert "publishtime" in dead and "deadLetterReason" not in dead
    await rig.stop()
    await blobs.aclose()


async def test_batching_by_count_and_size(tmp_path: Path) -> None:
    sender = StatusSender(200)
    batched = sub(max_events_per_batch=3, preferred_batch_kb=1)
    rig = Rig(tmp_path, config(batched), {"webhook": sender})
    await rig.publish(*[event(i) for i in range(7)])  # stored before the engine runs: all due at once
    await rig.publish(event(100, data={"blob": "x" * 2000}))  # larger than the preferred size
    await rig.start()
    sizes = sorted(len(events) for _, events in sender.calls)
    assert sizes == [1, 1, 3, 3] or sizes == [1, 2, 2, 3]
    assert all(len(events) <= 3 for _, events in sender.calls)
    big = [events for _, events in sender.calls if any(e["id"] == "ev-100" for e in events)]
    assert len(big[0]) == 1
    await rig.stop()


async def test_default_batch_is_one_event(tmp_path: Path) -> None:
    sender = StatusSender(200)
    rig = Rig(tmp_path, config(sub()), {"webhook": sender})
    await rig.publish(event(1), event(2))
    await rig.start()
    assert sorted(len(e) for _, e in sender.calls) == [1, 1]
    await rig.stop()


async def test_function_destination_invokes_each_event_and_any_failure_fails_the_batch(tmp_path: Path) -> None:
    invoker = FakeInvoker(fail=lambda e: "boom" if e["id"] == "ev-2" else None)
    clock = ManualClock()
    fs = FunctionSender(invoker, {"on_event": function_spec()}.get, clock)
    rig = Rig(tmp_path, config(sub(kind="function", max_events_per_batch=2)), {"function": fs}, clock=clock)
    await rig.publish(event(1), event(2))
    await rig.start()
    assert sorted(e["id"] for e in invoker.events) == ["ev-1", "ev-2"]
    rows = await rig.rows()
    assert {r.state for r in rows} == {"pending"} and {r.last_status for r in rows} == {500}
    await rig.advance(10)
    assert len(invoker.events) == 4  # the whole batch again
    await rig.stop()


async def test_function_that_outlives_30_seconds_is_a_failed_delivery(tmp_path: Path) -> None:
    release = asyncio.Event()
    invoker = FakeInvoker(block=release)
    clock = ManualClock()
    fs = FunctionSender(invoker, {"on_event": function_spec()}.get, clock)
    rig = await Rig(tmp_path, config(sub(kind="function")), {"function": fs}, clock=clock).start()
    await rig.publish(event())
    await rig.advance(30)
    [row] = await rig.rows()
    assert (row.state, row.last_outcome, row.attempts) == ("pending", "TimedOut", 1)
    await rig.advance(10)  # retried while the first invocation still runs: a duplicate, as on Azure
    assert len(invoker.events) == 2
    release.set()
    await rig.settle()
    [row] = await rig.rows()
    assert row.state == "delivered"
    await rig.stop()


async def test_stopping_starts_no_retry_and_waits_for_timed_out_invocations(tmp_path: Path) -> None:
    release = asyncio.Event()
    invoker = FakeInvoker(block=release)
    clock = ManualClock()
    fs = FunctionSender(invoker, {"on_event": function_spec()}.get, clock)
    rig = await Rig(tmp_path, config(sub(kind="function")), {"function": fs}, clock=clock).start()
    await rig.publish(event())
    await rig.advance(30)  # the delivery timed out; its invocation still runs
    stopping = asyncio.ensure_future(asyncio.gather(rig.engine.stop(), fs.drain()))
    await rig.advance(10)  # the retry would be due now
    assert len(invoker.events) == 1 and not stopping.done()  # no retry; the invocation holds the stop
    release.set()
    await asyncio.wait_for(stopping, 5)
    [row] = await rig.rows()
    assert (row.state, row.attempts) == ("pending", 1)  # the next attempt waits in the store
    await rig.stop()


async def test_unknown_function_is_retried_as_not_found(tmp_path: Path) -> None:
    clock = ManualClock()
    fs = FunctionSender(FakeInvoker(), {}.get, clock)
    rig = await Rig(tmp_path, config(sub(kind="function")), {"function": fs}, clock=clock).start()
    await rig.publish(event())
    [row] = await rig.rows()
    assert (row.state, row.last_outcome) == ("pending", "NotFound")
    await rig.stop()


async def test_storage_queue_destination_writes_base64_event_json(tmp_path: Path) -> None:
    clock = ManualClock()
    queues = SqliteQueueService(tmp_path / "acct", "devstoreaccount1", clock)
    await queues.create_queue("events")
    rig = await Rig(tmp_path, config(sub(kind="storageQueue")), {"storageQueue": QueueSender(lambda _c: queues)},
                    clock=clock).start()
    await rig.publish(event(7))
    [message] = await queues.peek_messages("events")
    import base64
    assert json.loads(base64.b64decode(message.content))["id"] == "ev-7"
    await rig.stop()
    await queues.aclose()


async def test_pending_retries_survive_a_restart(tmp_path: Path) -> None:
    clock = ManualClock()
    first = StatusSender(500)
    rig = await Rig(tmp_path, config(sub()), {"webhook": first}, clock=clock).start()
    await rig.publish(event())
    await rig.stop()
    await rig.store.aclose()
    second = StatusSender(200)
    reopened = await Rig(tmp_path, config(sub()), {"webhook": second}, clock=clock).start()
    assert second.calls == []  # not due yet
    await reopened.advance(10)
    assert [c for c, _ in second.calls] == [1]  # second attempt, counted from the stored row
    [row] = await reopened.rows()
    assert (row.state, row.attempts) == ("delivered", 2)
    await reopened.stop()


async def test_two_engines_on_one_store_never_deliver_a_row_twice(tmp_path: Path) -> None:
    clock = ManualClock()
    store_a = SqliteEventStore(tmp_path / "eventgrid")
    store_b = SqliteEventStore(tmp_path / "eventgrid")
    in_flight: set[str] = set()
    seen: list[str] = []
    overlap: list[str] = []

    class Tracking(StatusSender):
        async def send(self, sub, events, schema, delivery_count):  # type: ignore[no-untyped-def]
            for e in events:
                if e["id"] in in_flight:
                    overlap.append(e["id"])
                in_flight.add(e["id"])
                seen.append(e["id"])
            await asyncio.sleep(0.002)
            for e in events:
                in_flight.discard(e["id"])
            return await super().send(sub, events, schema, delivery_count)

    cfg = config(sub())
    a = Rig(tmp_path, cfg, {"webhook": Tracking(200)}, clock=clock, store=store_a)
    b_engine = DeliveryEngine(store_b, cfg, {"webhook": Tracking(200)}, clock)
    await a.publish(*[event(i) for i in range(40)])
    await asyncio.gather(a.engine.start(), b_engine.start())
    for _ in range(200):
        await asyncio.sleep(0.005)
        if len(seen) >= 40 and a.engine.idle and b_engine.idle:
            break
    await a.stop()
    await b_engine.stop()
    assert overlap == [] and sorted(seen) == sorted(f"ev-{i}" for i in range(40))
    assert {r.state for r in await store_a.deliveries()} == {"delivered"}
    await store_b.aclose()
