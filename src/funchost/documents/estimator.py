"""Change feed estimator: remaining work per lease and in total (azure-semantics 7.9, adapted).

Per lease: no continuation yet → 1 (as the SDK). Otherwise read one item after the
continuation: none → 0; else ``lag = latestLSN − firstItem._lsn + 1`` (the SDK's
``sessionLSN − (firstItem._lsn − 1)``, where the embedded store's partition LSN plays the
session token). The target-based scaler divides the total by ``maxItemsPerInvocation`` (100 when
unset) and caps the result at the number of leases.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from funchost.documents.aio import ContainerProxy
from funchost.storage.documents import DocumentStore
from funchost.triggers.changefeed.leases import Lease, continuation_lsn, lease_prefix

DEFAULT_CONCURRENCY = 100


@dataclass(frozen=True)
class LeaseEstimate:
    lease_token: str
    owner: str | None
    continuation: str | None
    estimated_lag: int


@dataclass(frozen=True)
class Estimate:
    leases: list[LeaseEstimate]

    @property
    def total(self) -> int:
        return sum(e.estimated_lag for e in self.leases)

    def target_workers(self, max_items_per_invocation: int = 0) -> int:
        """The target scaler's vote: no leases yet → 1 instance."""
        if not self.leases:
            return 1
        concurrency = max_items_per_invocation if max_items_per_invocation > 0 else DEFAULT_CONCURRENCY
        return min(len(self.leases), math.ceil(self.total / concurrency))


async def lag_of(store: DocumentStore, database: str, container: str, lease: Lease) -> int:
    after = continuation_lsn(lease.continuation)
    if after is None:
        return 1
    page = await store.read_feed(database, container, int(lease.token), after_lsn=after, max_items=1)
    if not page.items:
        return 0
    return max(0, page.latest_lsn - int(page.items[0]["_lsn"]) + 1)


async def estimate(store: DocumentStore, database: str, container: str, lease_store: DocumentStore,
                   lease_database: str, lease_container: str, processor_name: str = "") -> Estimate:
    info = await store.get_container(database, container)
    prefix = lease_prefix(processor_name, store.endpoint_host, info.database_rid, info.rid)
    docs = await ContainerProxy(lease_store, lease_database, lease_container).query_items(
        "SELECT * FROM c WHERE STARTSWITH(c.id, @p)", parameters=[{"name": "@p", "value": f"{prefix}.."}])
    leases = sorted((Lease.from_doc(d) for d in docs), key=lambda lease: (len(lease.token), lease.token))
    return Estimate([LeaseEstimate(lease.token, lease.owner, lease.continuation,
                                   await lag_of(store, database, container, lease)) for lease in leases])
