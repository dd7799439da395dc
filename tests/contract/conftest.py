"""One contract suite per port, every backend (style principle 5).

`storage_backend` is parametrized over the backends, each opened as the host opens it
(`open_storage`: Azure's argument rules, fault points and wake-ups in front of the backend);
each contract test takes `queue_service`, `blob_service`, `document_store` or `eventgrid_store`
and must pass on every backend that offers that service. Where a backend (Azurite) is known to differ from
Azure, the test calls `known_deviation(backend, reason)` which records it with its reason
(reported in the test summary) instead of silently skipping.

The "azurite" backend is `AzureStorage` (official SDKs) against the session's Azurite server
(`tests/support/azurite_fixtures.py`); queues and containers a test creates there are deleted
after it, so fixed names in tests do not leak from one test into the next.

The "rest" backend is the azure backend (official SDKs), opened as the host opens it, against
funchost's own storage endpoints (`funchost.storage_endpoints`) over a fresh embedded store: the
ports' contracts through the REST layer; "rest-postgres" is the same with the endpoints serving
accounts kept on PostgreSQL (`--storage postgres`). (What the endpoints answer to arguments the client-side
rules would stop is tested in `tests/unit/storage_endpoints/`.) It is not Azurite, so
`known_deviation` does not apply to it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.azurite_fixtures import ensure_registered
from tests.support.endpoints import serve_endpoints

from funchost.clock import ManualClock, SystemClock
from funchost.runtime.faults import FaultInjector
from funchost.runtime.signals import Signals
from funchost.settings.app_settings import AppSettings
from funchost.storage.host_storage import HostStorage, open_storage

BACKENDS = [
    "embedded",
    "rest",
    pytest.param("rest-postgres", marks=pytest.mark.postgres),
    pytest.param("azurite", marks=pytest.mark.azurite),
    pytest.param("postgres", marks=pytest.mark.postgres),
]
# Backends with a document store and an Event Grid store of their own, opened on a ManualClock
# (the contracts move time: TTLs, leases). `--storage azure` has neither of its own.
LOCAL_STATE_BACKENDS = ["embedded", pytest.param("postgres", marks=pytest.mark.postgres)]


def open_for_test(kind: str, data_dir: Path, settings: AppSettings, clock: object) -> HostStorage:
    return open_storage(kind, data_dir, settings, clock, faults=FaultInjector(), signals=Signals())  # type: ignore[arg-type]


def backend_settings(kind: str, request: pytest.FixtureRequest) -> AppSettings:
    """The settings a backend is opened with: for "postgres", the session's server and a fresh schema."""
    if kind != "postgres":
        return AppSettings({}, environ={})
    dsn = request.getfixturevalue("postgres_dsn")
    schema = request.getfixturevalue("postgres_schema")
    return AppSettings({"FUNCHOST_POSTGRES": dsn, "FUNCHOST_POSTGRES_SCHEMA": schema}, environ={})


def served_backend(kind: str, request: pytest.FixtureRequest) -> dict[str, Any]:
    """What the storage endpoints of a "rest" backend serve: the embedded store, or for
    "rest-postgres" accounts kept on the session's PostgreSQL server."""
    if kind != "rest-postgres":
        return {}
    return {"backend": "postgres", "settings": dict(backend_settings("postgres", request))}


def pytest_configure(config: pytest.Config) -> None:
    ensure_registered(config)  # the azurite fixture + deviation summary, unless tests/conftest.py has it


@pytest.fixture(params=BACKENDS)
def backend_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def storage_backend(
    backend_name: str, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[object]:
    if backend_name in ("embedded", "postgres"):
        settings = backend_settings(backend_name, request)
        backend = open_for_test(backend_name, tmp_path / "data", settings, SystemClock())
        yield backend
        await backend.aclose()
    elif backend_name in ("rest", "rest-postgres"):
        async with serve_endpoints(tmp_path / "data", **served_backend(backend_name, request)) as served:
            settings = AppSettings({"AzureWebJobsStorage": served.connection_string}, environ={})
            rest = open_for_test("azure", tmp_path / "client", settings, SystemClock())
            rest.served_by_funchost = True  # type: ignore[attr-defined]
            yield rest
            await rest.aclose()
    elif backend_name == "azurite":
        server = request.getfixturevalue("azurite")
        settings = AppSettings({"AzureWebJobsStorage": server.connection_string}, environ={})
        backend = open_for_test("azure", tmp_path / "data", settings, SystemClock())
        queues, blobs = backend.queues(), backend.blobs()
        before_queues, before_containers = set(await queues.list_queues()), set(await blobs.list_containers())
        yield backend
        for name in set(await queues.list_queues()) - before_queues:
            await queues.delete_queue(name)
        for name in set(await blobs.list_containers()) - before_containers:
            await blobs.delete_container(name)
        await backend.aclose()
    else:
        raise pytest.UsageError(f"unknown backend {backend_name}")


def _marked(storage_backend, service):  # type: ignore[no-untyped-def]
    if getattr(storage_backend, "served_by_funchost", False):
        service.served_by_funchost = True  # what known_deviation() looks at: not Azurite
    return service


@pytest.fixture
def queue_service(storage_backend):  # type: ignore[no-untyped-def]
    return _marked(storage_backend, storage_backend.queues())


@pytest.fixture
def blob_service(storage_backend):  # type: ignore[no-untyped-def]
    return _marked(storage_backend, storage_backend.blobs())


@pytest.fixture
async def table_service(backend_name: str, tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[object]:
    """The Table port: embedded SQLite (as the host opens it), the SDK through funchost's
    endpoints, the SDK on Azurite."""
    from funchost.storage.azure.tables import AzureTableService

    if backend_name in ("embedded", "postgres"):
        settings = backend_settings(backend_name, request)
        backend = open_for_test(backend_name, tmp_path / "data", settings, SystemClock())
        yield backend.tables()
        await backend.aclose()
    elif backend_name in ("rest", "rest-postgres"):
        async with serve_endpoints(tmp_path / "data", **served_backend(backend_name, request)) as served:
            service = AzureTableService(served.connection_string, "devstoreaccount1")
            service.served_by_funchost = True  # type: ignore[attr-defined]
            yield service
            await service.aclose()
    else:
        server = request.getfixturevalue("azurite")
        if server.table_endpoint is None:
            pytest.fail("the Azurite named by AZURITE_*_ENDPOINT has no table endpoint (set AZURITE_TABLE_ENDPOINT)")
        service = AzureTableService(server.connection_string, server.account_name)
        before = set((await service.list_tables())[0])
        yield service
        for name in set((await service.list_tables())[0]) - before:
            await service.delete_table(name)
        await service.aclose()


@pytest.fixture(params=LOCAL_STATE_BACKENDS)
def local_backend_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def manual_clock() -> ManualClock:
    from datetime import UTC, datetime

    return ManualClock(datetime(2024, 5, 1, 12, 0, tzinfo=UTC))


@pytest.fixture
async def local_storage(local_backend_name: str, tmp_path: Path, manual_clock: ManualClock,
                        request: pytest.FixtureRequest) -> AsyncIterator[HostStorage]:
    settings = backend_settings(local_backend_name, request)
    storage = open_for_test(local_backend_name, tmp_path / "data", settings, manual_clock)
    yield storage
    await storage.aclose()


@pytest.fixture
def document_store(local_storage: HostStorage):  # type: ignore[no-untyped-def]
    return local_storage.documents("CosmosDB")


@pytest.fixture
def eventgrid_store(local_storage: HostStorage):  # type: ignore[no-untyped-def]
    return local_storage.eventgrid_store()
