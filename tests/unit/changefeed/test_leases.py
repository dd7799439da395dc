"""Lease acquire / renew / expire / steal across instances, the balancing rule, start-up errors,
and optimistic concurrency on lease documents."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from funchost.clock import ManualClock
from funchost.documents.aio import ContainerProxy
from funchost.errors import AppLoadError, ConfigError
from funchost.triggers.changefeed.balancer import select_leases_to_take
from funchost.triggers.changefeed.leases import Lease, LeaseLost, LeaseManager, feed_range
from funchost.triggers.changefeed.listener import ChangeFeedListener

from .support import FakeInvoker, listener, make_containers, make_runtime, settle, trigger_function

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(NOW)


async def crash(cf: ChangeFeedListener) -> None:
    """Stop an instance without releasing anything, as a killed process would."""
    cf._stopping = True
    if cf._balance is not None:
        await cf._balance.stop()
    for processor in list(cf.processors.values()):
        await processor.stop(release=False)


def owners(*listeners: ChangeFeedListener) -> list[int]:
    return sorted(len(cf.processors) for cf in listeners)


# -- the balancing rule (pure) ----------------------------------------------------------------------


def lease(token: str, owner: str | None, age: float = 0.0) -> Lease:
    return Lease(id=f"p..{token}", token=token, feed_range=feed_range("", "FF"), owner=owner,
                 timestamp=NOW - timedelta(seconds=age))


def test_expired_and_unowned_leases_are_taken_first_up_to_the_target() -> None:
    leases = [lease("0", "a"), lease("1", None), lease("2", "b", age=61), lease("3", "b")]
    taken = select_leases_to_take(leases, "me", NOW, 60)
    # workers a, b, me → target ceil(4/3) = 2; two available leases, both taken
    assert [t.token for t in taken] == ["1", "2"]


def test_at_most_one_lease_is_stolen_per_cycle_from_the_busiest_owner() -> None:
    leases = [lease(str(i), "a") for i in range(4)]
    taken = select_leases_to_take(leases, "me", NOW, 60)
    assert [t.token for t in taken] == ["0"]
    balanced = [lease("0", "a"), lease("1", "a"), lease("2", "me"), lease("3", "me")]
    assert select_leases_to_take(balanced, "me", NOW, 60) == []


def test_steal_needs_the_owner_above_target() -> None:
    # a: 2, b: 1, me: 1 with 4 leases and 3 workers → target 2, needed 1; a has 2, not > 2
    leases = [lease("0", "a"), lease("1", "a"), lease("2", "b"), lease("3", "me")]
    assert select_leases_to_take(leases, "me", NOW, 60) == []


def test_more_instances_than_partitions_leave_the_extra_ones_idle() -> None:
    leases = [lease("0", "a")]
    assert select_leases_to_take(leases, "me", NOW, 60) == []
    assert [t.token for t in select_leases_to_take([lease("0", "a", age=61)], "me", NOW, 60)] == ["0"]


# -- instances on one store --------------------------------------------------------------------------


async def test_two_instances_split_four_leases_and_an_expired_instance_is_taken_over(tmp_path: Path, clock) -> None:  # type: ignore[no-untyped-def]
    runtime = make_runtime(tmp_path, clock, FakeInvoker())
    items = await make_containers(runtime, partitions=4)
    a = listener(trigger_function(), runtime)
    await a.start()
    await settle()
    assert owners(a) == [4]
    b = listener(trigger_function(), runtime)
    await b.start()
    await settle()
    await clock.advance(13 * 3, settle)  # one steal per acquire interval
    assert owners(a, b) == [2, 2]
    # renewals keep the leases alive long past the expiration interval
    await clock.advance(120, settle)
    assert owners(a, b) == [2, 2]
    await crash(b)
    await clock.advance(59, settle)
    assert len(a.processors) == 2  # not yet expired
    await clock.advance(16, settle)  # expiry (60 s after the last renewal) + an acquire cycle
    assert len(a.processors) == 4
    # no change is lost: what b never processed is delivered by a
    for i in range(8):
        await items.upsert_item({"id": str(i), "pk": f"k{i}"})
    await clock.advance(6, settle)
    assert sorted(runtime.invoker.ids()) == [str(i) for i in range(8)]
    await a.stop()


async def test_a_stolen_lease_stops_processing_on_the_old_owner(tmp_path: Path, clock) -> None:  # type: ignore[no-untyped-def]
    runtime = make_runtime(tmp_path, clock, FakeInvoker())
    await make_containers(runtime, partitions=2)
    a = listener(trigger_function(), runtime)
    await a.start()
    await settle()
    b = listener(trigger_function(), runtime)
    await b.start()
    await settle()
    assert len(b.processors) == 1  # b stole one at its first balancing
    assert len(a.processors) == 2  # a has not noticed yet
    await clock.advance(9, settle)  # a's renewal notices the lease is not its own any more
    assert len(a.processors) == 1 and set(a.processors).isdisjoint(b.processors)
    await a.stop()
    await b.stop()


async def test_a_stopped_instance_releases_so_the_other_takes_over_without_waiting_for_expiry(tmp_path: Path, clock) -> None:  # type: ignore[no-untyped-def]
    runtime = make_runtime(tmp_path, clock, FakeInvoker())
    await make_containers(runtime, partitions=2)
    a = listener(trigger_function(), runtime)
    await a.start()
    await settle()
    b = listener(trigger_function(), runtime)
    await b.start()
    await settle()
    await a.stop()
    await clock.advance(13, settle)
    assert len(b.processors) == 2
    await b.stop()


async def test_short_lease_intervals_from_the_decorator(tmp_path: Path, clock) -> None:  # type: ignore[no-untyped-def]
    runtime = make_runtime(tmp_path, clock, FakeInvoker())
    await make_containers(runtime, partitions=2)
    fast = dict(leaseAcquireInterval=1000, leaseExpirationInterval=3000, leaseRenewInterval=500)
    a = listener(trigger_function(**fast), runtime)
    await a.start()
    await settle()
    b = listener(trigger_function(**fast), runtime)
    await b.start()
    await settle()
    await crash(a)
    await clock.advance(4.1, settle)
    assert len(b.processors) == 2
    await b.stop()


# -- optimistic concurrency ---------------------------------------------------------------------------


async def test_a_412_rereads_and_reapplies_and_a_changed_owner_is_lease_lost(tmp_path: Path, clock) -> None:  # type: ignore[no-untyped-def]
    runtime = make_runtime(tmp_path, clock, FakeInvoker())
    await make_containers(runtime, partitions=1)
    container = ContainerProxy(runtime.storage.documents("CosmosDB"), "db", "leases")
    me = LeaseManager(container, "p", "me", clock)
    other = LeaseManager(container, "p", "other", clock)
    await me.create_if_missing("0", "", "FF")
    mine = await me.acquire((await me.all_leases())[0])
    # someone else touches the document (a newer etag) without changing the owner
    raw = await container.read_item(mine.id, mine.id)
    await container.upsert_item(dict(raw, properties={"x": "1"}))
    checkpointed = await me.checkpoint(mine, '"5"')  # 412 → re-read → re-applied
    assert checkpointed.continuation == '"5"' and checkpointed.properties == {"x": "1"}
    stolen = await other.acquire(checkpointed)
    assert stolen.owner == "other"
    with pytest.raises(LeaseLost):
        await me.checkpoint(checkpointed, '"6"')
    with pytest.raises(LeaseLost):
        await me.renew(checkpointed)
    with pytest.raises(LeaseLost):
        await me.acquire(checkpointed)  # observed owner 'me' is not the server's owner any more
    assert (await me.read(mine.id)).continuation == '"5"'  # type: ignore[union-attr]


# -- start-up errors ----------------------------------------------------------------------------------


def test_the_lease_container_cannot_be_the_monitored_one(tmp_path: Path, clock) -> None:  # type: ignore[no-untyped-def]
    runtime = make_runtime(tmp_path, clock, FakeInvoker())
    with pytest.raises(AppLoadError, match="The monitored container cannot be the same as the container "
                                           "storing the leases."):
        listener(trigger_function(leaseContainerName="ITEMS"), runtime)


def test_start_from_beginning_and_start_from_time_are_exclusive(tmp_path: Path, clock) -> None:  # type: ignore[no-untyped-def]
    runtime = make_runtime(tmp_path, clock, FakeInvoker())
    with pytest.raises(AppLoadError, match="Only one of StartFromBeginning or StartFromTime can be used"):
        listener(trigger_function(startFromBeginning=True, startFromTime="2021-02-16T14:19:29Z"), runtime)
    with pytest.raises(AppLoadError, match="Please use the ISO 8601 format with the UTC designator"):
        listener(trigger_function(startFromTime="yesterday"), runtime)


async def test_a_missing_lease_container_fails_the_start_and_names_it(tmp_path: Path, clock) -> None:  # type: ignore[no-untyped-def]
    runtime = make_runtime(tmp_path, clock, FakeInvoker())
    await make_containers(runtime, leases=False)
    cf = listener(trigger_function(leaseContainerName="myleases"), runtime)
    with pytest.raises(ConfigError) as error:
        await cf.start()
    assert "the lease container 'myleases' (in database 'db') does not exist" in str(error.value)
    assert "set 'CreateLeaseContainerIfNotExists' to 'true'" in str(error.value)


async def test_create_lease_container_if_not_exists_creates_it(tmp_path: Path, clock) -> None:  # type: ignore[no-untyped-def]
    runtime = make_runtime(tmp_path, clock, FakeInvoker())
    await make_containers(runtime, partitions=2, leases=False)
    cf = listener(trigger_function(leaseContainerName="myleases", createLeaseContainerIfNotExists=True), runtime)
    await cf.start()
    await settle()
    assert len(cf.processors) == 2
    await cf.stop()
    store = runtime.storage.documents("CosmosDB")
    info = await store.get_container("db", "myleases")
    assert info.partition_key_path == "/id" and info.default_ttl == -1


async def test_stop_waits_for_the_batch_in_flight_on_a_lost_lease(tmp_path: Path, clock) -> None:  # type: ignore[no-untyped-def]
    import asyncio

    release = asyncio.Event()
    started = asyncio.Event()

    class SlowInvoker(FakeInvoker):
        async def invoke(self, request):  # type: ignore[no-untyped-def]
            started.set()
            await release.wait()
            return await super().invoke(request)

    runtime = make_runtime(tmp_path, clock, SlowInvoker())
    items = await make_containers(runtime, partitions=1)
    a = listener(trigger_function(startFromBeginning=True), runtime)
    await items.upsert_item({"id": "1", "pk": "k"})
    await a.start()
    await settle()
    assert started.is_set() and len(a.processors) == 1
    (token,) = a.processors
    assert a.leases is not None
    server = await a.leases.read(a.leases.lease_id(token))
    assert server is not None
    await a.leases.container.replace_item(server.id, {**server.to_doc(), "Owner": "someone-else"})
    await clock.advance(9, settle)  # the renewal finds the lease taken: processing stops
    assert not a.processors
    stopping = asyncio.ensure_future(a.stop())
    await settle()
    assert not stopping.done()  # the invocation in flight is still running
    release.set()
    await stopping
    assert runtime.invoker.ids() == ["1"]


async def test_a_missing_source_container_names_the_store_and_the_command_that_creates_it(
        tmp_path: Path, clock) -> None:  # type: ignore[no-untyped-def]
    runtime = make_runtime(tmp_path, clock, FakeInvoker())
    cf = listener(trigger_function(createLeaseContainerIfNotExists=True), runtime)
    with pytest.raises(ConfigError) as error:
        await cf.start()
    message = str(error.value)
    assert "Either the source container 'items' (in database 'db')" in message
    assert "CreateLeaseContainerIfNotExists" not in message  # it is set: no advice to set it
    assert f"embedded document store 'CosmosDB' ({tmp_path / 'storage' / 'CosmosDB'})" in message
    assert f"funchost docs create --data {tmp_path} -d db -c items --partition-key-path /id" in message


async def test_a_missing_lease_container_gets_the_create_command_with_the_lease_key(
        tmp_path: Path, clock) -> None:  # type: ignore[no-untyped-def]
    runtime = make_runtime(tmp_path, clock, FakeInvoker())
    await make_containers(runtime, leases=False)
    cf = listener(trigger_function(leaseConnection="Leases"), runtime)
    with pytest.raises(ConfigError) as error:
        await cf.start()
    assert "set 'CreateLeaseContainerIfNotExists' to 'true'" in str(error.value)
    assert str(error.value).endswith("--connection Leases -d db -c leases --partition-key-path /id")


@pytest.mark.parametrize(("props", "named"), [
    ({"collectionName": "items"}, "'collectionName' (now 'containerName')"),
    ({"connectionStringSetting": "CosmosDB", "leaseCollectionName": "leases"},
     "'connectionStringSetting' (now 'connection'), 'leaseCollectionName' (now 'leaseContainerName')"),
    ({"checkpointInterval": 5}, "'checkpointInterval' (gone)"),
])
def test_v3_only_bindings_are_refused_with_their_v4_names(tmp_path: Path, clock, props: dict[str, object],  # type: ignore[no-untyped-def]
                                                          named: str) -> None:
    """A binding without the 4.x containerName: the 4.x extension could not run it."""
    runtime = make_runtime(tmp_path, clock, FakeInvoker())
    function = trigger_function(**props)
    del function.trigger.properties["containerName"]
    with pytest.raises(AppLoadError, match="extension 3.x properties") as error:
        listener(function, runtime)
    assert named in str(error.value)
    assert "needs 'databaseName' and 'containerName'" not in str(error.value)


def test_v3_names_beside_the_v4_ones_are_ignored(tmp_path: Path, clock, caplog) -> None:  # type: ignore[no-untyped-def]
    runtime = make_runtime(tmp_path, clock, FakeInvoker())
    function = trigger_function(collectionName="items", leaseCollectionName="leases")
    with caplog.at_level("WARNING", logger="funchost.bindings.cosmosdb"):
        listener(function, runtime)
    assert any("'collectionName', 'leaseCollectionName' are ignored" in r.getMessage() for r in caplog.records)
