"""SDK-type bindings ("deferred bindings"), as the Python worker and the host handle them.

A parameter annotated with an `SdkType` of ``azurefunctions-extensions-base`` (for blobs,
``azurefunctions.extensions.bindings.blob``'s `BlobClient`, `ContainerClient`,
`StorageStreamDownloader`) is bound by the converter that package registers, not by the
``azure.functions`` one. The host then sends no content but a `ModelBindingData` naming the
resource (blob-trigger spec 9): ``source`` ``AzureStorageBlobs`` and JSON content
``{"Connection":...,"ContainerName":...,"BlobName":...}``; the package builds the SDK client from
the connection setting's value and talks to storage itself.

The host sends bytes instead when another (non-trigger) binding's first property holds a
``{...}`` expression (WorkerFunctionDescriptorProvider's skip rule, spec 9.3); an SDK-typed
trigger then fails as it does on Azure.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from azure.functions.meta import Datum

from funchost.indexing.spec import EMPTY, FunctionSpec

MODEL_BINDING_DATA = "model_binding_data"
BLOB_SOURCE = "AzureStorageBlobs"
_EXPRESSION = re.compile(r"\{(.*?)\}")


@dataclass(frozen=True)
class ModelBindingData:
    """The worker's protobuf `ModelBindingData`: the attributes the SDK-type packages read."""

    version: str
    source: str
    content_type: str
    content: bytes


def _base_meta() -> Any:
    try:
        from azurefunctions.extensions.base import meta  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return None
    return meta


def sdk_converter(binding_type: str, annotation: Any) -> Any:
    """The extension package's converter when `annotation` is an SdkType it binds, else None."""
    if annotation is None or annotation is EMPTY:
        return None
    meta = _base_meta()
    if meta is None or not meta._ConverterMeta.check_supported_type(annotation):
        return None
    return meta._ConverterMeta.get(binding_type)


def is_deferred(function: FunctionSpec, binding_name: str) -> bool:
    """The worker reports ``SupportsDeferredBinding`` for this binding (an SDK-typed IN parameter)."""
    for param in function.parameters:
        if param.binding is not None and param.binding.name == binding_name and not param.is_out:
            return sdk_converter(param.binding.type, param.annotation) is not None
    return False


def skips_deferred_binding(function: FunctionSpec) -> bool:
    """The host's QUIRK: only the first property of the first non-trigger binding is looked at."""
    for binding in function.bindings:
        if binding.is_trigger:
            continue
        first = next((v for v in binding.properties.values() if isinstance(v, str)), None)
        return first is not None and _EXPRESSION.search(first) is not None
    return False


def blob_binding_data(connection: str | None, container: str, blob_name: str | None) -> Datum:
    """What the extension sends for a deferred blob binding (ParameterBindingData -> ModelBindingData)."""
    content = {"Connection": (connection or "").strip() or "AzureWebJobsStorage", "ContainerName": container,
               "BlobName": blob_name or ""}
    value = ModelBindingData("1.0", BLOB_SOURCE, "application/json",
                             json.dumps(content, separators=(",", ":")).encode("utf-8"))
    return Datum(value, MODEL_BINDING_DATA)
