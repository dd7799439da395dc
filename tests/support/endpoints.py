"""Funchost's storage endpoints in the test's own event loop, on free ports.

    async with serve_endpoints(tmp_path / "data") as served:
        client = BlobServiceClient.from_connection_string(served.connection_string)

The endpoints reach storage as a host's do: `served.storage` is a `HostStorage` over the embedded
backend (with the host's wrappers), `served.blobs()` / `queues()` / `tables()` an account's
services behind them (to look at the data without REST), `served.woken` the queue wake-ups the
wrappers published, and `served.clock` the clock the endpoints check SAS times against.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Hashable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from funchost.clock import Clock, SystemClock
from funchost.runtime.faults import FaultInjector
from funchost.runtime.signals import Signals
from funchost.settings.app_settings import AppSettings
from funchost.settings.connections import DEVSTORE_ACCOUNT, DEVSTORE_KEY
from funchost.storage.blob_api import BlobApi
from funchost.storage.host_storage import HostStorage, open_storage
from funchost.storage.queues import QueueService
from funchost.storage.tables import TableService
from funchost.storage_endpoints.accounts import Accounts
from funchost.storage_endpoints.server import EndpointSettings, StorageEndpoints, data_identity
from funchost.storage_endpoints.service import HostAccounts


class RecordingSignals(Signals):
    """The host's signals, keeping each queue wake-up as (account, queue)."""

    def __init__(self) -> None:
        super().__init__()
        self.woken: list[tuple[str, str]] = []

    def publish(self, topic: Hashable) -> None:
        if isinstance(topic, tuple) and topic[0] == "queue":
            self.woken.append((topic[1], topic[2]))
        super().publish(topic)


@dataclass
class ServedEndpoints:
    endpoints: StorageEndpoints
    storage: HostStorage
    clock: Clock
    signals: RecordingSignals

    @property
    def woken(self) -> list[tuple[str, str]]:
        return self.signals.woken

    def blobs(self, account: str = DEVSTORE_ACCOUNT) -> BlobApi:
        return self.storage.for_account(account).blob_api()

    def queues(self, account: str = DEVSTORE_ACCOUNT) -> QueueService:
        return self.storage.for_account(account).queues()

    def tables(self, account: str = DEVSTORE_ACCOUNT) -> TableService:
        return self.storage.for_account(account).tables()

    def url(self, service: str, account: str = DEVSTORE_ACCOUNT) -> str:
        return self.endpoints.url(service, account)

    @property
    def connection_string(self) -> str:
        return self.endpoints.connection_string()

    def connection_string_for(self, account: str, key: str = DEVSTORE_KEY) -> str:
        return self.endpoints.connection_string(account, key)


@asynccontextmanager
async def serve_endpoints(data_dir: Path, *, clock: Clock | None = None, accounts: Accounts | None = None,
                          settings: dict[str, str] | None = None, backend: str = "embedded"
                          ) -> AsyncIterator[ServedEndpoints]:
    """`backend` "postgres" serves accounts kept on the server `settings` name (FUNCHOST_POSTGRES)."""
    clock = clock or SystemClock()
    signals = RecordingSignals()
    storage = open_storage(backend, data_dir, AppSettings(settings or {}, environ={}), clock,
                           faults=FaultInjector(), signals=signals)
    endpoints = StorageEndpoints(HostAccounts(storage), accounts or Accounts(), clock,
                                 data_identity(storage.secrets()),
                                 EndpointSettings(ports={"blob": 0, "queue": 0, "table": 0}))
    await endpoints.start()
    storage.blob_origin = endpoints.origin("blob")  # as the host service does
    try:
        yield ServedEndpoints(endpoints, storage, clock, signals)
    finally:
        await endpoints.stop()
        await storage.aclose()
