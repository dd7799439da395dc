"""Blob operations: Put Blob, Get Blob (ranges), properties, metadata, delete, lease, copy,
Put Block / Put Block List / Get Block List, Append Block."""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import unquote, urlparse
from xml.sax.saxutils import escape

from funchost.errors import BlobNotFound
from funchost.storage.blob_api import BlobApi, Block, Body, UploadedContent
from funchost.storage.blobs import BlobProperties
from funchost.storage_endpoints.app import metadata_from, xml_document
from funchost.storage_endpoints.blob.containers import lease_arguments, lease_response, xml_response
from funchost.storage_endpoints.blob.properties import (
    b64,
    blob_headers,
    check_read,
    check_write_times,
    has_time_conditions,
    http_headers,
    md5_header,
    write_of,
    written,
)
from funchost.storage_endpoints.errors import ApiError, not_supported
from funchost.storage_endpoints.wire import Response, StorageRequest

_RANGE = re.compile(r"^bytes=(\d+)-(\d*)$")
MAX_RANGE_MD5 = 4 * 1024 * 1024


def _check_md5(request: StorageRequest, data: Body) -> bytes:
    digest = data.md5 if isinstance(data, UploadedContent) else hashlib.md5(data).digest()
    given = md5_header(request, "content-md5")
    if given is not None and given != digest:
        raise ApiError(400, "Md5Mismatch", None, {"UserSpecifiedMd5": b64(given) or "",
                                                  "ServerCalculatedMd5": b64(digest) or ""})
    return digest


def _range(request: StorageRequest) -> tuple[int, int | None] | None:
    raw = request.headers.get("x-ms-range") or request.headers.get("range")
    match = _RANGE.match(raw.strip()) if raw else None
    if match is None:
        return None  # absent or not a single range: the whole blob, as the service does
    start, end = int(match.group(1)), match.group(2)
    if end and int(end) < start:
        raise ApiError(416, "InvalidRange")
    return start, int(end) if end else None


def _blob_name(request: StorageRequest) -> tuple[str, str]:
    container, _, name = request.resource.partition("/")
    return container, name.replace("\\", "/")


class Blobs:
    def __init__(self, blobs: BlobApi) -> None:
        self.blobs = blobs

    @asynccontextmanager
    async def _received(self, request: StorageRequest) -> AsyncIterator[Body]:
        """The request's body: in memory, or (a large one) already in the store, dropped unless the
        write took it."""
        if request.stream is None:
            yield request.body
            return
        body = await self.blobs.upload_content(request.stream)
        try:
            yield body
        finally:
            await self.blobs.discard_content(body)

    async def _current(self, container: str, name: str) -> BlobProperties | None:
        try:
            return await self.blobs.get_blob_properties(container, name)
        except BlobNotFound:
            return None

    async def _check_times(self, request: StorageRequest, container: str, name: str) -> None:
        if has_time_conditions(request):
            current = await self._current(container, name)
            check_write_times(request, current.last_modified if current else None)

    # -- reads -----------------------------------------------------------------------------------

    async def get(self, request: StorageRequest, *, head: bool = False) -> Response:
        container, name = _blob_name(request)
        if "snapshot" in request.query:
            raise not_supported("blob snapshots")
        version = request.query.get("versionid")
        props = await self.blobs.get_blob_properties(container, name, version_id=version)
        check_read(request, props.last_modified, props.etag)
        ranged = _range(request)
        if head:
            return blob_headers(Response(200), props, request).add("Content-Length", props.size)
        if ranged is None:
            data, props = await self.blobs.download_blob(container, name, version_id=version, if_match=props.etag)
            return blob_headers(Response(200, data), props, request)
        start, end = ranged
        if start >= props.size:
            return Response(416).add("Content-Range", f"bytes */{props.size}").add("x-ms-error-code", "InvalidRange")
        last = min(props.size - 1, end if end is not None else props.size - 1)
        data, props = await self.blobs.download_blob(container, name, offset=start, length=last - start + 1,
                                                     version_id=version, if_match=props.etag)
        response = blob_headers(Response(206, data), props, request, with_md5=False)
        response.add("Content-Range", f"bytes {start}-{last}/{props.size}")
        if (request.headers.get("x-ms-range-get-content-md5") or "").lower() == "true":
            if last - start + 1 > MAX_RANGE_MD5:
                raise ApiError(400, "OutOfRangeInput")
            response.add("Content-MD5", b64(hashlib.md5(data).digest()))
        if props.content_md5:
            response.add("x-ms-blob-content-md5", b64(props.content_md5))
        return response

    async def get_metadata(self, request: StorageRequest) -> Response:
        container, name = _blob_name(request)
        props = await self.blobs.get_blob_properties(container, name)
        check_read(request, props.last_modified, props.etag)
        response = written(Response(200), props)
        for key, value in props.metadata.items():
            response.add(f"x-ms-meta-{key}", value)
        return response

    # -- writes ----------------------------------------------------------------------------------

    async def put(self, request: StorageRequest) -> Response:
        container, name = _blob_name(request)
        if "x-ms-copy-source" in request.headers:
            return await self.copy(request)
        blob_type = request.headers.get("x-ms-blob-type")
        if blob_type is None:
            raise ApiError(400, "MissingRequiredHeader", None, {"HeaderName": "x-ms-blob-type"})
        if blob_type == "PageBlob":
            raise not_supported("page blobs")
        if blob_type not in ("BlockBlob", "AppendBlob"):
            raise ApiError(400, "InvalidHeaderValue", None, {"HeaderName": "x-ms-blob-type", "HeaderValue": blob_type})
        if request.headers.get("x-ms-tags"):
            raise not_supported("blob index tags")
        if blob_type == "AppendBlob" and (request.body or request.stream is not None):
            raise ApiError(400, "InvalidHeaderValue", "An append blob is created empty (Content-Length: 0).",
                           {"HeaderName": "Content-Length", "HeaderValue": request.headers.get("content-length", "")})
        headers = http_headers(request, from_request_headers=True)
        async with self._received(request) as body:
            digest = _check_md5(request, body)
            await self._check_times(request, container, name)
            props = await self.blobs.put_blob(container, name, body, blob_type=blob_type, headers=headers,
                                              metadata=metadata_from(request), write=write_of(request))
        response = written(Response(201), props).add("x-ms-request-server-encrypted", "true")
        return response.add("Content-MD5", b64(digest)) if blob_type == "BlockBlob" else response

    async def set_properties(self, request: StorageRequest) -> Response:
        container, name = _blob_name(request)
        if "x-ms-blob-content-length" in request.headers or "x-ms-sequence-number-action" in request.headers:
            raise not_supported("page blob properties")
        await self._check_times(request, container, name)
        props = await self.blobs.set_http_headers(container, name, http_headers(request, from_request_headers=False),
                                                  write=write_of(request))
        return written(Response(200), props)

    async def set_metadata(self, request: StorageRequest) -> Response:
        container, name = _blob_name(request)
        await self._check_times(request, container, name)
        props = await self.blobs.set_metadata(container, name, metadata_from(request), write=write_of(request))
        return written(Response(200), props).add("x-ms-request-server-encrypted", "true")

    async def delete(self, request: StorageRequest) -> Response:
        container, name = _blob_name(request)
        if "snapshot" in request.query or "versionid" in request.query:
            raise not_supported("deleting snapshots or versions")
        if request.headers.get("x-ms-delete-snapshots") not in (None, "include", "only"):
            raise ApiError(400, "InvalidHeaderValue", None, {"HeaderName": "x-ms-delete-snapshots"})
        if request.headers.get("x-ms-delete-snapshots") == "only":
            await self.blobs.get_blob_properties(container, name)  # there are no snapshots to delete
            return Response(202)
        await self._check_times(request, container, name)
        await self.blobs.delete_blob_with(container, name, write=write_of(request))
        return Response(202).add("x-ms-delete-type-permanent", "true")

    async def lease(self, request: StorageRequest) -> Response:
        container, name = _blob_name(request)
        action, kwargs = lease_arguments(request)
        props, lease_id, remaining = await self.blobs.blob_lease(container, name, action, **kwargs)
        return lease_response(action, written(Response(200), props), lease_id, remaining)

    async def copy(self, request: StorageRequest) -> Response:
        container, name = _blob_name(request)
        source = urlparse(request.headers["x-ms-copy-source"])
        parts = unquote(source.path).lstrip("/").split("/", 2)
        if source.hostname and "." in source.hostname and not source.hostname.replace(".", "").isdigit():
            parts = [source.hostname.split(".")[0], *unquote(source.path).lstrip("/").split("/", 1)]
        if len(parts) < 3 or parts[0] != request.account:
            raise not_supported("copying from another account or outside this endpoint")
        for header in request.headers:
            if header.startswith("x-ms-source-if-"):
                raise not_supported("source conditions of Copy Blob")
        await self._check_times(request, container, name)
        metadata = metadata_from(request) or None
        props = await self.blobs.copy_blob(parts[1], parts[2].replace("\\", "/"), container, name,
                                           metadata=metadata, write=write_of(request))
        response = written(Response(202), props).add("x-ms-copy-id", str(uuid.uuid4()))
        return response.add("x-ms-copy-status", "success")

    # -- blocks ----------------------------------------------------------------------------------

    async def put_block(self, request: StorageRequest) -> Response:
        container, name = _blob_name(request)
        block_id = request.query.get("blockid")
        if not block_id:
            raise ApiError(400, "MissingRequiredQueryParameter", None, {"QueryParameterName": "blockid"})
        async with self._received(request) as body:
            digest = _check_md5(request, body)
            await self.blobs.stage_block(container, name, block_id, body,
                                         lease_id=request.headers.get("x-ms-lease-id"))
        return Response(201).add("Content-MD5", b64(digest)).add("x-ms-request-server-encrypted", "true")

    async def put_block_list(self, request: StorageRequest) -> Response:
        container, name = _blob_name(request)
        wanted = parse_block_list(request.body)
        await self._check_times(request, container, name)
        props = await self.blobs.commit_blocks(container, name, wanted,
                                               headers=http_headers(request, from_request_headers=False),
                                               metadata=metadata_from(request), write=write_of(request))
        return written(Response(201), props).add("x-ms-request-server-encrypted", "true")

    async def get_block_list(self, request: StorageRequest) -> Response:
        container, name = _blob_name(request)
        which = request.query.get("blocklisttype", "committed").lower()
        if which not in ("committed", "uncommitted", "all"):
            raise ApiError(400, "InvalidQueryParameterValue", None, {"QueryParameterName": "blocklisttype",
                                                                     "QueryParameterValue": which})
        listing = await self.blobs.get_block_list(container, name, lease_id=request.headers.get("x-ms-lease-id"))

        def section(tag: str, blocks: list[Block] | tuple[Block, ...]) -> str:
            items = "".join(f"<Block><Name>{escape(b.id)}</Name><Size>{b.size}</Size></Block>" for b in blocks)
            return f"<{tag}>{items}</{tag}>"

        body = "<BlockList>"
        if which in ("committed", "all"):
            body += section("CommittedBlocks", list(listing.committed))
        if which in ("uncommitted", "all"):
            body += section("UncommittedBlocks", list(listing.uncommitted))
        response = xml_response(200, body + "</BlockList>")
        if listing.properties is not None:
            written(response, listing.properties).add("x-ms-blob-content-length", listing.properties.size)
        return response

    async def append_block(self, request: StorageRequest) -> Response:
        container, name = _blob_name(request)

        def number(header: str) -> int | None:
            raw = request.headers.get(header)
            if raw is None:
                return None
            if not raw.isdigit():
                raise ApiError(400, "InvalidHeaderValue", None, {"HeaderName": header, "HeaderValue": raw})
            return int(raw)

        position, max_size = number("x-ms-blob-condition-appendpos"), number("x-ms-blob-condition-maxsize")
        async with self._received(request) as body:
            digest = _check_md5(request, body)
            await self._check_times(request, container, name)
            props, offset = await self.blobs.append_block(container, name, body, write=write_of(request),
                                                          append_position=position, max_size=max_size)
        response = written(Response(201), props).add("Content-MD5", b64(digest))
        response.add("x-ms-blob-append-offset", offset).add("x-ms-blob-committed-block-count",
                                                            props.committed_block_count or 0)
        return response.add("x-ms-request-server-encrypted", "true")


def parse_block_list(body: bytes) -> list[tuple[str, str]]:
    root = xml_document(body, "BlockList")
    wanted = []
    for item in root:
        kind = item.tag.lower()
        if kind not in ("committed", "uncommitted", "latest") or not (item.text or "").strip():
            raise ApiError(400, "InvalidBlockList")
        wanted.append((kind, item.text.strip()))  # type: ignore[union-attr]
    return wanted

