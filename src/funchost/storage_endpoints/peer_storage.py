"""`--storage azure` against the endpoints of another app's host (`peer.py`).

Each connection keeps its account: `UseDevelopmentStorage=true` (or no AzureWebJobsStorage, as
with embedded storage) is `devstoreaccount1` with the development key; `AccountName=x;AccountKey=k`
is account `x` signed with `k` (the serving host must serve `x`: an `AccountName=x;AccountKey=k`
connection string among its own app settings, or `FUNCHOST_STORAGE_ACCOUNTS`, as Azurite needs
`AZURITE_ACCOUNTS`). Documents stay in this host's data folder (Azurite holds none either).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from funchost.clock import Clock
from funchost.errors import ConfigError
from funchost.settings.app_settings import AppSettings
from funchost.settings.connections import (
    DEFAULT_STORAGE,
    DEVSTORE_ACCOUNT,
    DEVSTORE_KEY,
    StorageConnection,
    parse_connection_string,
    resolve_storage_connection,
)
from funchost.storage.azure.backend import AzureStorage
from funchost.storage.documents import DocumentStore
from funchost.storage_endpoints.peer import Peer
from funchost.storage_endpoints.server import SERVICES


class PeerStorage(AzureStorage):
    """`--storage azure` with every storage connection pointed at the peer's endpoints; `peer` is
    how the storage endpoints service recognises it."""

    # Endpoints on this machine: a refused connection means the serving host is away, and the
    # listeners' own back-off waits for it. The SDKs' default (3 retries from 15 s, with jitter)
    # would hold a poll, and a stop, for a minute. One immediate retry covers a dropped connection.
    client_options: dict[str, Any] = {"retry_total": 1, "initial_backoff": 0, "increment_base": 1,
                                      "random_jitter_range": 0, "retry_backoff_factor": 0}

    def __init__(self, peer: Peer, settings: AppSettings, clock: Clock, data_dir: Path) -> None:
        super().__init__(settings, clock, data_dir)
        self.peer = peer

    def connection(self, name: str | None, service: str = "queue") -> StorageConnection:
        try:
            resolved = resolve_storage_connection(name, self.settings, service=service)
        except ConfigError:
            if (name or DEFAULT_STORAGE) != DEFAULT_STORAGE:
                raise
            resolved = StorageConnection(DEFAULT_STORAGE, DEVSTORE_ACCOUNT, "UseDevelopmentStorage=true")
        account = resolved.account_name
        key = DEVSTORE_KEY if account == DEVSTORE_ACCOUNT else _key_of(resolved.connection_string)
        endpoints = "".join(f"{s.capitalize()}Endpoint={self.peer.url(s, account)};" for s in SERVICES)
        signed = f"AccountKey={key};" if key else ""
        value = f"DefaultEndpointsProtocol=http;AccountName={account};{signed}{endpoints}"
        return StorageConnection(resolved.setting_name, account, connection_string=value)

    def documents(self, connection: str | None = None) -> DocumentStore:
        return self._local_backend().documents(connection)

    def __repr__(self) -> str:
        return f"PeerStorage({self.peer.describe()})"


def _key_of(connection_string: str | None) -> str | None:
    if connection_string is None:
        return None
    parts = {k.lower(): v for k, v in parse_connection_string(connection_string).items()}
    return parts.get("accountkey")


