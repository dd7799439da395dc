"""The Azure Blob storage input and output binding ("blob").

Input: the host reads the blob named by ``path`` (after binding expressions) and sends its
content; Python apps get ``bytes`` unless ``dataType`` is ``string`` (the extension binds blobs
to a Stream by default, which the host sends as bytes). A missing blob or container is sent
as null, which the library turns into ``None``. As on Azure, the worker gives a non-trigger
`func.InputStream` no name, length or uri (only a blob trigger's metadata carries them).

Output: the library's `BlobConverter` has encoded the value (``string`` or ``bytes``); it is
uploaded with overwrite, creating the container when it is missing, as the extension does.
A parameter typed with an SDK type of ``azurefunctions-extensions-bindings-blob`` (`BlobClient`,
`ContainerClient`, `StorageStreamDownloader`) gets model binding data naming the blob (a container
alone for a `ContainerClient`) instead of its content (`funchost.invocation.deferred`).
"""

from __future__ import annotations

import json

from azure.functions.meta import Datum

from funchost.bindings.expressions import ExpressionError, invocation_resolver, parse
from funchost.errors import (
    AppLoadError,
    BlobNotFound,
    ConfigError,
    ContainerNotFound,
    InvalidResourceName,
    InvocationError,
    UnsupportedBindingError,
)
from funchost.indexing.spec import BindingSpec, FunctionSpec
from funchost.invocation import deferred
from funchost.invocation.contracts import InvocationRequest
from funchost.runtime.contracts import BindingSupport, Runtime
from funchost.storage.blob_rules import check_blob_name, check_container_name
from funchost.storage.blobs import BlobService

NULL = Datum(None, None)


def split_path(path: str) -> tuple[str, str]:
    """``container/blob/name`` -> (container, blob name), as the extension's BlobPath does."""
    container, sep, blob = path.partition("/")
    if not sep or not container or not blob:
        raise InvalidResourceName(
            f"Invalid blob path specified : '{path}'. Blob identifiers must be in the format 'container/blob'.")
    return container, blob


def _resolve(binding: BindingSpec, request: InvocationRequest, runtime: Runtime) -> str:
    return invocation_resolver(request, runtime).resolve(str(binding.get("path") or ""))


def resolve_path(binding: BindingSpec, request: InvocationRequest, runtime: Runtime) -> tuple[str, str]:
    container, blob = split_path(_resolve(binding, request, runtime))
    check_container_name(container)
    check_blob_name(blob)
    return container, blob


def content_bytes(datum: Datum) -> bytes:
    """The bytes an output Datum stands for."""
    if datum.type == "bytes":
        return bytes(datum.value)
    if datum.type == "string":
        return str(datum.value).encode("utf-8")
    if datum.type == "json":
        text = datum.value if isinstance(datum.value, str) else json.dumps(datum.value)
        return text.encode("utf-8")
    if datum.type in ("int", "double"):
        return str(datum.value).encode("utf-8")
    raise InvocationError(f"a blob output cannot be written from a '{datum.type}' value")


def decode_text(data: bytes) -> str:
    """UTF-8, honouring a byte-order mark as .NET's StreamReader does."""
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")
    return data.decode("utf-8")


async def upload_creating_container(service: BlobService, container: str, name: str, data: bytes) -> None:
    try:
        await service.upload_blob(container, name, data, overwrite=True)
    except ContainerNotFound:
        await service.create_container(container, exist_ok=True)
        await service.upload_blob(container, name, data, overwrite=True)


class BlobBindingSupport:
    binding_type = "blob"

    def validate(self, binding: BindingSpec, function: FunctionSpec, runtime: Runtime) -> None:
        where = {"function": function.name, "file": function.script_file}
        line = function.source_line
        if binding.direction not in ("in", "out"):
            raise UnsupportedBindingError(f"blob binding '{binding.name}': direction '{binding.direction}' "
                                          "is not supported", line=line, **where)
        path = str(binding.get("path") or "")
        try:
            tokens = parse(path)
            container_only = "/" not in path and deferred.is_deferred(function, binding.name)
            if not any(t.name for t in tokens) and not container_only:
                split_path(path)  # a literal path must be container/blob (a ContainerClient: container)
            first = tokens[0].literal if tokens and tokens[0].literal is not None else ""
            if "/" in first:
                check_container_name(first.partition("/")[0])
            runtime.storage.connection(binding.get("connection"), "blob")
        except (ExpressionError, InvalidResourceName, ConfigError) as exc:
            raise AppLoadError(f"blob binding '{binding.name}': {exc}", line=line, **where) from None

    async def read(self, binding: BindingSpec, request: InvocationRequest, runtime: Runtime) -> Datum:
        if deferred.is_deferred(request.function, binding.name):  # an SDK type: where, not what
            from funchost.bindings.blob_sdk_reach import warn_if_unreachable

            warn_if_unreachable(request.function, runtime)
            container, _, blob_name = _resolve(binding, request, runtime).partition("/")
            return deferred.blob_binding_data(binding.get("connection"), container, blob_name or None)
        container, name = resolve_path(binding, request, runtime)
        service = runtime.storage.blobs(binding.get("connection"))
        try:
            data, _ = await service.download_blob(container, name)
        except (BlobNotFound, ContainerNotFound):
            return NULL
        if (binding.data_type or "").lower() == "string":
            return Datum(decode_text(data), "string")
        return Datum(data, "bytes")

    async def write(
        self, binding: BindingSpec, datum: Datum, request: InvocationRequest, runtime: Runtime
    ) -> None:
        if datum is None or datum.value is None:
            return
        container, name = resolve_path(binding, request, runtime)
        service = runtime.storage.blobs(binding.get("connection"))
        await upload_creating_container(service, container, name, content_bytes(datum))


SUPPORT: BindingSupport = BlobBindingSupport()
