"""`--storage embedded`: SQLite-backed accounts under ``<data>/storage/<account>/``.

One service object per account and service, created on first use and shared. Event Grid's
durable state lives in ``<data>/eventgrid/``, the embedded Service Bus and Event Hubs brokers in
``<data>/servicebus/`` and ``<data>/eventhubs/``, Durable Functions task hubs in
``<data>/storage/<account>/durable/``.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from funchost.clock import Clock
from funchost.errors import ConfigError
from funchost.settings.app_settings import AppSettings
from funchost.settings.connections import (
    DEFAULT_STORAGE,
    DEVSTORE_ACCOUNT,
    StorageConnection,
    resolve_storage_connection,
)
from funchost.storage.documents import DEFAULT_DOCUMENTS_CONNECTION
from funchost.storage.secrets import FileSecrets
from funchost.storage.sqlite.blobs import SqliteBlobAccount
from funchost.storage.sqlite.documents import SqliteDocumentStore
from funchost.storage.sqlite.durable import SqliteTaskHub
from funchost.storage.sqlite.eventgrid import SqliteEventStore
from funchost.storage.sqlite.eventhubs import SqliteEventHubBroker
from funchost.storage.sqlite.invocations import SqliteInvocationHistory
from funchost.storage.sqlite.queues import SqliteQueueService
from funchost.storage.sqlite.servicebus import SqliteServiceBusBroker
from funchost.storage.sqlite.tables import SqliteTableService

S = TypeVar("S")


class EmbeddedStorage:
    kind = "embedded"

    def __init__(self, data_dir: Path, settings: AppSettings, clock: Clock) -> None:
        self.data_dir = Path(data_dir)
        self.root = self.data_dir / "storage"
        self.settings = settings
        self.clock = clock
        self._services: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()
        self._account: str | None = None  # set on the views of `for_account`

    def connection(self, name: str | None, service: str = "queue") -> StorageConnection:
        if self._account is not None:
            return StorageConnection(name or DEFAULT_STORAGE, self._account)
        try:
            return resolve_storage_connection(name, self.settings, service=service)
        except ConfigError:
            if (name or DEFAULT_STORAGE) == DEFAULT_STORAGE:
                # Embedded storage needs no account: a missing AzureWebJobsStorage behaves like
                # UseDevelopmentStorage=true (documented in docs/deviations.md).
                return StorageConnection(DEFAULT_STORAGE, DEVSTORE_ACCOUNT, "UseDevelopmentStorage=true")
            raise

    def _service(self, kind: str, account: str, factory: Callable[[], S]) -> S:
        key = (kind, account)
        with self._lock:
            if key not in self._services:
                self._services[key] = factory()
            return self._services[key]  # type: ignore[no-any-return]

    def queues(self, connection: str | None = None) -> SqliteQueueService:
        account = self.connection(connection, "queue").account_name
        return self._service("queue", account, lambda: SqliteQueueService(self.root / account, account, self.clock))

    def blobs(self, connection: str | None = None) -> SqliteBlobAccount:
        account = self.connection(connection, "blob").account_name
        return self._service("blob", account, lambda: SqliteBlobAccount(self.root / account, account, self.clock))

    def blob_changes(self, connection: str | None = None) -> SqliteBlobAccount:
        return self.blobs(connection)  # the blob store journals its own changes

    def blob_api(self, connection: str | None = None) -> SqliteBlobAccount:
        return self.blobs(connection)  # one object per account: REST writes land in the same journal

    def tables(self, connection: str | None = None) -> SqliteTableService:
        account = self.connection(connection, "table").account_name
        return self._service("table", account, lambda: SqliteTableService(self.root / account, account, self.clock))

    def for_account(self, account: str) -> EmbeddedStorage:
        """A view sharing this backend's service objects, every connection resolving to `account`."""
        view = copy.copy(self)
        view._account = account
        return view

    def documents(self, connection: str | None = None) -> SqliteDocumentStore:
        name = (connection or "").strip() or DEFAULT_DOCUMENTS_CONNECTION
        return self._service("documents", name, lambda: SqliteDocumentStore(self.root / name, name, self.clock))

    def eventgrid_store(self) -> SqliteEventStore:
        return self._service("eventgrid", "", lambda: SqliteEventStore(self.data_dir / "eventgrid"))

    def servicebus(self, namespace: str) -> SqliteServiceBusBroker:
        """One database per namespace in ``<data>/servicebus/``."""
        return self._service("servicebus", namespace,
                             lambda: SqliteServiceBusBroker(self.data_dir / "servicebus", namespace, self.clock))

    def eventhubs(self, namespace: str) -> SqliteEventHubBroker:
        """One folder per namespace in ``<data>/eventhubs/``."""
        name = namespace.lower()
        return self._service("eventhubs", name,
                             lambda: SqliteEventHubBroker(self.data_dir / "eventhubs" / name, name, self.clock))

    def task_hub(self, name: str, connection: str | None = None) -> SqliteTaskHub:
        """One database per task hub in ``<data>/storage/<account>/durable/`` (the account of the
        connection, as the extension keeps a hub in its storage account)."""
        account = self.connection(connection, "queue").account_name
        path = self.root / account / "durable" / f"{name.lower()}.sqlite"
        return self._service(f"durable:{name.lower()}", account, lambda: SqliteTaskHub(path, name))

    def invocation_history(self) -> SqliteInvocationHistory:
        """``<data>/dashboard/invocations.db``."""
        return self._service("history", "", lambda: SqliteInvocationHistory(self.data_dir / "dashboard"))

    def secrets(self) -> FileSecrets:
        """Files of the data folder (hosts sharing the folder share them)."""
        return FileSecrets(self.data_dir)

    async def aclose(self) -> None:
        if self._account is not None:
            return  # a view: the services are the backend's, closed with it
        with self._lock:
            services = list(self._services.values())
            self._services.clear()
        for service in services:
            await service.aclose()


def open_backend(data_dir: Path, settings: AppSettings, clock: Clock) -> EmbeddedStorage:
    return EmbeddedStorage(data_dir, settings, clock)
