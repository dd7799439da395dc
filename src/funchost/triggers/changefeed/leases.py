"""Lease documents and lease operations, as the v3 change feed processor writes them.

Documents (azure-semantics 7.2), ids built from the lease prefix
``{processorName}{accountHost}_{databaseRid}_{containerRid}``:
``{prefix}.info`` (store initialized), ``{prefix}.lock`` (bootstrap lock, ttl 30 s) and
``{prefix}..{leaseToken}`` (one per physical partition). Every update is read-modify-replace
with If-Match on ``_etag``; on 412 the server copy is re-read and the change re-applied, up to
5 retries, then `LeaseLost` (7.5).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from funchost.clock import Clock
from funchost.documents import MatchConditions
from funchost.documents.aio import ContainerProxy
from funchost.documents.exceptions import (
    CosmosAccessConditionFailedError,
    CosmosResourceExistsError,
    CosmosResourceNotFoundError,
)
from funchost.errors import LeaseConflict

log = logging.getLogger("Host.Triggers.CosmosDB")

RETRIES_ON_CONFLICT = 5
MODE_LATEST_VERSION = "IncrementalFeed"


class LeaseLost(LeaseConflict):
    """Another instance owns the lease now, or it is gone."""

    code = "LeaseLost"


def lease_prefix(processor_name: str, endpoint_host: str, database_rid: str, container_rid: str) -> str:
    return f"{processor_name}{endpoint_host}_{database_rid}_{container_rid}"


def format_timestamp(when: datetime) -> str:
    """DateTime UTC as Json.NET writes it: 7 fractional digits and 'Z'."""
    when = when.astimezone(UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond:06d}0Z"


def parse_timestamp(text: str) -> datetime:
    text = text.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    head, _, rest = text.partition(".")
    if rest:  # .NET writes up to 7 digits; Python reads at most 6
        digits = "".join(ch for ch in rest.split("+")[0].split("-")[0])
        tz = rest[len(digits):]
        text = f"{head}.{digits[:6].ljust(6, '0')}{tz}"
    parsed = datetime.fromisoformat(text)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def continuation_lsn(token: str | None) -> int | None:
    """A PK-range continuation is the quoted LSN (``"\\"47\\""``), as the v3 SDK stores it."""
    if token is None or not token.strip():
        return None
    return int(token.strip().strip('"'))


def continuation_token(lsn: int) -> str:
    return f'"{lsn}"'


@dataclass
class Lease:
    id: str
    token: str
    feed_range: dict[str, Any]
    owner: str | None = None
    continuation: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    mode: str = MODE_LATEST_VERSION
    timestamp: datetime | None = None
    version: int = 0
    etag: str | None = None
    ts: int | None = None
    partition_key: str | None = None  # only for lease containers partitioned by /partitionKey

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> Lease:
        stamp = doc.get("timestamp")
        return cls(
            id=doc["id"], token=str(doc.get("LeaseToken") or doc.get("PartitionId") or ""),
            feed_range=doc.get("FeedRange") or {}, owner=doc.get("Owner"),
            continuation=doc.get("ContinuationToken"), properties=dict(doc.get("properties") or {}),
            mode=doc.get("Mode") or MODE_LATEST_VERSION,
            timestamp=parse_timestamp(stamp) if isinstance(stamp, str) and stamp else None,
            version=int(doc.get("version", 0)), etag=doc.get("_etag"), ts=doc.get("_ts"),
            partition_key=doc.get("partitionKey"),
        )

    def to_doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"id": self.id}
        if self.partition_key is not None:
            doc["partitionKey"] = self.partition_key
        doc.update({
            "version": self.version, "LeaseToken": self.token, "FeedRange": self.feed_range,
            "Owner": self.owner, "ContinuationToken": self.continuation, "properties": self.properties,
            "Mode": self.mode, "timestamp": format_timestamp(self.timestamp) if self.timestamp else None,
        })
        return doc

    @property
    def effective_timestamp(self) -> datetime:
        if self.timestamp is not None:
            return self.timestamp
        return datetime.fromtimestamp(self.ts or 0, UTC)

    def is_expired(self, now: datetime, expiration: float) -> bool:
        return not (self.owner or "").strip() or self.effective_timestamp + timedelta(seconds=expiration) < now

    @property
    def continuation_lsn(self) -> int | None:
        return continuation_lsn(self.continuation)


def feed_range(min_epk: str, max_epk: str) -> dict[str, Any]:
    return {"Range": {"min": min_epk, "max": max_epk}}


class LeaseManager:
    """Lease reads and optimistic updates for one processor (prefix) and instance name."""

    def __init__(self, container: ContainerProxy, prefix: str, owner: str, clock: Clock,
                 *, pk_is_partition_key: bool = False) -> None:
        self.container = container
        self.prefix = prefix
        self.owner = owner
        self.clock = clock
        self.pk_is_partition_key = pk_is_partition_key

    def lease_id(self, token: str) -> str:
        return f"{self.prefix}..{token}"

    @property
    def info_id(self) -> str:
        return f"{self.prefix}.info"

    @property
    def lock_id(self) -> str:
        return f"{self.prefix}.lock"

    def _doc(self, doc_id: str, **extra: Any) -> dict[str, Any]:
        doc: dict[str, Any] = {"id": doc_id}
        if self.pk_is_partition_key:
            doc["partitionKey"] = doc_id
        doc.update(extra)
        return doc

    async def all_leases(self) -> list[Lease]:
        docs = await self.container.query_items(
            "SELECT * FROM c WHERE STARTSWITH(c.id, @prefix)",
            parameters=[{"name": "@prefix", "value": f"{self.prefix}.."}])
        return sorted((Lease.from_doc(d) for d in docs), key=lambda lease: lease.id)

    async def read(self, lease_id: str) -> Lease | None:
        try:
            return Lease.from_doc(await self.container.read_item(lease_id, partition_key=lease_id))
        except CosmosResourceNotFoundError:
            return None

    async def create_if_missing(self, token: str, min_epk: str, max_epk: str) -> bool:
        lease_id = self.lease_id(token)
        lease = Lease(id=lease_id, token=token, feed_range=feed_range(min_epk, max_epk),
                      timestamp=self.clock.now(), partition_key=lease_id if self.pk_is_partition_key else None)
        try:
            await self.container.create_item(lease.to_doc())
        except CosmosResourceExistsError:
            return False
        return True

    # -- markers (bootstrap) --------------------------------------------------------------------

    async def is_initialized(self) -> bool:
        try:
            await self.container.read_item(self.info_id, partition_key=self.info_id)
        except CosmosResourceNotFoundError:
            return False
        return True

    async def mark_initialized(self) -> None:
        try:
            await self.container.create_item(self._doc(self.info_id))
        except CosmosResourceExistsError:
            pass

    async def acquire_init_lock(self, ttl: int) -> str | None:
        """Create ``.lock`` (ttl seconds); its etag, or None if another instance holds it."""
        try:
            doc = await self.container.create_item(self._doc(self.lock_id, ttl=ttl))
        except CosmosResourceExistsError:
            return None
        return str(doc["_etag"])

    async def release_init_lock(self, etag: str) -> None:
        try:
            await self.container.delete_item(self.lock_id, partition_key=self.lock_id, etag=etag,
                                             match_condition=MatchConditions.IfNotModified)
        except (CosmosResourceNotFoundError, CosmosAccessConditionFailedError):
            pass

    # -- optimistic updates (7.5) ---------------------------------------------------------------

    async def _update(self, lease: Lease, mutate: Callable[[Lease], None]) -> Lease:
        current = lease
        for _ in range(RETRIES_ON_CONFLICT + 1):
            candidate = copy.deepcopy(current)
            mutate(candidate)  # may raise LeaseLost after a re-read
            candidate.timestamp = self.clock.now()
            try:
                saved = await self.container.replace_item(
                    candidate.id, candidate.to_doc(), etag=current.etag,
                    match_condition=MatchConditions.IfNotModified)
            except CosmosAccessConditionFailedError:
                server = await self.read(lease.id)
                if server is None:
                    raise LeaseLost(f"lease {lease.token} is gone") from None
                current = server
                continue
            except (CosmosResourceNotFoundError, CosmosResourceExistsError):
                raise LeaseLost(f"lease {lease.token} is gone") from None
            return Lease.from_doc(saved)
        raise LeaseLost(f"lease {lease.token}: too many concurrent updates")

    async def acquire(self, lease: Lease) -> Lease:
        observed = lease.owner
        properties = dict(lease.properties)

        def take(server: Lease) -> None:
            if server.owner != observed:
                raise LeaseLost(f"lease {lease.token} was taken by another instance")
            server.owner = self.owner
            server.properties = properties

        return await self._update(lease, take)

    async def renew(self, lease: Lease) -> Lease:
        server = await self.read(lease.id)
        if server is None or server.owner != lease.owner:
            raise LeaseLost(f"lease {lease.token} is no longer owned by this instance")

        def keep(current: Lease) -> None:
            if current.owner != lease.owner:
                raise LeaseLost(f"lease {lease.token} is no longer owned by this instance")

        return await self._update(server, keep)

    async def checkpoint(self, lease: Lease, continuation: str) -> Lease:
        if not continuation:
            raise ValueError("a checkpoint needs a continuation")

        def move(current: Lease) -> None:
            if current.owner != lease.owner:
                raise LeaseLost(f"lease {lease.token} is no longer owned by this instance")
            current.continuation = continuation

        return await self._update(lease, move)

    async def release(self, lease: Lease) -> None:
        server = await self.read(lease.id)
        if server is None:
            return  # deleted (split): nothing to release
        if server.owner != lease.owner:
            raise LeaseLost(f"lease {lease.token} is no longer owned by this instance")

        def free(current: Lease) -> None:
            if current.owner != lease.owner:
                raise LeaseLost(f"lease {lease.token} is no longer owned by this instance")
            current.owner = None

        await self._update(server, free)
