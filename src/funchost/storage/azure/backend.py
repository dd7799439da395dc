"""`--storage azure`: the app's storage connections used as given, through the official SDKs.

One `AzureQueueService` / `AzureBlobService` per resolved connection (setting and endpoint), built
lazily and shared. Documents (the Cosmos DB-like store) exist only in embedded storage.
"""

from __future__ import annotations

import threading
from typing import Any

from funchost.clock import Clock
from funchost.errors import ConfigError
from funchost.settings.app_settings import AppSettings
from funchost.settings.connections import StorageConnection, resolve_storage_connection
from funchost.storage.azure.blobs import AzureBlobService
from funchost.storage.azure.endpoints import Endpoint, endpoint_for
from funchost.storage.azure.queues import AzureQueueService


class AzureStorage:
    kind = "azure"

    def __init__(self, settings: AppSettings, clock: Clock) -> None:
        self.settings = settings
        self.clock = clock  # the service keeps time; kept for symmetry with EmbeddedStorage
        self._services: dict[tuple[str, str, str], Any] = {}
        self._credentials: list[Any] = []
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
        return self._service(connection, "queue", AzureQueueService)  # type: ignore[no-any-return]

    def blobs(self, connection: str | None = None) -> AzureBlobService:
        return self._service(connection, "blob", AzureBlobService)  # type: ignore[no-any-return]

    def documents(self, connection: str | None = None) -> Any:
        raise ConfigError(
            "documents (Cosmos DB bindings and triggers) are only available with embedded storage; "
            "run with --storage embedded",
            path="--storage azure",
        )

    def queues_for_account(self, account: str) -> AzureQueueService:
        """The queue service of an account already reached through some connection."""
        return self._for_account("queue", account)  # type: ignore[no-any-return]

    def _for_account(self, service: str, account: str) -> Any:
        with self._lock:
            for (kind, _, _), svc in self._services.items():
                if kind == service and svc.account_name == account:
                    return svc
        default = self.queues() if service == "queue" else self.blobs()
        if default.account_name == account:
            return default
        raise ConfigError(f"no {service} connection of this app reaches storage account '{account}'")

    async def aclose(self) -> None:
        with self._lock:
            services = list(self._services.values())
            credentials = list(self._credentials)
            self._services.clear()
            self._credentials.clear()
        for service in services:
            await service.aclose()
        for credential in credentials:
            await credential.close()

    def __repr__(self) -> str:
        return "AzureStorage()"
