"""The change feed trigger end to end over the embedded store, with a fake invoker and ManualClock:
lease documents, start positions, checkpoint-after-success, redelivery, MaxItemsPerInvocation."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from funchost.clock import ManualClock
from funchost.documents.aio import CosmosClient

from .support import FakeInvoker, listener, make_containers, make_runtime, settle, trigger_function


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime(2024, 5, 1, 12, 0, tzinfo=UTC))


async def lease_docs(runtime: Any) -> list[dict[str, Any]]:
    container = CosmosClient(runtime.storage.documents("CosmosDB")).get_database_client("db") \
        .get_container_client("leases")
    return sorted(await container.read_all_items(), key=lambda d: d["id"])


async def started(function, runtime):  # type: ignore[no-untyped-def]
    cf = listener(function, runtime)
    await cf.start()
    await settle()
    return cf


async def test_lease_documents_are_written_as_the_v3_processor_writes_them(tmp_path: Path, clock) -> None:  # type: ignore[no-untyped-def]
    runtime = make_runtime(tmp_path, clock, FakeInvoker())
    items = await make_containers(runtime, partitions=4)
    info = await items.read()
    cf = await started(trigger_function(leaseContainerPrefix="app1"), runtime)
    try:
        docs = await lease_docs(runtime)
        store = runtime.storage.documents("CosmosDB")
        db_rid = (await store.get_database("db"))["_rid"]
        prefix = f"app1localhost_{db_rid}_{info['_rid']}"
        assert [d["id"] for d in docs] == [f"{prefix}..{n}" for n in range(4)] + [f"{prefix}.info"]
        lease = docs[0]
        assert {k for k in lease if not k.startswith("_")} == {
            "id", "version", "LeaseToken", "FeedRange", "Owner", "ContinuationToken", "properties", "Mode",
            "timestamp"}
        assert lease["LeaseToken"] == "0" and lease["version"] == 0 and lease["Mode"] == "IncrementalFeed"
        assert lease["FeedRange"] == {"Range": {"min": "", "max": "4000"}}
        assert lease["Owner"] == cf.instance and lease["ContinuationToken"] is None
        assert lease["timestamp"].endswith("Z") and len(lease["timestamp"].split(".")[1]) == 8
        assert cf.owned_tokens() == ["0", "1", "2", "3"]
    finally:
        await cf.stop()
    assert all(d.get("Owner") is None for d in (await lease_docs(runtime))[:4])  # released on stop


async def test_default_start_is_now_and_changes_arrive_after_the_poll_delay(tmp_path: Path, clock) -> None:  # type: ignore[no-untyped-def]
    invoker = FakeInvoker()
    runtime = make_runtime(tmp_path, clock, invoker)
    items = await make_containers(runtime, partitions=1)
    await items.upsert_item({"id": "before", "pk": "p"})
    cf = await started(trigger_function(), runtime)
    try:
        await items.upsert_item({"id": "after", "pk": "p"})
        await clock.advance(4.9, settle)
        assert invoker.batches == []
        await clock.advance(0.2, settle)
        assert invoker.ids() == ["after"]
    finally:
        await cf.stop()


@pytest.mark.parametrize("props, expected", [
    ({"startFromBeginning": True}, ["old", "mid", "new"]),
    ({"startFromTime": "2024-05-01T12:00:30Z"}, ["mid", "new"]),
])
async def test_start_options_apply_to_a_lease_without_continuation(tmp_path: Path, clock, props, expected) -> None:  # type: ignore[no-untyped-def]
    invoker = FakeInvoker()
    runtime = make_runtime(tmp_path, clock, invoker)
    items = await make_containers(runtime, partitions=1)
    await items.upsert_item({"id": "old", "pk": "p"})
    clock._elapsed += 40
    await items.upsert_item({"id": "mid", "pk": "p"})
    await items.upsert_item({"id": "new", "pk": "p"})
    cf = await started(trigger_function(**props), runtime)
    await cf.stop()
    assert invoker.ids() == expected


async def test_start_options_are_ignored_once_a_continuation_exists(tmp_path: Path, clock) -> None:  # type: ignore[no-untyped-def]
    invoker = FakeInvoker()
    runtime = make_runtime(tmp_path, clock, invoker)
    items = await make_containers(runtime, partitions=1)
    await items.upsert_item({"id": "a", "pk": "p"})
    cf = await started(trigger_function(startFromBeginning=True), runtime)
    await cf.stop()
    assert invoker.ids() == ["a"]
    again = await started(trigger_function(startFromBeginning=True), runtime)
    await clock.advance(6, settle)
    await again.stop()
    assert invoker.ids() == ["a"]  # not delivered a second time


async def test_checkpoint_moves_only_after_success_and_a_failed_batch_comes_again(tmp_path: Path, clock) -> None:  # type: ignore[no-untyped-def]
    invoker = FakeInvoker(fail=lambda n: n == 1)
    runtime = make_runtime(tmp_path, clock, invoker)
    items = await make_containers(runtime, partitions=1)
    cf = await started(trigger_function(), runtime)
    try:
        await items.upsert_item({"id": "a", "pk": "p"})
        await items.upsert_item({"id": "b", "pk": "p"})
        await clock.advance(5, settle)
        assert [[d["id"] for d in b] for b in invoker.batches] == [["a", "b"]]
        assert (await lease_docs(runtime))[0]["ContinuationToken"] is None  # failed: no checkpoint
        await clock.advance(5, settle)  # the next poll delivers the same batch
        assert [[d["id"] for d in b] for b in invoker.batches] == [["a", "b"], ["a", "b"]]
        assert (await lease_docs(runtime))[0]["ContinuationToken"] == '"2"'
        await clock.advance(10, settle)
        assert len(invoker.batches) == 2  # nothing more once checkpointed
    finally:
        await cf.stop()


async def test_checkpoint_on_failure_option_reproduces_the_azure_extension(tmp_path: Path, clock) -> None:  # type: ignore[no-untyped-def]
    invoker = FakeInvoker(fail=lambda n: True)
    runtime = make_runtime(tmp_path, clock, invoker, settings={"FUNCHOST_COSMOSDB_CHECKPOINT_ON_FAILURE": "true"})
    items = await make_containers(runtime, partitions=1)
    cf = await started(trigger_function(), runtime)
    try:
        await items.upsert_item({"id": "a", "pk": "p"})
        await clock.advance(5, settle)
        await clock.advance(15, settle)
        assert invoker.ids() == ["a"]  # checkpointed despite the failure: never redelivered
        assert (await lease_docs(runtime))[0]["ContinuationToken"] == '"1"'
    finally:
        await cf.stop()


async def test_checkpoint_on_failure_from_host_json(tmp_path: Path, clock) -> None:  # type: ignore[no-untyped-def]
    invoker = FakeInvoker(fail=lambda n: True)
    runtime = make_runtime(tmp_path, clock, invoker,
                           host_json={"version": "2.0", "extensions": {"cosmosDB": {"checkpointOnFailure": True}}})
    items = await make_containers(runtime, partitions=1)
    await items.upsert_item({"id": "a", "pk": "p"})
    cf = await started(trigger_function(startFromBeginning=True), runtime)
    await clock.advance(10, settle)
    await cf.stop()
    assert invoker.ids() == ["a"]


async def test_max_items_per_invocation_splits_batches_and_drains_without_waiting(tmp_path: Path, clock) -> None:  # type: ignore[no-untyped-def]
    invoker = FakeInvoker()
    runtime = make_runtime(tmp_path, clock, invoker)
    items = await make_containers(runtime, partitions=1)
    for i in range(5):
        await items.upsert_item({"id": str(i), "pk": "p"})
    cf = await started(trigger_function(startFromBeginning=True, maxItemsPerInvocation=2), runtime)
    await cf.stop()
    assert [[d["id"] for d in b] for b in invoker.batches] == [["0", "1"], ["2", "3"], ["4"]]


async def test_intermediate_updates_collapse_and_deletes_are_not_delivered(tmp_path: Path, clock) -> None:  # type: ignore[no-untyped-def]
    invoker = FakeInvoker()
    runtime = make_runtime(tmp_path, clock, invoker)
    items = await make_containers(runtime, partitions=1)
    cf = await started(trigger_function(), runtime)
    try:
        for v in range(3):
            await items.upsert_item({"id": "a", "pk": "p", "v": v})
        await items.upsert_item({"id": "gone", "pk": "p"})
        await items.delete_item("gone", "p")
        await clock.advance(5, settle)
        assert [(d["id"], d["v"]) for d in invoker.batches[0]] == [("a", 2)]
        assert all("_lsn" in d and "_etag" in d and "_ts" in d for d in invoker.batches[0])
    finally:
        await cf.stop()


async def test_feed_poll_delay_from_the_decorator(tmp_path: Path, clock) -> None:  # type: ignore[no-untyped-def]
    invoker = FakeInvoker()
    runtime = make_runtime(tmp_path, clock, invoker)
    items = await make_containers(runtime, partitions=1)
    cf = await started(trigger_function(feedPollDelay=1000), runtime)
    try:
        await items.upsert_item({"id": "a", "pk": "p"})
        await clock.advance(1.01, settle)
        assert invoker.ids() == ["a"]
    finally:
        await cf.stop()


async def test_checkpoint_on_failure_never_checkpoints_an_abandoned_retry(tmp_path: Path, clock) -> None:  # type: ignore[no-untyped-def]
    """A retry loop cut short by a stopping host is a cancellation: no checkpoint, as on Azure."""
    invoker = FakeInvoker(fail=lambda n: n == 1, abandon=True)
    runtime = make_runtime(tmp_path, clock, invoker, settings={"FUNCHOST_COSMOSDB_CHECKPOINT_ON_FAILURE": "true"})
    items = await make_containers(runtime, partitions=1)
    cf = await started(trigger_function(), runtime)
    try:
        await items.upsert_item({"id": "a", "pk": "p"})
        await clock.advance(5, settle)
        await clock.advance(15, settle)
        assert invoker.ids() == ["a", "a"]  # not checkpointed: the same batch came again
    finally:
        await cf.stop()
