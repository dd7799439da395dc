"""Estimator: lag per lease from its continuation, total, and the target-based scaler's vote."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from funchost.clock import ManualClock
from funchost.documents.estimator import estimate
from funchost.storage.document_sql import partition_of, pk_key

from ..changefeed.support import (
    FakeInvoker,
    listener,
    make_containers,
    make_runtime,
    settle,
    trigger_function,
)


async def test_lag_per_lease_and_total_follow_the_checkpoints(tmp_path: Path) -> None:
    clock = ManualClock(datetime(2024, 5, 1, tzinfo=UTC))
    invoker = FakeInvoker(fail=lambda n: True)  # nothing gets checkpointed
    runtime = make_runtime(tmp_path, clock, invoker)
    items = await make_containers(runtime, partitions=2)
    store = runtime.storage.documents("CosmosDB")

    async def lags() -> dict[str, int]:
        result = await estimate(store, "db", "items", store, "db", "leases")
        assert result.total == sum(e.estimated_lag for e in result.leases)
        return {e.lease_token: e.estimated_lag for e in result.leases}

    assert (await estimate(store, "db", "items", store, "db", "leases")).target_workers() == 1  # no leases yet
    cf = listener(trigger_function(startFromBeginning=True), runtime)
    await cf.start()
    await settle()
    assert await lags() == {"0": 1, "1": 1}  # no continuation yet → 1 each (as the SDK)
    invoker.fail = lambda n: False
    await items.upsert_item({"id": "a", "pk": "k0"})  # make both leases checkpoint
    keys = [f"k{i}" for i in range(40)]
    other = next(k for k in keys if partition_of(pk_key(k), 2) != partition_of(pk_key("k0"), 2))
    await items.upsert_item({"id": "b", "pk": other})
    await clock.advance(5, settle)
    assert await lags() == {"0": 0, "1": 0}
    await cf.stop()
    target = partition_of(pk_key("k0"), 2)
    for i in range(3):
        await items.upsert_item({"id": f"n{i}", "pk": "k0"})
    await items.upsert_item({"id": "n0", "pk": "k0", "v": 2})  # n0 moves to the end: first left is n1
    result = await estimate(store, "db", "items", store, "db", "leases")
    assert {e.lease_token: e.estimated_lag for e in result.leases} == {str(target): 3, str(1 - target): 0}  # LSN distance, as the SDK
    assert result.target_workers(max_items_per_invocation=2) == 2
    assert result.target_workers() == 1
