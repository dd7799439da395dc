"""Documents (Cosmos DB-like): clients with the `azure-cosmos` method names, errors, estimator.

    from funchost.documents import connect
    container = connect("CosmosDB").get_database_client("db").get_container_client("items")
    container.upsert_item({"id": "1", "pk": "a"})

`connect(connection)` opens the document store of an app: the running host's store when called
from a function, else the embedded store under ``$FUNCHOST_DATA_DIR`` or ``./.funchost``.
"""

from __future__ import annotations

import os
from pathlib import Path

from funchost.documents._base import MatchConditions, PartitionKey
from funchost.documents.client import ContainerProxy, CosmosClient, DatabaseProxy
from funchost.documents.exceptions import (
    CosmosAccessConditionFailedError,
    CosmosBadRequestError,
    CosmosHttpResponseError,
    CosmosResourceExistsError,
    CosmosResourceNotFoundError,
)
from funchost.runtime.current import get_current
from funchost.storage.documents import DocumentStore

DEFAULT_CONNECTION = "CosmosDB"

__all__ = [
    "ContainerProxy", "CosmosAccessConditionFailedError", "CosmosBadRequestError", "CosmosClient",
    "CosmosHttpResponseError", "CosmosResourceExistsError", "CosmosResourceNotFoundError", "DatabaseProxy",
    "MatchConditions", "PartitionKey", "connect",
]


def store_for(connection: str | None = None, data_dir: Path | None = None) -> DocumentStore:
    runtime = get_current()
    if data_dir is None and runtime is not None:
        return runtime.storage.documents(connection or DEFAULT_CONNECTION)
    from funchost.clock import SystemClock
    from funchost.settings.app_settings import AppSettings
    from funchost.storage.host_storage import open_storage

    root = Path(data_dir or os.environ.get("FUNCHOST_DATA_DIR") or Path.cwd() / ".funchost")
    storage = open_storage("embedded", root, AppSettings({}, environ={}), SystemClock())
    return storage.documents((connection or "").strip() or DEFAULT_CONNECTION)


def connect(connection: str | None = None, *, data_dir: Path | str | None = None) -> CosmosClient:
    return CosmosClient(store_for(connection, Path(data_dir) if data_dir else None))
