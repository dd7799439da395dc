"""Lease store initialization (azure-semantics 7.3, BootstrapperCore + PartitionSynchronizerCore).

Loop: ``.info`` present → done. Otherwise create ``.lock`` (ttl 30 s); if another instance holds
it, sleep 15 s and look again. The holder creates a lease per physical partition that has none
(continuation null), creates ``.info`` and deletes ``.lock`` with If-Match.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from funchost.clock import Clock
from funchost.storage.documents import PartitionRange
from funchost.triggers.changefeed.leases import LeaseManager

log = logging.getLogger("Host.Triggers.CosmosDB")

LOCK_TTL_SECONDS = 30
SLEEP_WHEN_LOCKED = 15.0
PARALLELISM = 25


async def initialize(leases: LeaseManager, partitions: Sequence[PartitionRange], clock: Clock) -> None:
    while not await leases.is_initialized():
        etag = await leases.acquire_init_lock(LOCK_TTL_SECONDS)
        if etag is None:
            log.debug("lease store %s is being initialized by another instance; waiting", leases.prefix)
            await clock.sleep(SLEEP_WHEN_LOCKED)
            continue
        try:
            await create_missing_leases(leases, partitions)
            await leases.mark_initialized()
        finally:
            await leases.release_init_lock(etag)


async def create_missing_leases(leases: LeaseManager, partitions: Sequence[PartitionRange]) -> int:
    existing = {lease.token for lease in await leases.all_leases()}
    missing = [p for p in partitions if str(p.id) not in existing]
    created = 0
    for start in range(0, len(missing), PARALLELISM):
        batch = missing[start:start + PARALLELISM]
        results = await asyncio.gather(*(leases.create_if_missing(str(p.id), p.min, p.max) for p in batch))
        created += sum(1 for r in results if r)
    return created
