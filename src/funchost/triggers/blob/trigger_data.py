"""What a blob-triggered invocation gets: the trigger value, trigger metadata and binding data.

As the extension's BlobTriggerBinding and the host's gRPC conversion give them to the Python worker
(blob-trigger spec 6.5, 6.6, 8.2): binding data ``BlobTrigger`` (``container/blob``), ``Uri``,
``Properties``, ``Metadata`` and the path pattern's parameters (which override a built-in of the
same name); the same as trigger metadata (``Uri``, ``Properties``, ``Metadata`` as JSON). The value
depends on the parameter: an SDK type gets model binding data, ``bytes``/``str`` the content, a
`func.InputStream` (or no annotation) a stream over a spooled download.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import IO, Any

from azure.functions.meta import Datum

from funchost.indexing.spec import EMPTY, FunctionSpec
from funchost.invocation import deferred
from funchost.invocation.arguments import PREPARED
from funchost.invocation.contracts import InvocationRequest
from funchost.storage.blobs import BlobProperties, BlobService
from funchost.triggers.blob.paths import BlobPathPattern
from funchost.triggers.blob.stream import SpooledInputStream, spool_blob
from funchost.triggers.blob.urls import blob_url

SDK, BYTES, STRING, STREAM = "sdk", "bytes", "string", "stream"
# Azure.Storage.Blobs.Models enums as Json.NET writes them (integers).
_BLOB_TYPES = {"BlockBlob": 0, "PageBlob": 1, "AppendBlob": 2}
_LEASE_STATES = {"available": 0, "leased": 1, "expired": 2, "breaking": 3, "broken": 4}
_LEASE_STATUS = {"locked": 0, "unlocked": 1}


def value_kind(function: FunctionSpec) -> str:
    """How the trigger parameter is fed, decided once per function."""
    trigger = function.trigger
    if deferred.is_deferred(function, trigger.name):
        return BYTES if deferred.skips_deferred_binding(function) else SDK
    param = next((p for p in function.parameters if p.binding is not None and p.binding.name == trigger.name), None)
    annotation = param.annotation if param is not None else EMPTY
    data_type = (trigger.data_type or "").lower()
    if annotation is bytes or data_type == "binary":
        return BYTES
    if annotation is str:
        return STRING if data_type == "string" else BYTES
    return STREAM


def properties_json(props: BlobProperties) -> dict[str, Any]:
    """BlobProperties as Json.NET renders the SDK type: PascalCase names, enums as integers."""
    return {
        "LastModified": props.last_modified.isoformat(),
        "CreatedOn": props.creation_time.isoformat(),
        "Metadata": dict(props.metadata),
        "BlobType": _BLOB_TYPES.get(props.blob_type, 0),
        "LeaseState": _LEASE_STATES.get(props.lease_state, 0),
        "LeaseStatus": _LEASE_STATUS.get(props.lease_status, 1),
        "ContentLength": props.size,
        "ContentType": props.content_type,
        "ETag": props.etag,
        "ContentHash": base64.b64encode(props.content_md5).decode("ascii") if props.content_md5 else None,
        "VersionId": props.version_id,
    }


@dataclass(frozen=True)
class BlobTarget:
    """Where a function's trigger blobs live and how its parameter wants them."""

    function: FunctionSpec
    pattern: BlobPathPattern
    service: BlobService
    service_url: str
    connection: str | None
    source: str
    kind: str


@dataclass
class PreparedInvocation:
    request: InvocationRequest
    close: Callable[[], None]


def _nothing() -> None:
    return None


async def prepare(target: BlobTarget, props: BlobProperties, *, if_match: str | None,
                  details: Mapping[str, Any]) -> PreparedInvocation:
    """Build the invocation for one blob (BlobNotFound / PreconditionFailed when it changed under us)."""
    blob_path = f"{props.container}/{props.name}"
    uri = blob_url(target.service_url, props.container, props.name)
    properties = properties_json(props)
    metadata = dict(props.metadata)
    parameters = target.pattern.match(props.container, props.name) or {}
    binding_data: dict[str, Any] = {"BlobTrigger": blob_path, "Uri": uri, "Properties": properties,
                                    "Metadata": metadata}
    for name, captured in parameters.items():  # a parameter overrides a built-in of the same name
        for existing in [k for k in binding_data if k.lower() == name.lower()]:
            del binding_data[existing]
        binding_data[name] = captured
    trigger_metadata: dict[str, Datum] = {}
    for key, entry in binding_data.items():
        if key in parameters or key == "BlobTrigger":
            trigger_metadata[key] = Datum(entry, "string")
        else:
            trigger_metadata[key] = Datum(json.dumps(entry), "json")
    close = _nothing
    value: Datum
    if target.kind == SDK:
        value = deferred.blob_binding_data(target.connection, props.container, props.name)
    elif target.kind == STREAM:
        spool = await spool_blob(target.service, props, if_match=if_match)
        value = Datum(_input_stream(spool, blob_path, uri, props, properties, metadata), PREPARED)
        close = spool.close
    else:
        data, _ = await target.service.download_blob(props.container, props.name, if_match=if_match)
        value = Datum(data.decode("utf-8", errors="replace"), "string") if target.kind == STRING \
            else Datum(data, "bytes")
    request = InvocationRequest(
        function=target.function,
        trigger_value=value,
        trigger_metadata=trigger_metadata,
        binding_data=binding_data,
        reason=f"New blob detected({target.source}): {blob_path}",
        details=details,
    )
    return PreparedInvocation(request, close)


def _input_stream(spool: IO[bytes], name: str, uri: str, props: BlobProperties, properties: dict[str, Any],
                  metadata: dict[str, Any]) -> SpooledInputStream:
    # The library's BlobConverter: length from ContentLength, None for an empty blob (it is falsy).
    return SpooledInputStream(file=spool, name=name, uri=uri, length=props.size or None,
                              blob_properties=properties, metadata=metadata)
