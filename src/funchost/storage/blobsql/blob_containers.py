"""Container operations of the embedded Blob API: properties, metadata, public access, stored
access policies, leases, listing (a mixin of `SqlBlobAccount`, which owns the database)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from funchost.clock import Clock
from funchost.errors import (
    ContainerAlreadyExists,
    ContainerNotFound,
    LeaseConflict,
    PreconditionFailed,
    StorageError,
)
from funchost.storage.blob_api import ContainerProperties, SignedIdentifier
from funchost.storage.blob_rules import canonical_lease_id
from funchost.storage.blobsql import blob_leases as leases
from funchost.storage.blobsql.blob_extras import (
    container_lease,
    container_properties,
    container_row,
    save_container,
)
from funchost.storage.blobsql.blob_leases import Lease
from funchost.storage.blobsql.blob_rows import new_etag
from funchost.storage.sqlconn import Conn, StoreDatabase


def _container_code(exc: StorageError) -> StorageError:
    """The lease rules of blob writes, with the container variants of their codes."""
    exc.code = exc.code.replace("BlobOperation", "ContainerOperation")
    return exc


class ContainerOperations:
    _db: StoreDatabase
    clock: Clock
    delete_container: Callable[[str], Awaitable[None]]  # the store's own, which also forgets the blobs

    def _now(self) -> tuple[Any, float]:
        now = self.clock.now()
        return now, now.timestamp()

    async def create_container_with(self, name: str, *, metadata: Mapping[str, str],
                                    public_access: str | None) -> ContainerProperties:
        meta = dict(metadata)
        now_dt, now = self._now()

        def run(conn: Conn) -> ContainerProperties:
            if conn.execute("INSERT INTO containers(name, versioning, created) VALUES (?, 0, ?) "
                            "ON CONFLICT DO NOTHING",
                            (name, now)).rowcount == 0:
                raise ContainerAlreadyExists(f"container '{name}' already exists")
            conn.execute("DELETE FROM container_props WHERE name = ?", (name,))
            save_container(conn, name, {"etag": new_etag(conn, now_dt), "last_modified": now,
                                        "metadata": json.dumps(meta), "public_access": public_access})
            return self._container(conn, name, now)

        return await self._db.write(run)

    def _container(self, conn: Conn, name: str, now: float) -> ContainerProperties:
        row = container_row(conn, name)
        if row is None:
            raise ContainerNotFound(f"container '{name}' does not exist")
        return container_properties(row, now)

    def _container_write(self, conn: Conn, name: str, lease_id: str | None, now: float) -> Lease:
        row = container_row(conn, name)
        if row is None:
            raise ContainerNotFound(f"container '{name}' does not exist")
        try:
            return leases.check_write(container_lease(row), lease_id, now)
        except StorageError as exc:
            raise _container_code(exc) from None

    async def get_container_properties(self, name: str, *, lease_id: str | None = None) -> ContainerProperties:
        _, now = self._now()

        def run(conn: Conn) -> ContainerProperties:
            props = self._container(conn, name, now)
            if lease_id is not None and props.lease_state in ("leased", "breaking"):
                current = container_lease(container_row(conn, name))  # type: ignore[arg-type]
                if current.lease_id != canonical_lease_id(lease_id):
                    raise PreconditionFailed("the lease id does not match", code="LeaseIdMismatchWithContainerOperation")
            return props

        return await self._db.read(run)

    async def set_container_metadata(self, name: str, metadata: Mapping[str, str], *,
                                     lease_id: str | None = None) -> ContainerProperties:
        meta = dict(metadata)
        return await self._update_container(name, lease_id, lambda conn, now_dt: {
            "metadata": json.dumps(meta), "etag": new_etag(conn, now_dt)})

    async def get_container_acl(self, name: str, *, lease_id: str | None = None
                                ) -> tuple[ContainerProperties, list[SignedIdentifier]]:
        props = await self.get_container_properties(name, lease_id=lease_id)
        row = await self._db.read(lambda c: container_row(c, name))
        items = json.loads(row["acl"] or "[]") if row is not None else []
        return props, [SignedIdentifier(**item) for item in items]

    async def set_container_acl(self, name: str, public_access: str | None, identifiers: Sequence[SignedIdentifier],
                                *, lease_id: str | None = None) -> ContainerProperties:
        acl = json.dumps([vars(i) for i in identifiers])
        return await self._update_container(name, lease_id, lambda conn, now_dt: {
            "public_access": public_access, "acl": acl, "etag": new_etag(conn, now_dt)})

    async def _update_container(self, name: str, lease_id: str | None, values: Any) -> ContainerProperties:
        now_dt, now = self._now()

        def run(conn: Conn) -> ContainerProperties:
            self._container_write(conn, name, lease_id, now)
            save_container(conn, name, {**values(conn, now_dt), "last_modified": now})
            return self._container(conn, name, now)

        return await self._db.write(run)

    async def delete_container_with(self, name: str, *, lease_id: str | None = None) -> None:
        _, now = self._now()
        await self._db.write(lambda conn: self._container_write(conn, name, lease_id, now))
        await self.delete_container(name)

    async def list_container_properties(self, prefix: str, marker: str, max_results: int
                                        ) -> tuple[list[ContainerProperties], str | None]:
        _, now = self._now()
        start = max(prefix, marker)

        def run(conn: Conn) -> tuple[list[ContainerProperties], str | None]:
            names = [r[0] for r in conn.execute(
                "SELECT name FROM containers WHERE name >= ? AND substr(name, 1, ?) = ? ORDER BY name LIMIT ?",
                (start, len(prefix), prefix, max_results + 1))]
            items = [self._container(conn, n, now) for n in names[:max_results]]
            return items, names[max_results] if len(names) > max_results else None

        return await self._db.read(run)

    async def container_lease(self, name: str, action: str, *, lease_id: str | None = None,
                              proposed_id: str | None = None, duration: int | None = None,
                              break_period: int | None = None) -> tuple[ContainerProperties, str | None, int]:
        _, now = self._now()

        def run(conn: Conn) -> tuple[ContainerProperties, str | None, int]:
            row = container_row(conn, name)
            if row is None:
                raise ContainerNotFound(f"container '{name}' does not exist")
            new, remaining = lease_action(container_lease(row), action, lease_id, proposed_id, duration,
                                          break_period, now)
            save_container(conn, name, {"lease_state": new.state, "lease_id": new.lease_id,
                                        "lease_duration": new.duration, "lease_expires": new.expires,
                                        "lease_break_at": new.break_at})
            return self._container(conn, name, now), new.lease_id, remaining

        return await self._db.write(run)


def lease_action(current: Lease, action: str, lease_id: str | None, proposed_id: str | None,
                 duration: int | None, break_period: int | None, now: float) -> tuple[Lease, int]:
    """One Lease Blob / Lease Container action on the state machine of blob_leases (the action
    and its arguments passed `blob_rules.check_lease_action`)."""
    if action == "acquire":
        return leases.acquire(current, duration if duration is not None else -1, proposed_id, now), 0
    if action == "break":
        return leases.break_(current, break_period, now)
    given = lease_id or ""
    if action == "renew":
        return leases.renew(current, given, now), 0
    if action == "release":
        return leases.release(current, given, now), 0
    proposed = canonical_lease_id(proposed_id or "")  # action "change"
    effective = current.effective(now)
    if effective.state != "leased":
        raise LeaseConflict("there is currently no lease", code="LeaseNotPresentWithLeaseOperation")
    if effective.lease_id not in (canonical_lease_id(given), proposed):
        raise LeaseConflict("the lease id does not match", code="LeaseIdMismatchWithLeaseOperation")
    return Lease("leased", proposed, current.duration, current.expires), 0
