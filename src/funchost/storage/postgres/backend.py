"""`--storage postgres`: the ports built on PostgreSQL share their state through the server; the
others still come from the embedded stores of the data folder, as `--storage azure` keeps its
local state (`LOCAL` lists them; the start banner says which are which).

Accounts are addressed by name (`for_account`), as in embedded storage: the storage endpoints of
any host on the same server serve the same accounts.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from funchost.clock import Clock, SystemClock
from funchost.runtime.signals import Signals
from funchost.settings.app_settings import AppSettings
from funchost.settings.connections import StorageConnection
from funchost.settings.postgres import PostgresConfig, postgres_config
from funchost.storage.backend import StorageBackend, create_backend
from funchost.storage.blob_api import BlobApi
from funchost.storage.blobs import BlobChangeJournal
from funchost.storage.document_store import SqlDocumentStore
from funchost.storage.documents import DEFAULT_DOCUMENTS_CONNECTION, DocumentStore
from funchost.storage.durable import TaskHub
from funchost.storage.eventgrid import EventGridStore
from funchost.storage.eventhubs import EventHubBroker
from funchost.storage.eventhubsql.broker import SqlEventHubBroker
from funchost.storage.invocations import InvocationHistoryStore
from funchost.storage.postgres.blobs import PostgresBlobAccount
from funchost.storage.postgres.connect import connect_sync
from funchost.storage.postgres.db import PgDatabase, ServerClock
from funchost.storage.postgres.durable import PostgresTaskHub
from funchost.storage.postgres.notify import Wakeups
from funchost.storage.postgres.queues import PostgresQueueService
from funchost.storage.queues import QueueService
from funchost.storage.secrets import SecretStore
from funchost.storage.servicebus import ServiceBusBroker
from funchost.storage.servicebussql.broker import SqlServiceBusBroker
from funchost.storage.table_store import SqlTableService
from funchost.storage.tables import TableService

T = TypeVar("T")

# Services still kept in the data folder with --storage postgres (what the banner lists as local).
LOCAL: tuple[str, ...] = ()
# The in-process topic kind (`runtime.signals`) of each service whose wake-ups other hosts need
# once the service is on the server (queues wake through their port, `Wakeups.touch`).
RELAYED_TOPICS = {"durable": "durable", "servicebus": "servicebus", "eventhubs": "eventhub", "documents": "documents"}
# Every service a host keeps, by the name LOCAL uses, as the banner names it.
SERVICES = {"queues": "queues", "blobs": "blobs (and timer locks, blob-trigger receipts)", "eventgrid": "Event Grid",
            "keys": "keys", "tables": "tables", "documents": "documents", "durable": "Durable task hubs",
            "servicebus": "Service Bus", "eventhubs": "Event Hubs"}


def describe_services(local: tuple[str, ...] = LOCAL) -> tuple[list[str], list[str]]:
    """(shared on the server, still in the data folder), as the start banner lists them."""
    return ([label for name, label in SERVICES.items() if name not in local],
            [label for name, label in SERVICES.items() if name in local])


class PostgresStorage:
    kind = "postgres"
    local_services = LOCAL

    def __init__(self, data_dir: Path, settings: AppSettings, clock: Clock, config: PostgresConfig) -> None:
        self.data_dir = Path(data_dir)
        self.settings = settings
        self.clock = clock
        self.config = config
        self._embedded: StorageBackend | None = None
        self._lock = threading.Lock()
        self._account: str | None = None  # set on the views of `for_account`
        self._shared: dict[str, Any] = {}  # the server's services, one each (account views share the dict)

    def _service(self, key: str, make: Callable[[], T]) -> T:
        """The shared service `key`, made once. `make` runs outside the lock (it may ask the server
        for its clock); of two threads making it at once, the first stored wins."""
        with self._lock:
            found = self._shared.get(key)
        if found is None:
            made = make()
            with self._lock:
                found = self._shared.setdefault(key, made)
        return found  # type: ignore[no-any-return]

    @property
    def database(self) -> PgDatabase:
        """The server, shared by every port of this backend (and its account views)."""
        return self._service("database", lambda: PgDatabase(self.config))

    def _local(self) -> StorageBackend:
        """The data folder's embedded stores, for the services not on the server yet."""
        with self._lock:
            if self._embedded is None:
                self._embedded = create_backend("embedded", self.data_dir, self.settings, self.clock)
            local = self._embedded
        return local.for_account(self._account) if self._account is not None else local

    def connection(self, name: str | None, service: str = "queue") -> StorageConnection:
        return self._local().connection(name, service)

    def queues(self, connection: str | None = None) -> QueueService:
        account = self.connection(connection, "queue").account_name
        database = self.database
        wakeups = self._wakeups()
        wakeups.start()
        return self._service(f"queues:{account}",
                             lambda: PostgresQueueService(database, account, self.clock, wakeups.touch))

    def _wakeups(self) -> Wakeups:
        return self._service("wakeups", lambda: Wakeups(self.config))

    def attach_signals(self, signals: Signals) -> None:
        """The host's in-process topics: other hosts' writes (LISTEN/NOTIFY) wake its listeners, and
        its own wake-ups of the shared services reach the other hosts."""
        self._wakeups().attach(signals, [kind for service, kind in RELAYED_TOPICS.items()
                                         if service not in self.local_services])

    def blobs(self, connection: str | None = None) -> PostgresBlobAccount:
        account = self.connection(connection, "blob").account_name
        database = self.database
        return self._service(f"blobs:{account}",
                             lambda: PostgresBlobAccount(database, account, self._server_clock(database)))

    def _server_clock(self, database: PgDatabase) -> Clock:
        """Lease expiries and blob times from the server's clock; a ManualClock as given."""
        if not isinstance(self.clock, SystemClock):
            return self.clock
        return self._service("clock", lambda: ServerClock(database))  # one round trip to the server

    def blob_changes(self, connection: str | None = None) -> BlobChangeJournal | None:
        return self.blobs(connection)  # the blob store journals its own changes

    def blob_api(self, connection: str | None = None) -> BlobApi:
        return self.blobs(connection)  # one object per account: REST writes land in the same journal

    def tables(self, connection: str | None = None) -> TableService:
        from funchost.storage.postgres.tables import PostgresTableService

        account = self.connection(connection, "table").account_name
        database = self.database
        return self._service(f"tables:{account}",
                             lambda: PostgresTableService(database, account, self._server_clock(database)))

    def for_account(self, account: str) -> PostgresStorage:
        """A view sharing this backend's services, every storage connection resolving to `account`."""
        view = copy.copy(self)
        view._account = account
        return view

    def documents(self, connection: str | None = None) -> DocumentStore:
        from funchost.storage.postgres.documents import PostgresDocumentStore

        name = (connection or "").strip() or DEFAULT_DOCUMENTS_CONNECTION
        database = self.database
        return self._service(f"documents:{name}",
                             lambda: PostgresDocumentStore(database, name, self._server_clock(database)))

    def eventgrid_store(self) -> EventGridStore:
        from funchost.storage.postgres.eventgrid import PostgresEventStore

        database = self.database
        return self._service("eventgrid", lambda: PostgresEventStore(database, self.clock))

    def servicebus(self, namespace: str) -> ServiceBusBroker:
        from funchost.storage.postgres.servicebus import PostgresServiceBusBroker

        database = self.database
        return self._service(f"servicebus:{namespace}", lambda: PostgresServiceBusBroker(
            database, namespace, self._server_clock(database)))

    def eventhubs(self, namespace: str) -> EventHubBroker:
        from funchost.storage.postgres.eventhubs import PostgresEventHubBroker

        name, database = namespace.lower(), self.database
        return self._service(f"eventhubs:{name}", lambda: PostgresEventHubBroker(
            database, name, self._server_clock(database)))

    def task_hub(self, name: str, connection: str | None = None) -> TaskHub:
        account, database = self.connection(connection, "queue").account_name, self.database
        return self._service(f"durable:{account}:{name.lower()}",
                             lambda: PostgresTaskHub(database, account, name, self.clock))

    def invocation_history(self) -> InvocationHistoryStore:
        return self._local().invocation_history()

    def secrets(self) -> SecretStore:
        from funchost.storage.postgres.secrets import PostgresSecrets

        database = self.database
        return self._service("secrets", lambda: PostgresSecrets(database))

    async def aclose(self) -> None:
        if self._account is not None:
            return  # a view: the services are the backend's, closed with it
        with self._lock:
            local, self._embedded = self._embedded, None
            database = self._shared.pop("database", None)
            services = list(self._shared.values())
            self._shared.clear()
        for service in services:
            if isinstance(service, PostgresBlobAccount | PostgresQueueService | PostgresTaskHub | Wakeups
                          | SqlTableService | SqlDocumentStore | SqlServiceBusBroker | SqlEventHubBroker):
                await service.aclose()
        if local is not None:
            await local.aclose()
        if database is not None:
            await database.aclose()

    def sharing(self) -> tuple[str, list[str], list[str]]:
        """(where the server is, the services shared through it, those still in the data folder),
        for the start banner."""
        shared, local = describe_services(self.local_services)
        return f"PostgreSQL {self.config.describe()}, schema {self.config.schema}", shared, local

    def __repr__(self) -> str:
        return f"PostgresStorage({self.config.describe()}, schema={self.config.schema})"


def open_backend(data_dir: Path, settings: AppSettings, clock: Clock) -> PostgresStorage:
    """The backend, after one connection to the server: a host whose server cannot be reached
    stops at start with a message naming it and where it was configured (never the password)."""
    config = postgres_config(settings)
    connect_sync(config, "start").close()
    return PostgresStorage(data_dir, settings, clock, config)
