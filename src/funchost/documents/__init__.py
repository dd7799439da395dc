"""Documents (Cosmos DB-like): clients with the `azure-cosmos` method names, errors, estimator.

    from funchost.documents import connect
    container = connect("CosmosDB").get_database_client("db").get_container_client("items")
    container.upsert_item({"id": "1", "pk": "a"})

`connect(connection)` opens the embedded store of an app: the running host's store when called
from a function, else ``$FUNCHOST_DATA_DIR`` or ``./.funchost``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from funchost.documents._base import MatchConditions, PartitionKey
from funchost.documents.client import ContainerProxy, CosmosClient, DatabaseProxy
from funchost.documents.exceptions import (
    CosmosAccessConditionFailedError,
    CosmosBadRequestError,
    CosmosHttpResponseError,
    CosmosResourceExistsError,
    CosmosResourceNotFoundError,
)

DEFAULT_CONNECTION = "CosmosDB"
_running_backend: Any = None

__all__ = [
    "ContainerProxy", "CosmosAccessConditionFailedError", "CosmosBadRequestError", "CosmosClient",
    "CosmosHttpResponseError", "CosmosResourceExistsError", "CosmosResourceNotFoundError", "DatabaseProxy",
    "MatchConditions", "PartitionKey", "connect", "use_backend",
]


def use_backend(backend: Any) -> None:
    """Called by the host's Cosmos DB plug-ins so `connect()` in user code finds its storage."""
    global _running_backend
    _running_backend = backend


def store_for(connection: str | None = None, data_dir: Path | None = None) -> Any:
    if data_dir is None and _running_backend is not None:
        return _running_backend.documents(connection or DEFAULT_CONNECTION)
    from funchost.clock import SystemClock
    from funchost.storage.sqlite.documents import SqliteDocumentStore

    root = Path(data_dir or os.environ.get("FUNCHOST_DATA_DIR") or Path.cwd() / ".funchost")
    name = (connection or "").strip() or DEFAULT_CONNECTION
    return SqliteDocumentStore(root / "storage" / name, name, SystemClock())


def connect(connection: str | None = None, *, data_dir: Path | str | None = None) -> CosmosClient:
    return CosmosClient(store_for(connection, Path(data_dir) if data_dir else None))
