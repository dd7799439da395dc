"""Storage adapters: queue sends and blob access for the work account (`ImportsStorage`).

Under funchost (`funchost.runtime.current.get_current()` returns the host's runtime) they go
through the host's storage, so a send wakes the local queue listener at once; on Azure they use
`azure-storage-queue` / `azure-storage-blob` with the connection string of the same setting.
The methods are coroutines: the functions of this app are `async def`.
"""

from __future__ import annotations

import asyncio
import base64
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol


class BlobMissing(Exception):
    """The blob (or its container) does not exist."""


class VersionMismatch(Exception):
    """The blob changed: its eTag / versionId is not the one the job was accepted for."""


class StorageBusy(Exception):
    """The storage account did not answer (its server is busy, restarting or unreachable): the
    call did nothing, and the same call may be repeated later."""


def is_busy(exc: BaseException) -> bool:
    """A storage failure that passes by itself: the host's ServerBusy (503) or the SDK's 5xx or
    connection failure."""
    status = getattr(exc, "status", None) or getattr(exc, "status_code", None)
    if isinstance(status, int) and status >= 500:
        return True
    try:
        from azure.core.exceptions import ServiceRequestError, ServiceResponseError
    except ImportError:  # pragma: no cover - the SDKs are optional under funchost
        return False
    return isinstance(exc, ServiceRequestError | ServiceResponseError)


@dataclass(frozen=True)
class BlobInfo:
    etag: str  # without quotes, as in Event Grid events
    version_id: str | None
    size: int
    content_type: str


def bare_etag(etag: str | None) -> str | None:
    """`"0x8D.."` and `0x8D..` name the same version: compare without the quotes."""
    if etag is None:
        return None
    text = etag.strip()
    if text.startswith("W/"):
        text = text[2:]
    return text.strip('"') or None


class QueueSender(Protocol):
    account: str

    async def send(self, queue: str, text: str) -> str | None: ...


class BlobStore(Protocol):
    account: str

    async def properties(self, container: str, name: str) -> BlobInfo: ...

    async def read(self, container: str, name: str, *, etag: str | None = None,
                   version_id: str | None = None) -> tuple[bytes, BlobInfo]: ...

    async def write(self, container: str, name: str, data: bytes, *, content_type: str,
                    metadata: Mapping[str, str] | None = None) -> None: ...

    async def names(self, container: str, prefix: str | None = None) -> list[str]: ...


async def fault(point: str, **details: Any) -> None:
    """A named fault-injection point of the host (a no-op outside funchost)."""
    runtime = _runtime()
    if runtime is not None:
        await runtime.faults.hit(point, **details)


def _runtime() -> Any:
    try:
        from funchost.runtime.current import get_current
    except ImportError:  # pragma: no cover - deployed without the funchost host
        return None
    return get_current()


def open_storage(connection: str) -> tuple[QueueSender, BlobStore]:
    runtime = _runtime()
    if runtime is not None:
        return HostQueues(runtime, connection), HostBlobs(runtime, connection)
    value = os.environ.get(connection) or os.environ.get(f"AzureWebJobs{connection}")
    if not value:
        raise RuntimeError(f"app setting {connection} (a storage connection string) is not set")
    return AzureQueues(value), AzureBlobs(value)


# -- funchost ---------------------------------------------------------------------------------------


class HostQueues:
    """Sends through the host's storage: validation, fault points and the wake-up of this host's
    queue listeners, the one way funchost itself sends."""

    def __init__(self, runtime: Any, connection: str) -> None:
        self._runtime = runtime
        self._service = runtime.storage.queues(connection)
        self.account: str = self._service.account_name
        try:
            encoding = runtime.options.extension("queues").message_encoding
        except (KeyError, AttributeError):
            encoding = "base64"
        self._base64 = encoding == "base64"

    async def send(self, queue: str, text: str) -> str | None:
        from funchost.storage.queue_send import send_message

        body = base64.b64encode(text.encode("utf-8")).decode("ascii") if self._base64 else text
        message = await send_message(self._service, queue, body, faults=self._runtime.faults)
        return str(message.id)


class HostBlobs:
    def __init__(self, runtime: Any, connection: str) -> None:
        self._service = runtime.storage.blobs(connection)
        self.account: str = self._service.account_name
        self._containers: set[str] = set()

    async def properties(self, container: str, name: str) -> BlobInfo:
        from funchost.errors import ResourceNotFound, StorageError

        try:
            props = await self._service.get_blob_properties(container, name)
        except ResourceNotFound:
            raise BlobMissing(f"{container}/{name}") from None
        except StorageError as exc:
            if is_busy(exc):
                raise StorageBusy(f"{container}/{name}: {exc.code}") from exc
            raise
        return _info(props.etag, props.version_id, props.size, props.content_type)

    async def read(self, container: str, name: str, *, etag: str | None = None,
                   version_id: str | None = None) -> tuple[bytes, BlobInfo]:
        from funchost.errors import PreconditionFailed, ResourceNotFound

        if_match = f'"{bare_etag(etag)}"' if etag and not version_id else None
        try:
            data, props = await self._service.download_blob(container, name, version_id=version_id,
                                                            if_match=if_match)
        except ResourceNotFound:
            raise BlobMissing(f"{container}/{name}") from None
        except PreconditionFailed:
            raise VersionMismatch(f"{container}/{name} changed since it was accepted") from None
        info = _info(props.etag, props.version_id, props.size, props.content_type)
        if etag and not version_id and bare_etag(etag) != info.etag:
            raise VersionMismatch(f"{container}/{name} changed since it was accepted")
        return data, info

    async def write(self, container: str, name: str, data: bytes, *, content_type: str,
                    metadata: Mapping[str, str] | None = None) -> None:
        if container not in self._containers:
            await self._service.create_container(container, exist_ok=True)
            self._containers.add(container)
        await self._service.upload_blob(container, name, data, content_type=content_type,
                                        metadata=dict(metadata or {}), overwrite=True)

    async def names(self, container: str, prefix: str | None = None) -> list[str]:
        from funchost.errors import ResourceNotFound

        try:
            page = await self._service.list_blobs(container, prefix=prefix)
        except ResourceNotFound:
            return []
        return [item.name for item in page.items]


def _info(etag: str, version_id: str | None, size: int, content_type: str | None) -> BlobInfo:
    return BlobInfo(bare_etag(etag) or "", version_id, int(size), content_type or "application/octet-stream")


# -- Azure SDKs (used when the app runs on Azure Functions) ---------------------------------------


class AzureQueues:
    def __init__(self, connection_string: str) -> None:
        from azure.storage.queue import QueueServiceClient, TextBase64EncodePolicy

        self._client = QueueServiceClient.from_connection_string(
            connection_string, message_encode_policy=TextBase64EncodePolicy())
        self.account: str = self._client.account_name or ""

    async def send(self, queue: str, text: str) -> str | None:
        def put() -> str | None:
            from azure.core.exceptions import ResourceNotFoundError
            from azure.storage.queue import TextBase64EncodePolicy

            client = self._client.get_queue_client(queue, message_encode_policy=TextBase64EncodePolicy())
            try:
                return str(client.send_message(text).id)
            except ResourceNotFoundError:
                client.create_queue()
                return str(client.send_message(text).id)

        return await asyncio.to_thread(put)


class AzureBlobs:
    def __init__(self, connection_string: str) -> None:
        from azure.storage.blob import BlobServiceClient

        self._client = BlobServiceClient.from_connection_string(connection_string)
        self.account: str = self._client.account_name or ""

    async def properties(self, container: str, name: str) -> BlobInfo:
        from azure.core.exceptions import ResourceNotFoundError

        def get() -> BlobInfo:
            try:
                p = self._client.get_blob_client(container, name).get_blob_properties()
            except ResourceNotFoundError:
                raise BlobMissing(f"{container}/{name}") from None
            except Exception as exc:
                if is_busy(exc):
                    raise StorageBusy(f"{container}/{name}: the storage account did not answer") from exc
                raise
            return _info(p.etag, p.get("version_id"), p.size, p.content_settings.content_type)

        return await asyncio.to_thread(get)

    async def read(self, container: str, name: str, *, etag: str | None = None,
                   version_id: str | None = None) -> tuple[bytes, BlobInfo]:
        from azure.core import MatchConditions
        from azure.core.exceptions import ResourceModifiedError, ResourceNotFoundError

        def get() -> tuple[bytes, BlobInfo]:
            blob = self._client.get_blob_client(container, name)
            kwargs: dict[str, Any] = {"version_id": version_id} if version_id else {}
            if etag and not version_id:
                kwargs.update(etag=f'"{bare_etag(etag)}"', match_condition=MatchConditions.IfNotModified)
            try:
                downloader = blob.download_blob(**kwargs)
            except ResourceNotFoundError:
                raise BlobMissing(f"{container}/{name}") from None
            except ResourceModifiedError:
                raise VersionMismatch(f"{container}/{name} changed since it was accepted") from None
            p = downloader.properties
            return downloader.readall(), _info(p.etag, p.get("version_id"), p.size,
                                               p.content_settings.content_type)

        return await asyncio.to_thread(get)

    async def write(self, container: str, name: str, data: bytes, *, content_type: str,
                    metadata: Mapping[str, str] | None = None) -> None:
        from azure.core.exceptions import ResourceExistsError
        from azure.storage.blob import ContentSettings

        def put() -> None:
            try:
                self._client.create_container(container)
            except ResourceExistsError:
                pass
            self._client.get_blob_client(container, name).upload_blob(
                data, overwrite=True, metadata=dict(metadata or {}),
                content_settings=ContentSettings(content_type=content_type))

        await asyncio.to_thread(put)

    async def names(self, container: str, prefix: str | None = None) -> list[str]:
        def listing() -> list[str]:
            return [b.name for b in self._client.get_container_client(container).list_blobs(name_starts_with=prefix)]

        return await asyncio.to_thread(listing)
