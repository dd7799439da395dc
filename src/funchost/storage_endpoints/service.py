"""The storage endpoints as a host service: `start(runtime)` at host start, `stop()` at shutdown.

On with embedded storage when the `FUNCHOST_STORAGE_ENDPOINTS` setting says so (`funchost start`
sets it to `on` unless told otherwise; the in-process test harness leaves it off). Requests go to
the host's own storage objects, so a blob written with the SDK raises BlobCreated on the
embedded Event Grid, and a message put with the SDK wakes this host's queue listeners at once.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from funchost.runtime.contracts import Runtime
from funchost.runtime.signals import Signals, queue_topic
from funchost.storage_endpoints.accounts import Accounts
from funchost.storage_endpoints.server import SETTING, StorageEndpoints, data_identity, parse_setting

if TYPE_CHECKING:
    from funchost.storage.blob_api import BlobApi
    from funchost.storage.queues import QueueService
    from funchost.storage.tables import TableService

log = logging.getLogger("funchost.storage")


class BackendStorage:
    """`AccountStorage` over an embedded backend (and the host's wake-ups, when there is a host)."""

    def __init__(self, backend: Any, signals: Signals | None = None) -> None:
        self.backend = backend
        self.signals = signals

    def queues(self, account: str) -> QueueService:
        return self.backend.queues_for_account(account)  # type: ignore[no-any-return]

    def blobs(self, account: str) -> BlobApi:
        return self.backend.blobs_for_account(account)  # type: ignore[no-any-return]

    def tables(self, account: str) -> TableService:
        return self.backend.tables_for_account(account)  # type: ignore[no-any-return]

    def queue_written(self, account: str, queue: str) -> None:
        if self.signals is not None:
            self.signals.publish(queue_topic(account, queue))


async def start(runtime: Runtime) -> StorageEndpoints | None:
    settings = parse_setting(runtime.settings.get(SETTING), host=runtime.settings.get(f"{SETTING}_BIND") or "127.0.0.1")
    if settings is None or getattr(runtime.storage, "kind", "") != "embedded":
        return None
    storage = BackendStorage(runtime.storage, runtime.signals)
    identity = data_identity(runtime.data_dir / "storage")
    endpoints = StorageEndpoints(storage, Accounts.from_settings(runtime.settings), runtime.clock, identity, settings)
    await endpoints.start()
    for line in endpoints.describe():
        log.info(line)
    return endpoints
