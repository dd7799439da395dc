"""The storage endpoints as a host service (`registry.HOST_SERVICE_MODULES`).

On with embedded or PostgreSQL storage when the `FUNCHOST_STORAGE_ENDPOINTS` setting says so (`funchost start`
sets it to `on` unless told otherwise; the in-process test harness leaves it off). Requests reach
the accounts through the host's own storage (`HostStorage.for_account`), behind the same wrappers
as triggers and bindings: a message put with an SDK wakes this host's queue listeners through the
wake-up wrapper, and a blob written with an SDK lands in the change journal that Event Grid (and
the blob trigger) read. Found by others with `runtime.services.find(StorageEndpointsService)`.
"""

from __future__ import annotations

import logging

from funchost.runtime.contracts import Runtime
from funchost.storage.blob_api import BlobApi
from funchost.storage.host_storage import HostStorage
from funchost.storage.queues import QueueService
from funchost.storage.tables import TableService
from funchost.storage_endpoints import peer_watch
from funchost.storage_endpoints.accounts import Accounts
from funchost.storage_endpoints.peer import Peer
from funchost.storage_endpoints.peer_watch import PeerWatch
from funchost.storage_endpoints.server import SETTING, StorageEndpoints, data_identity, parse_setting

log = logging.getLogger("funchost.storage")


class HostAccounts:
    """`AccountStorage`: each account of the host's storage, behind the host's wrappers."""

    def __init__(self, storage: HostStorage) -> None:
        self.storage = storage
        # The wrapped services are stable for the storage's lifetime: look each up once.
        self._queues: dict[str, QueueService] = {}
        self._blobs: dict[str, BlobApi] = {}
        self._tables: dict[str, TableService] = {}

    def queues(self, account: str) -> QueueService:
        found = self._queues.get(account)
        if found is None:
            found = self._queues[account] = self.storage.for_account(account).queues()
        return found

    def blobs(self, account: str) -> BlobApi:
        found = self._blobs.get(account)
        if found is None:
            found = self._blobs[account] = self.storage.for_account(account).blob_api()
        return found

    def tables(self, account: str) -> TableService:
        found = self._tables.get(account)
        if found is None:
            found = self._tables[account] = self.storage.for_account(account).tables()
        return found


class StorageEndpointsService:
    """The endpoints of one host; blob change URLs name the Blob endpoint while it is served."""

    def __init__(self, runtime: Runtime, endpoints: StorageEndpoints) -> None:
        self.runtime = runtime
        self.endpoints = endpoints

    async def stop(self) -> None:
        self.runtime.services.withdraw(self)
        self.runtime.storage.blob_origin = None
        await self.endpoints.stop()


async def start(runtime: Runtime) -> StorageEndpointsService | PeerWatch | None:
    peer = getattr(runtime.storage.backend, "peer", None)
    if isinstance(peer, Peer):  # another app's host serves them: peer_storage.PeerStorage
        return await peer_watch.start(runtime, peer)
    settings = parse_setting(runtime.settings.get(SETTING), host=runtime.settings.get(f"{SETTING}_BIND") or "127.0.0.1")
    if settings is None or runtime.storage.kind not in ("embedded", "postgres"):
        return None
    identity = data_identity(runtime.storage.secrets())
    root = runtime.data_dir / "storage"
    endpoints = StorageEndpoints(HostAccounts(runtime.storage), Accounts.from_settings(runtime.settings),
                                 runtime.clock, identity, settings, record_dir=root)
    await endpoints.start()
    service = StorageEndpointsService(runtime, endpoints)
    runtime.storage.blob_origin = endpoints.origin("blob")
    runtime.services.provide(service)
    for line in endpoints.describe():
        log.info(line)
    return service
