"""EqualPartitionsBalancingStrategy (azure-semantics 7.4), as a pure function.

Every acquire interval each instance reads all leases and decides which to take: expired or
unowned leases first (up to what it still needs), otherwise steal at most one lease from the
busiest owner. With more instances than partitions the target is 1 and the extra instances
stay idle.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime

from funchost.triggers.changefeed.leases import Lease


def target_count(partitions: int, workers: int, *, min_count: int = 0, max_count: int = 0) -> int:
    target = 1
    if partitions > workers:
        target = math.ceil(partitions / workers)
    if max_count > 0 and target > max_count:
        target = max_count
    if min_count > 0 and target < min_count:
        target = min_count
    return target


def select_leases_to_take(
    leases: Sequence[Lease],
    me: str,
    now: datetime,
    expiration: float,
    *,
    min_count: int = 0,
    max_count: int = 0,
) -> list[Lease]:
    available: list[Lease] = []
    per_worker: dict[str, int] = {}
    for lease in leases:
        if lease.is_expired(now, expiration):
            available.append(lease)
        else:
            owner = lease.owner or ""
            per_worker[owner] = per_worker.get(owner, 0) + 1
    per_worker.setdefault(me, 0)
    target = target_count(len(leases), len(per_worker), min_count=min_count, max_count=max_count)
    needed = target - per_worker[me]
    if needed <= 0:
        return []
    if available:
        return available[:needed]
    busiest, most = "", -1
    for worker, count in per_worker.items():  # ties: the last worker iterated wins
        if most <= count:
            busiest, most = worker, count
    if most > target - (1 if needed > 1 else 0):
        for lease in leases:
            if (lease.owner or "").lower() == busiest.lower():
                return [lease]
    return []
