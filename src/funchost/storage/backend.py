"""Choosing a storage backend and mapping connections to accounts.

`--storage embedded` (default): every storage connection maps to an embedded account under
``<data>/storage/<account>/``; `--storage azure`: the connection strings are used as given
through the official SDKs (Azurite or Azure).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from funchost.clock import Clock
from funchost.errors import ConfigError
from funchost.settings.app_settings import AppSettings
from funchost.settings.connections import (
    DEFAULT_STORAGE,
    DEVSTORE_ACCOUNT,
    StorageConnection,
    resolve_storage_connection,
)

if TYPE_CHECKING:
    from funchost.storage.blob_api import BlobApi
    from funchost.storage.blobs import BlobService
    from funchost.storage.queues import QueueService
    from funchost.storage.tables import TableService


class StorageBackend(Protocol):
    kind: str

    def connection(self, name: str | None, service: str = "queue") -> StorageConnection: ...

    def queues(self, connection: str | None = None) -> QueueService: ...

    def blobs(self, connection: str | None = None) -> BlobService: ...

    def documents(self, connection: str | None = None) -> Any: ...

    async def aclose(self) -> None: ...


class EmbeddedStorage:
    """SQLite-backed accounts under `<data_dir>/storage/<account>/`, one service object each."""

    kind = "embedded"

    def __init__(self, data_dir: Path, settings: AppSettings, clock: Clock) -> None:
        self.root = Path(data_dir) / "storage"
        self.settings = settings
        self.clock = clock
        self._services: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()

    def connection(self, name: str | None, service: str = "queue") -> StorageConnection:
        try:
            return resolve_storage_connection(name, self.settings, service=service)
        except ConfigError:
            if (name or DEFAULT_STORAGE) == DEFAULT_STORAGE:
                # Embedded storage needs no account: a missing AzureWebJobsStorage behaves like
                # UseDevelopmentStorage=true (documented in docs/deviations.md).
                return StorageConnection(DEFAULT_STORAGE, DEVSTORE_ACCOUNT, "UseDevelopmentStorage=true")
            raise

    def account_dir(self, account: str) -> Path:
        return self.root / account

    def _service(self, kind: str, account: str, factory: Any) -> Any:
        key = (kind, account)
        with self._lock:
            if key not in self._services:
                self._services[key] = factory(self.account_dir(account), account, self.clock)
            return self._services[key]

    def queues(self, connection: str | None = None) -> QueueService:
        from funchost.storage.sqlite.queues import SqliteQueueService

        account = self.connection(connection, "queue").account_name
        return self._service("queue", account, SqliteQueueService)  # type: ignore[no-any-return]

    def blobs(self, connection: str | None = None) -> BlobService:
        return self.blobs_for_account(self.connection(connection, "blob").account_name)

    def blobs_for_account(self, account: str) -> BlobApi:
        from funchost.storage.sqlite.blob_account import SqliteBlobAccount

        return self._service("blob", account, SqliteBlobAccount)  # type: ignore[no-any-return]

    def tables_for_account(self, account: str) -> TableService:
        from funchost.storage.sqlite.tables import SqliteTableService

        return self._service("table", account, SqliteTableService)  # type: ignore[no-any-return]

    def documents(self, connection: str | None = None) -> Any:
        from funchost.storage.sqlite.documents import SqliteDocumentStore

        name = (connection or "").strip() or "CosmosDB"
        return self._service("documents", name, SqliteDocumentStore)

    def queues_for_account(self, account: str) -> QueueService:
        from funchost.storage.sqlite.queues import SqliteQueueService

        return self._service("queue", account, SqliteQueueService)  # type: ignore[no-any-return]

    async def aclose(self) -> None:
        for service in list(self._services.values()):
            close = getattr(service, "aclose", None)
            if close is not None:
                await close()
        self._services.clear()


def create_backend(kind: str, data_dir: Path, settings: AppSettings, clock: Clock) -> StorageBackend:
    if kind == "embedded":
        return EmbeddedStorage(data_dir, settings, clock)
    if kind == "azure":
        from funchost.storage.azure.backend import AzureStorage

        return AzureStorage(settings, clock)
    raise ConfigError(f"unknown storage backend '{kind}' (expected 'embedded' or 'azure')", path="--storage")
