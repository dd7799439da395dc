"""Lease expiry and break periods, driven by the manual clock (what the timer singleton relies on)."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from funchost.clock import ManualClock
from funchost.errors import InvalidInput, LeaseConflict, PreconditionFailed
from funchost.storage.blobs import INFINITE_LEASE
from funchost.storage.blobsql import blob_leases as leases
from funchost.storage.sqlite.blobs import SqliteBlobService


async def state(blobs: SqliteBlobService) -> str:
    return (await blobs.get_blob_properties("box", "lock")).lease_state


@pytest.fixture
async def lock(blobs: SqliteBlobService) -> str:
    await blobs.upload_blob("box", "lock", b"")
    return "lock"


async def test_fixed_lease_expires_after_its_duration(blobs, clock: ManualClock, lock):
    first = await blobs.acquire_lease("box", lock, duration=15)
    await clock.advance(14.9)
    with pytest.raises(LeaseConflict):
        await blobs.acquire_lease("box", lock, duration=15)
    await clock.advance(0.1)
    assert await state(blobs) == "expired"
    second = await blobs.acquire_lease("box", lock, duration=60)
    assert second != first and await state(blobs) == "leased"


async def test_expired_lease_allows_writes_without_id_and_then_forgets_it(blobs, clock, lock):
    lease = await blobs.acquire_lease("box", lock, duration=15)
    await clock.advance(20)
    await blobs.upload_blob("box", lock, b"next")
    assert await state(blobs) == "available"
    with pytest.raises(LeaseConflict) as info:
        await blobs.renew_lease("box", lock, lease)
    assert info.value.code == "LeaseIdMismatchWithLeaseOperation"


async def test_expired_lease_can_be_renewed_by_its_holder(blobs, clock, lock):
    lease = await blobs.acquire_lease("box", lock, duration=15)
    await clock.advance(30)
    await blobs.renew_lease("box", lock, lease)
    assert await state(blobs) == "leased"
    with pytest.raises(PreconditionFailed):
        await blobs.upload_blob("box", lock, b"x")


async def test_renew_extends_from_now(blobs, clock, lock):
    lease = await blobs.acquire_lease("box", lock, duration=20)
    await clock.advance(15)
    await blobs.renew_lease("box", lock, lease)
    await clock.advance(15)  # 30 s after acquire, 15 s after renew
    assert await state(blobs) == "leased"
    await clock.advance(5)
    assert await state(blobs) == "expired"


async def test_infinite_lease_never_expires(blobs, clock, lock):
    await blobs.acquire_lease("box", lock, duration=INFINITE_LEASE)
    await clock.advance(365 * 24 * 3600)
    assert await state(blobs) == "leased"


async def test_break_period_then_broken(blobs, clock, lock):
    lease = await blobs.acquire_lease("box", lock, duration=60)
    assert await blobs.break_lease("box", lock, break_period=10) == 10
    await clock.advance(9)
    assert await state(blobs) == "breaking"
    with pytest.raises(LeaseConflict) as info:
        await blobs.acquire_lease("box", lock, duration=15, lease_id=lease)
    assert info.value.code == "LeaseIsBreakingAndCannotBeAcquired"
    await clock.advance(1)
    assert await state(blobs) == "broken"
    assert await blobs.acquire_lease("box", lock, duration=15) != lease


async def test_break_without_period_waits_for_the_fixed_lease_to_run_out(blobs, clock, lock):
    await blobs.acquire_lease("box", lock, duration=40)
    await clock.advance(10)
    assert await blobs.break_lease("box", lock) == 30
    await clock.advance(30)
    assert await state(blobs) == "broken"


async def test_break_period_longer_than_the_lease_ends_with_the_lease(blobs, clock, lock):
    await blobs.acquire_lease("box", lock, duration=15)
    assert await blobs.break_lease("box", lock, break_period=60) == 15


async def test_infinite_lease_breaks_at_once_without_period(blobs, lock):
    await blobs.acquire_lease("box", lock, duration=INFINITE_LEASE)
    assert await blobs.break_lease("box", lock) == 0
    assert await state(blobs) == "broken"


async def test_breaking_again_can_only_shorten(blobs, clock, lock):
    await blobs.acquire_lease("box", lock, duration=60)
    await blobs.break_lease("box", lock, break_period=20)
    assert await blobs.break_lease("box", lock, break_period=50) == 20
    assert await blobs.break_lease("box", lock, break_period=5) == 5


@pytest.mark.parametrize("period", [-1, 61])
async def test_invalid_break_period(blobs, lock, period):
    await blobs.acquire_lease("box", lock, duration=60)
    with pytest.raises(InvalidInput):
        await blobs.break_lease("box", lock, break_period=period)


async def test_lease_ids_must_be_guids_and_compare_as_guids(blobs, lock):
    with pytest.raises(InvalidInput):
        await blobs.acquire_lease("box", lock, duration=15, lease_id="not-a-guid")
    proposed = uuid.uuid4()
    got = await blobs.acquire_lease("box", lock, duration=15, lease_id=str(proposed).upper())
    assert got == str(proposed)
    await blobs.renew_lease("box", lock, "{" + str(proposed) + "}")


async def test_only_one_of_two_stores_on_one_file_gets_the_lease(tmp_path, clock, blobs, lock):
    """Two service objects on one database behave like two processes on one data folder."""
    other = SqliteBlobService(tmp_path / "acct", "devstoreaccount1", clock)
    try:
        results = await asyncio.gather(
            *(svc.acquire_lease("box", lock, duration=60) for svc in [blobs, other] * 3), return_exceptions=True)
        winners = [r for r in results if isinstance(r, str)]
        assert len(winners) == 1
        assert all(isinstance(r, LeaseConflict) for r in results if not isinstance(r, str))
    finally:
        await other.aclose()


def test_state_machine_release_in_every_state():
    now = 1000.0
    leased = leases.acquire(leases.AVAILABLE, 15, None, now)
    assert leases.release(leased, leased.lease_id, now) == leases.AVAILABLE
    assert leases.release(leased, leased.lease_id, now + 100) == leases.AVAILABLE  # expired
    breaking, _ = leases.break_(leased, 5, now)
    assert leases.release(breaking, leased.lease_id, now) == leases.AVAILABLE
    with pytest.raises(LeaseConflict):
        leases.release(leases.AVAILABLE, str(uuid.uuid4()), now)
