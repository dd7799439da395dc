"""Blob and container properties on the wire, and the conditional headers.

Conditions (https://learn.microsoft.com/rest/api/storageservices/specifying-conditional-headers-for-blob-service-operations):
ETag conditions are handed to the port, which checks them inside the write's transaction; time
conditions are compared here with the Last-Modified just read, at whole seconds. Reads answer
304 where the resource is unchanged and 412 where it changed; writes answer 412 (a create with
`If-None-Match: *` on an existing blob: 409 BlobAlreadyExists, from the port).
"""

from __future__ import annotations

import base64
import binascii
from datetime import datetime

from funchost.storage.blob_api import ContainerProperties, HttpHeaders, Write
from funchost.storage.blobs import BlobProperties
from funchost.storage_endpoints.errors import ApiError
from funchost.storage_endpoints.wire import Response, StorageRequest, http_date, parse_http_date

SAS_OVERRIDES = {"rscc": "Cache-Control", "rscd": "Content-Disposition", "rsce": "Content-Encoding",
                 "rscl": "Content-Language", "rsct": "Content-Type"}


def _etag_matches(header: str, etag: str) -> bool:
    bare = etag.strip('"')
    return any(part.strip() in ("*", etag) or part.strip().strip('"') == bare for part in header.split(","))


def _time(request: StorageRequest, name: str) -> datetime | None:
    value = request.headers.get(name)
    if value is None:
        return None
    parsed = parse_http_date(value)
    if parsed is None:
        raise ApiError(400, "InvalidHeaderValue", None, {"HeaderName": name, "HeaderValue": value})
    return parsed


def _single(request: StorageRequest, name: str) -> str | None:
    value = request.headers.get(name)
    if value is not None and "," in value:
        raise ApiError(400, "MultipleConditionHeadersNotSupported", "Multiple condition headers are not supported.")
    return value


def check_read(request: StorageRequest, last_modified: datetime, etag: str) -> None:
    """GET/HEAD of an existing blob or container: 412 or 304 as the conditions say."""
    if_match = request.headers.get("if-match")
    if if_match is not None and not _etag_matches(if_match, etag):
        raise ApiError(412, "ConditionNotMet")
    since = _time(request, "if-unmodified-since")
    if since is not None and last_modified > since:
        raise ApiError(412, "ConditionNotMet")
    if_none = request.headers.get("if-none-match")
    if if_none is not None and _etag_matches(if_none, etag):
        raise ApiError(304, "ConditionNotMet")
    modified = _time(request, "if-modified-since")
    if modified is not None and last_modified <= modified:
        raise ApiError(304, "ConditionNotMet")


def check_write_times(request: StorageRequest, last_modified: datetime | None) -> None:
    """If-Modified-Since / If-Unmodified-Since of a write, on the current Last-Modified (None: missing)."""
    modified, unmodified = _time(request, "if-modified-since"), _time(request, "if-unmodified-since")
    if last_modified is None:
        return
    if modified is not None and last_modified <= modified:
        raise ApiError(412, "ConditionNotMet")
    if unmodified is not None and last_modified > unmodified:
        raise ApiError(412, "ConditionNotMet")


def has_time_conditions(request: StorageRequest) -> bool:
    return "if-modified-since" in request.headers or "if-unmodified-since" in request.headers


def write_of(request: StorageRequest) -> Write:
    return Write(if_match=_single(request, "if-match"), if_none_match=_single(request, "if-none-match"),
                 lease_id=request.headers.get("x-ms-lease-id"))


def md5_header(request: StorageRequest, name: str) -> bytes | None:
    value = request.headers.get(name)
    if value is None or value == "":
        return None
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 16:
        raise ApiError(400, "InvalidMd5", None, {"HeaderName": name, "HeaderValue": value})
    return raw


def http_headers(request: StorageRequest, *, from_request_headers: bool) -> HttpHeaders:
    """x-ms-blob-content-* (Put Blob also falls back to the request's own Content-* headers)."""
    h = request.headers

    def pick(blob_header: str, plain: str) -> str:
        value = h.get(blob_header)
        if value is None and from_request_headers:
            value = h.get(plain)
        return value or ""

    return HttpHeaders(content_type=pick("x-ms-blob-content-type", "content-type") or None,
                       content_encoding=pick("x-ms-blob-content-encoding", "content-encoding"),
                       content_language=pick("x-ms-blob-content-language", "content-language"),
                       content_disposition=h.get("x-ms-blob-content-disposition", ""),
                       cache_control=pick("x-ms-blob-cache-control", "cache-control"),
                       content_md5=md5_header(request, "x-ms-blob-content-md5"))


def b64(value: bytes | None) -> str | None:
    return base64.b64encode(value).decode("ascii") if value else None


def blob_headers(response: Response, props: BlobProperties, request: StorageRequest, *,
                 with_md5: bool = True) -> Response:
    """The properties Get Blob / Get Blob Properties answer with."""
    overrides = {SAS_OVERRIDES[k]: v for k, v in request.query.items() if k in SAS_OVERRIDES and "sig" in request.query}
    response.add("Last-Modified", http_date(props.last_modified)).add("ETag", props.etag)
    response.add("x-ms-creation-time", http_date(props.creation_time))
    response.add("Content-Type", overrides.get("Content-Type", props.content_type))
    for header, value in (("Content-Encoding", props.content_encoding), ("Content-Language", props.content_language),
                          ("Content-Disposition", props.content_disposition), ("Cache-Control", props.cache_control)):
        value = overrides.get(header, value)
        if value:
            response.add(header, value)
    if with_md5 and props.content_md5:
        response.add("Content-MD5", b64(props.content_md5))
    response.add("x-ms-blob-type", props.blob_type)
    for name, value in props.metadata.items():
        response.add(f"x-ms-meta-{name}", value)
    lease_headers(response, props.lease_state, props.lease_status, props.lease_duration)
    response.add("Accept-Ranges", "bytes").add("x-ms-server-encrypted", "true")
    if props.blob_type == "BlockBlob":
        response.add("x-ms-access-tier", "Hot").add("x-ms-access-tier-inferred", "true")
    if props.committed_block_count is not None:
        response.add("x-ms-blob-committed-block-count", props.committed_block_count)
    if props.version_id:
        response.add("x-ms-version-id", props.version_id).add("x-ms-is-current-version", "true")
    return response


def lease_headers(response: Response, state: str, status: str, duration: str | None) -> None:
    response.add("x-ms-lease-state", state).add("x-ms-lease-status", status)
    if duration:
        response.add("x-ms-lease-duration", duration)


def written(response: Response, props: BlobProperties) -> Response:
    response.add("ETag", props.etag).add("Last-Modified", http_date(props.last_modified))
    if props.version_id:
        response.add("x-ms-version-id", props.version_id)
    return response


def container_headers(response: Response, props: ContainerProperties) -> Response:
    response.add("ETag", props.etag).add("Last-Modified", http_date(props.last_modified))
    return response
