"""Storage backends: what one implements, and the registry that picks one by name.

A backend hands out one object per service and connection, each implementing that service's
Protocol (the ports: `queues.QueueService`, `blobs.BlobService`, `blobs.BlobChangeJournal`,
`blob_api.BlobApi`, `tables.TableService`, `documents.DocumentStore`, `eventgrid.EventGridStore`,
`durable.TaskHub`, ...). The host never uses a backend directly:
`host_storage.HostStorage` puts the wrappers written once (Azure's argument rules, fault points,
in-process wake-ups) in front of it.

`--storage embedded` (default): every storage connection maps to an embedded account under
``<data>/storage/<account>/``; `--storage azure`: the connection strings are used as given
through the official SDKs (Azurite or Azure). A new backend is a package
``funchost/storage/<name>/`` whose ``backend`` module has `open_backend`, plus one line in
`BACKEND_MODULES`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, cast

from funchost.clock import Clock
from funchost.errors import ConfigError
from funchost.settings.app_settings import AppSettings
from funchost.settings.connections import StorageConnection
from funchost.storage.blob_api import BlobApi
from funchost.storage.blobs import BlobChangeJournal, BlobService
from funchost.storage.documents import DocumentStore
from funchost.storage.durable import TaskHub
from funchost.storage.eventgrid import EventGridStore
from funchost.storage.eventhubs import EventHubBroker
from funchost.storage.invocations import InvocationHistoryStore
from funchost.storage.queues import QueueService
from funchost.storage.secrets import SecretStore
from funchost.storage.servicebus import ServiceBusBroker
from funchost.storage.tables import TableService

BACKEND_MODULES: dict[str, str] = {
    "embedded": "funchost.storage.sqlite.backend",
    "azure": "funchost.storage.azure.backend",
    "postgres": "funchost.storage.postgres.backend",
}


class StorageBackend(Protocol):
    kind: str

    def connection(self, name: str | None, service: str = "queue") -> StorageConnection:
        """Resolve a binding's `connection` as the host does (ConfigError when it cannot)."""

    def queues(self, connection: str | None = None) -> QueueService: ...

    def blobs(self, connection: str | None = None) -> BlobService: ...

    def blob_changes(self, connection: str | None = None) -> BlobChangeJournal | None:
        """The account's change journal; None where the backend keeps none (Azure)."""

    def blob_api(self, connection: str | None = None) -> BlobApi:
        """The account's whole Blob service as the REST API exposes it (what the storage endpoints
        serve); ConfigError where a backend offers only `BlobService` (azure)."""

    def tables(self, connection: str | None = None) -> TableService: ...

    def for_account(self, account: str) -> StorageBackend:
        """This storage with every storage connection resolving to `account`: how the storage
        endpoints reach the account a request's URL names. The view shares the backend's service
        objects (close the backend, not the view); ConfigError where accounts cannot be addressed
        by name (azure: the connection strings say where the accounts are)."""

    def documents(self, connection: str | None = None) -> DocumentStore: ...

    def eventgrid_store(self) -> EventGridStore:
        """The durable state of this host's Event Grid topics and deliveries."""

    def servicebus(self, namespace: str) -> ServiceBusBroker:
        """The embedded Service Bus namespace of the data folder (whatever the storage backend)."""

    def eventhubs(self, namespace: str) -> EventHubBroker:
        """The embedded Event Hubs namespace of the data folder (whatever the storage backend)."""

    def task_hub(self, name: str, connection: str | None = None) -> TaskHub:
        """The Durable Functions task hub `name` (case-insensitive) of the connection's account, in
        the data folder (whatever the storage backend)."""

    def invocation_history(self) -> InvocationHistoryStore:
        """The dashboard's invocation history, kept in the data folder (whatever the backend)."""

    def secrets(self) -> SecretStore:
        """Keys and identities all hosts of the deployment share (`funchost.storage.secrets`)."""

    async def aclose(self) -> None: ...


BackendFactory = Callable[[Path, AppSettings, Clock], StorageBackend]


def create_backend(kind: str, data_dir: Path, settings: AppSettings, clock: Clock) -> StorageBackend:
    module = BACKEND_MODULES.get(kind)
    if module is None:
        expected = " or ".join(f"'{k}'" for k in BACKEND_MODULES)
        raise ConfigError(f"unknown storage backend '{kind}' (expected {expected})", path="--storage")
    factory = cast(BackendFactory, importlib.import_module(module).open_backend)
    return factory(Path(data_dir), settings, clock)
