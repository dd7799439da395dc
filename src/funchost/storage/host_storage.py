"""The storage a host hands out: any backend, behind the wrappers written once.

    queues     ->  wake-ups -> fault points -> Azure's rules -> backend
    blobs      ->  Azure's rules -> backend        (blob_api: the whole Blob REST API, the same)
    tables     ->  Azure's rules -> backend
    documents  ->  Azure's rules -> backend

Triggers, bindings, Event Grid, documents, the test harness, app code and the storage REST
endpoints reach storage only through this object (`Runtime.storage`), so every backend gets the
same validation, the same fault points and the same in-process wake-ups. The endpoints address
accounts by name (`for_account`); the change journal names the Blob endpoint being served.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from funchost.clock import Clock
from funchost.runtime.faults import FaultInjector
from funchost.runtime.signals import Signals
from funchost.settings.app_settings import AppSettings
from funchost.settings.connections import StorageConnection
from funchost.storage.backend import StorageBackend, create_backend
from funchost.storage.blob_api import BlobApi
from funchost.storage.blob_api_validation import ValidatingBlobApi
from funchost.storage.blobs import BlobChangeJournal, BlobService
from funchost.storage.document_rules import ValidatingDocumentStore
from funchost.storage.documents import DocumentStore
from funchost.storage.durable import TaskHub
from funchost.storage.eventgrid import EventGridStore
from funchost.storage.eventhubs import EventHubBroker
from funchost.storage.faults import FaultInjectingQueueService
from funchost.storage.invocations import InvocationHistoryStore
from funchost.storage.journal_urls import ServedJournal
from funchost.storage.queues import QueueService
from funchost.storage.secrets import SecretStore
from funchost.storage.servicebus import ServiceBusBroker
from funchost.storage.table_rules import ValidatingTableService
from funchost.storage.tables import TableService
from funchost.storage.validation import ValidatingBlobService, ValidatingQueueService
from funchost.storage.wakeups import WakingQueueService

S = TypeVar("S")
W = TypeVar("W")


class HostStorage:
    """`faults` and `signals` are the host's; without them (the CLI) those wrappers are left out."""

    def __init__(self, backend: StorageBackend, *, faults: FaultInjector | None = None,
                 signals: Signals | None = None) -> None:
        self.backend = backend
        self.kind = backend.kind
        self.faults = faults
        self.signals = signals
        self._wrapped: dict[tuple[int, str], tuple[object, object]] = {}
        self._accounts: dict[str, HostStorage] = {}
        self.blob_origin: str | None = None  # where the Blob endpoint is served, once it is (storage_endpoints)
        attach = getattr(backend, "attach_signals", None)
        if signals is not None and attach is not None:  # a backend that wakes this host for other hosts' writes
            attach(signals)

    def _wrap(self, inner: S, kind: str, wrap: Callable[[S], W]) -> W:
        """One wrapper of each kind per backend service object (the backend caches those per
        account; the embedded one serves `blobs` and `blob_api` with one object)."""
        key = (id(inner), kind)
        entry = self._wrapped.get(key)
        if entry is None or entry[0] is not inner:
            entry = self._wrapped[key] = (inner, wrap(inner))
        return entry[1]  # type: ignore[return-value]

    def connection(self, name: str | None, service: str = "queue") -> StorageConnection:
        return self.backend.connection(name, service)

    def queues(self, connection: str | None = None) -> QueueService:
        return self._wrap(self.backend.queues(connection), "queues", self._wrap_queues)

    def _wrap_queues(self, inner: QueueService) -> QueueService:
        service: QueueService = ValidatingQueueService(inner)
        if self.faults is not None:
            service = FaultInjectingQueueService(service, self.faults)
        if self.signals is not None:
            service = WakingQueueService(service, self.signals)
        return service

    def blobs(self, connection: str | None = None) -> BlobService:
        return self._wrap(self.backend.blobs(connection), "blobs", ValidatingBlobService)

    def blob_changes(self, connection: str | None = None) -> BlobChangeJournal | None:
        journal = self.backend.blob_changes(connection)
        return None if journal is None else ServedJournal(journal, lambda: self.blob_origin)

    def blob_api(self, connection: str | None = None) -> BlobApi:
        return self._wrap(self.backend.blob_api(connection), "blob_api", ValidatingBlobApi)

    def tables(self, connection: str | None = None) -> TableService:
        return self._wrap(self.backend.tables(connection), "tables", ValidatingTableService)

    def for_account(self, account: str) -> HostStorage:
        """This storage behind the same wrappers, every connection resolving to `account`."""
        view = self._accounts.get(account)
        if view is None:
            view = HostStorage(self.backend.for_account(account), faults=self.faults, signals=self.signals)
            self._accounts[account] = view
        return view

    def documents(self, connection: str | None = None) -> DocumentStore:
        return self._wrap(self.backend.documents(connection), "documents", ValidatingDocumentStore)

    def eventgrid_store(self) -> EventGridStore:
        return self.backend.eventgrid_store()

    def servicebus(self, namespace: str) -> ServiceBusBroker:
        return self.backend.servicebus(namespace)

    def eventhubs(self, namespace: str) -> EventHubBroker:
        return self.backend.eventhubs(namespace)

    def task_hub(self, name: str, connection: str | None = None) -> TaskHub:
        return self.backend.task_hub(name, connection)

    def invocation_history(self) -> InvocationHistoryStore:
        return self.backend.invocation_history()

    def secrets(self) -> SecretStore:
        return self.backend.secrets()

    async def aclose(self) -> None:
        self._wrapped.clear()
        self._accounts.clear()
        await self.backend.aclose()


def open_storage(kind: str, data_dir: Path, settings: AppSettings, clock: Clock, *,
                 faults: FaultInjector | None = None, signals: Signals | None = None) -> HostStorage:
    """The backend named `kind` (`backend.BACKEND_MODULES`) behind the host's wrappers."""
    return HostStorage(create_backend(kind, data_dir, settings, clock), faults=faults, signals=signals)
