"""Where an SDK-typed blob parameter's client connects, checked against the embedded store.

The clients of ``azurefunctions-extensions-bindings-blob`` are built from the connection
setting's value and talk to storage themselves. On Azure Storage and Azurite that is the store the
host uses; the embedded store is reachable only through its storage endpoints
(docs/storage-endpoints.md). When the setting points where nothing of this host answers (the
endpoints are off, or served on other ports than the connection string names) every call of the
client would fail with a connection error at invocation time, so the host says why once, when the
function starts (its trigger) or first binds (a blob input).
"""

from __future__ import annotations

import logging

from funchost.errors import ConfigError
from funchost.indexing.spec import FunctionSpec
from funchost.invocation import deferred
from funchost.runtime.contracts import Runtime
from funchost.triggers.blob.urls import blob_service_url

log = logging.getLogger("funchost.blobs")


class _Warned:
    """The functions already warned about, one set per host (in `runtime.services`)."""

    def __init__(self) -> None:
        self.functions: set[str] = set()


def unreachable_reason(function: FunctionSpec, runtime: Runtime) -> str | None:
    """Why the function's SDK clients cannot reach the embedded store, or None when they can (or
    the storage is not embedded, or the function has no SDK-typed blob parameter)."""
    storage = runtime.storage
    if storage.kind != "embedded":
        return None
    for binding in function.bindings:
        if not binding.type.lower().startswith("blob") or not deferred.is_deferred(function, binding.name):
            continue
        setting = str(binding.get("connection") or "").strip() or "AzureWebJobsStorage"
        try:
            connection = storage.connection(setting, "blob")
        except ConfigError:
            return None  # reported at load already
        if connection.connection_string is None:
            continue  # identity-based: an Azure endpoint, not the embedded store
        target = blob_service_url(connection, "azure")  # where the SDK resolves the connection string
        served = storage.blob_origin  # set while the storage endpoints are served
        if served is None:
            return (f"its SDK-type blob parameter '{binding.name}' connects to {target} (setting '{setting}'), "
                    "but this host serves no storage endpoints (FUNCHOST_STORAGE_ENDPOINTS is off), so its "
                    "storage calls will fail; see docs/storage-endpoints.md")
        expected = blob_service_url(connection, "embedded", served)
        if target.rstrip("/") != expected:
            return (f"its SDK-type blob parameter '{binding.name}' connects to {target} (setting '{setting}'), "
                    f"but the embedded storage's Blob endpoint is {expected}: give the connection string "
                    "that BlobEndpoint (docs/storage-endpoints.md)")
    return None


def warn_if_unreachable(function: FunctionSpec, runtime: Runtime) -> None:
    """Log `unreachable_reason` once per function and host."""
    warned = runtime.services.find(_Warned)
    if warned is None:
        warned = _Warned()
        runtime.services.provide(warned)
    if function.name in warned.functions:
        return
    warned.functions.add(function.name)
    reason = unreachable_reason(function, runtime)
    if reason is not None:
        log.warning("Function '%s': %s", function.name, reason)
