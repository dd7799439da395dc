"""The SDK's partition load balancer (`PartitionLoadBalancer.FindAndClaimOwnershipAsync`), as a
pure function: which partition, if any, this processor should claim now.

Active owners are those whose record is younger than the ownership expiration and names an
owner; this processor always counts, even with nothing. With `minimum = partitions // owners`, a
claim is due when this processor owns fewer than `minimum`, or exactly `minimum` while nobody
owns fewer. Then: a random unclaimed (never owned, expired or relinquished) partition; else a
random partition of an owner holding more than `minimum + 1`; else, only when below `minimum`,
one of an owner holding exactly `minimum + 1`. At most one partition per call; the greedy
strategy the extension uses calls again at once after a successful claim.
Source: Azure/azure-sdk-for-net sdk/eventhub/Azure.Messaging.EventHubs.Shared/src/Processor/
PartitionLoadBalancer.cs.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import datetime

from funchost.triggers.eventhub.checkpoints import Ownership


def active_distribution(ownerships: Sequence[Ownership], me: str, now: datetime,
                        expiration: float) -> dict[str, list[str]]:
    """owner -> partitions it holds now (always including `me`)."""
    active: dict[str, list[str]] = {me: []}
    for ownership in ownerships:
        if ownership.last_modified is None or not ownership.owner_id.strip():
            continue
        if (now - ownership.last_modified).total_seconds() < expiration:
            active.setdefault(ownership.owner_id, []).append(ownership.partition_id)
    return active


def choose_claim(ownerships: Sequence[Ownership], partition_ids: Sequence[str], me: str, now: datetime,
                 expiration: float, rng: random.Random) -> str | None:
    active = active_distribution(ownerships, me, now, expiration)
    minimum = len(partition_ids) // len(active)
    owned = len(active[me])
    needs = owned < minimum or (owned == minimum and not any(len(p) < minimum for p in active.values()))
    if not needs:
        return None
    held = {p for partitions in active.values() for p in partitions}
    unclaimed = [p for p in partition_ids if p not in held]
    if unclaimed:
        return rng.choice(unclaimed)
    maximum = minimum + 1
    over = [p for owner, parts in active.items() if owner != me and len(parts) > maximum for p in parts]
    if over:
        return rng.choice(over)
    exactly = [p for owner, parts in active.items() if owner != me and len(parts) == maximum for p in parts]
    if owned < minimum and exactly:
        return rng.choice(exactly)
    return None
