"""The SDK's load balancer, and hosts sharing one data folder splitting and taking over partitions."""

from __future__ import annotations

import random
import sys
from datetime import UTC, datetime, timedelta

import pytest

from funchost.clock import ManualClock
from funchost.testing import HostHarness, write_app
from funchost.triggers.eventhub.balancer import choose_claim
from funchost.triggers.eventhub.checkpoints import Ownership

NOW = datetime(2024, 1, 1, tzinfo=UTC)
PARTITIONS = [str(i) for i in range(4)]


def owned(owner: str, *pids: str, age: float = 0) -> list[Ownership]:
    return [Ownership("ns", "h", "$default", p, owner, NOW - timedelta(seconds=age), "e") for p in pids]


def claim(ownerships: list[Ownership], me: str = "me") -> str | None:
    return choose_claim(ownerships, PARTITIONS, me, NOW, 120, random.Random(1))


def test_claims_unclaimed_first() -> None:
    assert claim([]) in PARTITIONS
    assert claim(owned("other", "0", "1")) in {"2", "3"}


def test_balanced_claims_nothing() -> None:
    assert claim(owned("me", "0", "1") + owned("other", "2", "3")) is None


def test_expired_and_relinquished_ownership_is_unclaimed() -> None:
    assert claim(owned("me", "0", "1") + owned("dead", "2", "3", age=121)) in {"2", "3"}
    assert claim(owned("me", "0", "1") + owned("", "2", "3")) in {"2", "3"}


def test_steals_from_an_owner_above_the_maximum() -> None:
    assert claim(owned("greedy", *PARTITIONS)) in PARTITIONS  # 4 // 2 = 2: greedy holds 4 > 3
    assert claim(owned("a", "0", "1", "2") + owned("me", "3")) in {"0", "1", "2"}  # below minimum: steal max


def test_three_owners_of_four_partitions_settle_at_2_1_1() -> None:
    assert claim(owned("a", "0", "1") + owned("b", "2") + owned("me", "3")) is None
    # A newcomer below the minimum (1) steals from an owner holding exactly the maximum (2).
    assert claim(owned("a", "0", "1") + owned("b", "2", "3"), me="me") in PARTITIONS


APP = """
import azure.functions as func
app = func.FunctionApp()
SEEN = []

@app.event_hub_message_trigger(arg_name="event", event_hub_name="shared", connection="EH")
def work(event: func.EventHubEvent) -> None:
    SEEN.append((event.get_body().decode(), event.metadata["PartitionContext"]["PartitionId"]))
"""

HOST_JSON = {"version": "2.0", "extensions": {"eventHubs": {
    "loadBalancingUpdateInterval": "00:00:10", "partitionOwnershipExpirationInterval": "00:00:30"}}}


@pytest.fixture
async def two_hosts(tmp_path):  # type: ignore[no-untyped-def]
    app = write_app(tmp_path / "app", APP, host_json=HOST_JSON)
    clock = ManualClock()
    first = HostHarness(app, data_dir=tmp_path / "data", clock=clock)
    second = HostHarness(app, data_dir=tmp_path / "data", clock=clock)
    await first.start()
    await second.start()
    yield first, second
    for host in (second, first):
        if host.host.state != "Stopped":
            await host.stop()


def listener(host: HostHarness):  # type: ignore[no-untyped-def]
    return host.host.listeners["work"].listener


async def test_two_hosts_split_evenly_and_take_over_after_expiry(two_hosts) -> None:  # type: ignore[no-untyped-def]
    first, second = two_hosts
    for _ in range(4):
        await first.advance(10)
    assert len(listener(first).owned_partitions()) == 2 and len(listener(second).owned_partitions()) == 2
    owners = await first.eventhubs.owners("shared")
    assert sorted(owners.values()).count(listener(first).instance) == 2
    # The first host "dies": its ownerships are no longer renewed and it processes nothing.
    dead = listener(first)
    await dead._balance.stop()
    for processor in dead.processors.values():
        await processor.stop(lost=True)
    for i in range(8):
        await second.eventhubs.send("shared", [f"after-{i}"], partition_id=str(i % 4))
    for _ in range(5):
        await second.advance(10)
    assert listener(second).owned_partitions() == PARTITIONS  # taken over after 30 s of expiry
    bodies = sorted(b for b, _ in sys.modules["function_app"].SEEN)
    assert bodies == sorted(f"after-{i}" for i in range(8))


async def test_a_stopped_host_relinquishes_so_the_other_takes_over_at_once(two_hosts) -> None:  # type: ignore[no-untyped-def]
    first, second = two_hosts
    for _ in range(3):
        await first.advance(10)
    await first.stop()
    assert set((await second.eventhubs.owners("shared")).values()) >= {""}  # relinquished, not expired
    await second.advance(10)
    assert listener(second).owned_partitions() == PARTITIONS


async def test_ownership_lost_mid_batch_writes_no_checkpoint(two_hosts) -> None:  # type: ignore[no-untyped-def]
    first, second = two_hosts
    for _ in range(3):
        await first.advance(10)
    mine = listener(first)
    pid = mine.owned_partitions()[0]
    processor = mine.processors[pid]
    processor.lost = True  # what a failed renewal does to the partition's token
    await first.eventhubs.send("shared", ["orphan"], partition_id=pid)
    await first.advance(1)
    assert pid not in await first.eventhubs.checkpoints("shared")
