"""`--storage azure`: the app's storage connections used as given, through the official SDKs.

One `AzureQueueService` / `AzureBlobService` / `AzureTableService` per resolved connection
(setting and endpoint), built lazily and shared. The whole Blob REST API (`BlobApi`) and accounts
addressed by name are what the embedded storage endpoints serve; with Azure the app's clients
talk to the service itself. Documents (the Cosmos DB-like store) exist only in embedded storage. The
state of this host's Event Grid topics is host-local: it stays in the embedded store under the
data folder, whatever holds the app's queues and blobs; so do Durable Functions task hubs.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from funchost.clock import Clock
from funchost.errors import ConfigError
from funchost.settings.app_settings import AppSettings
from funchost.settings.connections import StorageConnection, resolve_storage_connection
from funchost.storage.azure.blobs import AzureBlobService
from funchost.storage.azure.endpoints import Endpoint, endpoint_for
from funchost.storage.azure.queues import AzureQueueService
from funchost.storage.azure.tables import AzureTableService
from funchost.storage.backend import StorageBackend, create_backend
from funchost.storage.blob_api import BlobApi
from funchost.storage.blobs import BlobChangeJournal
from funchost.storage.documents import DocumentStore
from funchost.storage.durable import TaskHub
from funchost.storage.eventgrid import EventGridStore
from funchost.storage.eventhubs import EventHubBroker
from funchost.storage.invocations import InvocationHistoryStore
from funchost.storage.secrets import SecretStore
from funchost.storage.servicebus import ServiceBusBroker


class AzureStorage:
    kind = "azure"
    client_options: dict[str, Any] = {}  # keyword arguments of every SDK client (retry policy)

    def __init__(self, settings: AppSettings, clock: Clock, data_dir: Path | None = None) -> None:
        self.settings = settings
        self.clock = clock  # the service keeps time; kept for symmetry with EmbeddedStorage
        self.data_dir = data_dir
        self._services: dict[tuple[str, str, str], Any] = {}
        self._credentials: list[Any] = []
        self._local: StorageBackend | None = None
        self._lock = threading.Lock()

    def connection(self, name: str | None, service: str = "queue") -> StorageConnection:
        """Resolve a binding's `connection` as the host does; a missing setting is a ConfigError."""
        return resolve_storage_connection(name, self.settings, service=service)

    def endpoint(self, name: str | None, service: str) -> Endpoint:
        return endpoint_for(self.connection(name, service), service, self.settings)

    def _service(self, name: str | None, service: str, factory: Any) -> Any:
        resolved = self.connection(name, service)
        key = (service, resolved.setting_name, resolved.service_uri or "")
        with self._lock:
            existing = self._services.get(key)
            if existing is not None:
                return existing
            endpoint = endpoint_for(resolved, service, self.settings)
            if endpoint.identity:
                self._credentials.append(endpoint.credential)
            created = self._services[key] = factory(endpoint)
            return created

    def queues(self, connection: str | None = None) -> AzureQueueService:
        return self._service(connection, "queue",  # type: ignore[no-any-return]
                             lambda endpoint: AzureQueueService(endpoint, **self.client_options))

    def blobs(self, connection: str | None = None) -> AzureBlobService:
        return self._service(connection, "blob",  # type: ignore[no-any-return]
                             lambda endpoint: AzureBlobService(endpoint, **self.client_options))

    def blob_changes(self, connection: str | None = None) -> BlobChangeJournal | None:
        return None  # on Azure the account's own Event Grid system topic reports blob changes

    def blob_api(self, connection: str | None = None) -> BlobApi:
        raise _embedded_only()

    def for_account(self, account: str) -> StorageBackend:
        raise _embedded_only()

    def tables(self, connection: str | None = None) -> AzureTableService:
        resolved = self.connection(connection, "table")
        key = ("table", resolved.setting_name, "")
        with self._lock:
            existing = self._services.get(key)
            if existing is None:
                if resolved.connection_string is None:
                    raise ConfigError("Table storage needs a connection string (identity-based connections are "
                                      "not supported for tables)", path=f"app setting '{resolved.setting_name}'")
                existing = self._services[key] = AzureTableService(resolved.connection_string,
                                                                   resolved.account_name, **self.client_options)
            return existing

    def documents(self, connection: str | None = None) -> DocumentStore:
        raise ConfigError(
            "documents (Cosmos DB bindings and triggers) are only available with embedded storage; "
            "run with --storage embedded",
            path="--storage azure",
        )

    def _local_backend(self) -> StorageBackend:
        """The data folder's embedded stores: what Azure Storage does not hold (Event Grid's
        deliveries, the embedded Service Bus and Event Hubs brokers, Durable Functions task hubs)."""
        if self.data_dir is None:
            raise ConfigError("the embedded stores need a data folder", path="--data")
        with self._lock:
            if self._local is None:
                self._local = create_backend("embedded", self.data_dir, self.settings, self.clock)
            return self._local

    def eventgrid_store(self) -> EventGridStore:
        return self._local_backend().eventgrid_store()

    def servicebus(self, namespace: str) -> ServiceBusBroker:
        return self._local_backend().servicebus(namespace)

    def eventhubs(self, namespace: str) -> EventHubBroker:
        return self._local_backend().eventhubs(namespace)

    def task_hub(self, name: str, connection: str | None = None) -> TaskHub:
        return self._local_backend().task_hub(name, connection)

    def invocation_history(self) -> InvocationHistoryStore:
        return self._local_backend().invocation_history()

    def secrets(self) -> SecretStore:
        return self._local_backend().secrets()

    async def aclose(self) -> None:
        with self._lock:
            services = list(self._services.values())
            credentials = list(self._credentials)
            local, self._local = self._local, None
            self._services.clear()
            self._credentials.clear()
        for service in services:
            await service.aclose()
        for credential in credentials:
            await credential.close()
        if local is not None:
            await local.aclose()

    def __repr__(self) -> str:
        return "AzureStorage()"


def _embedded_only() -> ConfigError:
    return ConfigError("the storage endpoints serve embedded storage only; with --storage azure the app's clients "
                       "use the service its connection strings name", path="--storage azure")


def open_backend(data_dir: Path, settings: AppSettings, clock: Clock) -> AzureStorage:
    return AzureStorage(settings, clock, data_dir)
