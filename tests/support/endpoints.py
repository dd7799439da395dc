"""Funchost's storage endpoints in the test's own event loop, on free ports.

    async with serve_endpoints(tmp_path / "data") as served:
        client = BlobServiceClient.from_connection_string(served.connection_string)

`served.storage` is the embedded backend behind the endpoints (to look at the data without
REST), `served.clock` the clock the endpoints check SAS times against (a ManualClock when given).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from funchost.clock import Clock, SystemClock
from funchost.settings.app_settings import AppSettings
from funchost.settings.connections import DEVSTORE_ACCOUNT, DEVSTORE_KEY
from funchost.storage.backend import EmbeddedStorage
from funchost.storage_endpoints.accounts import Accounts
from funchost.storage_endpoints.server import EndpointSettings, StorageEndpoints, data_identity
from funchost.storage_endpoints.service import BackendStorage


@dataclass
class ServedEndpoints:
    endpoints: StorageEndpoints
    storage: EmbeddedStorage
    clock: Clock
    woken: list[tuple[str, str]]

    def url(self, service: str, account: str = DEVSTORE_ACCOUNT) -> str:
        return self.endpoints.url(service, account)

    @property
    def connection_string(self) -> str:
        return self.endpoints.connection_string()

    def connection_string_for(self, account: str, key: str = DEVSTORE_KEY) -> str:
        return self.endpoints.connection_string(account, key)


class _RecordingStorage(BackendStorage):
    def __init__(self, backend: EmbeddedStorage, woken: list[tuple[str, str]]) -> None:
        super().__init__(backend)
        self.woken = woken

    def queue_written(self, account: str, queue: str) -> None:
        self.woken.append((account, queue))


@asynccontextmanager
async def serve_endpoints(data_dir: Path, *, clock: Clock | None = None, accounts: Accounts | None = None,
                          settings: dict[str, str] | None = None) -> AsyncIterator[ServedEndpoints]:
    clock = clock or SystemClock()
    storage = EmbeddedStorage(data_dir, AppSettings(settings or {}, environ={}), clock)
    woken: list[tuple[str, str]] = []
    endpoints = StorageEndpoints(_RecordingStorage(storage, woken), accounts or Accounts(), clock,
                                 data_identity(Path(data_dir) / "storage"),
                                 EndpointSettings(ports={"blob": 0, "queue": 0, "table": 0}))
    await endpoints.start()
    try:
        yield ServedEndpoints(endpoints, storage, clock, woken)
    finally:
        await endpoints.stop()
        await storage.aclose()
