"""Container and service operations of the Blob API: create, properties, metadata, ACL, lease,
delete, List Containers, List Blobs, service properties and account information."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from funchost.storage.blob_api import BlobApi, ContainerProperties, SignedIdentifier
from funchost.storage.blobs import BlobProperties
from funchost.storage_endpoints.app import integer, metadata_from, xml_document
from funchost.storage_endpoints.blob.properties import (
    b64,
    check_read,
    check_write_times,
    container_headers,
    lease_headers,
)
from funchost.storage_endpoints.errors import ApiError, not_supported
from funchost.storage_endpoints.wire import Response, StorageRequest, http_date

XML_HEAD = '<?xml version="1.0" encoding="utf-8"?>'
MAX_LIST = 5000


def xml_response(status: int, body: str) -> Response:
    return Response(status, (XML_HEAD + body).encode("utf-8"), content_type="application/xml")


def _public_access(request: StorageRequest) -> str | None:
    value = request.headers.get("x-ms-blob-public-access")
    if value in (None, ""):
        return None
    if value not in ("container", "blob"):
        raise ApiError(400, "InvalidHeaderValue", None, {"HeaderName": "x-ms-blob-public-access",
                                                         "HeaderValue": value})
    return value


def _metadata_xml(metadata: Mapping[str, str]) -> str:
    items = metadata.items()
    return "<Metadata>" + "".join(f"<{k}>{escape(v)}</{k}>" for k, v in items) + "</Metadata>"


class Containers:
    def __init__(self, blobs: BlobApi) -> None:
        self.blobs = blobs

    async def create(self, request: StorageRequest) -> Response:
        props = await self.blobs.create_container_with(request.resource, metadata=metadata_from(request),
                                                       public_access=_public_access(request))
        return container_headers(Response(201), props)

    async def properties(self, request: StorageRequest) -> Response:
        props = await self.blobs.get_container_properties(request.resource,
                                                          lease_id=request.headers.get("x-ms-lease-id"))
        check_read(request, props.last_modified, props.etag)
        response = container_headers(Response(200), props)
        for name, value in props.metadata.items():
            response.add(f"x-ms-meta-{name}", value)
        lease_headers(response, props.lease_state, props.lease_status, props.lease_duration)
        if props.public_access:
            response.add("x-ms-blob-public-access", props.public_access)
        response.add("x-ms-has-immutability-policy", "false").add("x-ms-has-legal-hold", "false")
        response.add("x-ms-default-encryption-scope", "$account-encryption-key")
        return response.add("x-ms-deny-encryption-scope-override", "false")

    async def delete(self, request: StorageRequest) -> Response:
        if "if-modified-since" in request.headers or "if-unmodified-since" in request.headers:
            props = await self.blobs.get_container_properties(request.resource)
            check_write_times(request, props.last_modified)
        await self.blobs.delete_container_with(request.resource, lease_id=request.headers.get("x-ms-lease-id"))
        return Response(202)

    async def set_metadata(self, request: StorageRequest) -> Response:
        if "if-modified-since" in request.headers:
            check_write_times(request, (await self.blobs.get_container_properties(request.resource)).last_modified)
        props = await self.blobs.set_container_metadata(request.resource, metadata_from(request),
                                                        lease_id=request.headers.get("x-ms-lease-id"))
        return container_headers(Response(200), props)

    async def get_acl(self, request: StorageRequest) -> Response:
        props, identifiers = await self.blobs.get_container_acl(request.resource,
                                                                lease_id=request.headers.get("x-ms-lease-id"))
        body = "<SignedIdentifiers>" + "".join(
            f"<SignedIdentifier><Id>{escape(i.id)}</Id><AccessPolicy>"
            + (f"<Start>{escape(i.start)}</Start>" if i.start else "")
            + (f"<Expiry>{escape(i.expiry)}</Expiry>" if i.expiry else "")
            + (f"<Permission>{escape(i.permission)}</Permission>" if i.permission else "")
            + "</AccessPolicy></SignedIdentifier>" for i in identifiers) + "</SignedIdentifiers>"
        response = container_headers(xml_response(200, body), props)
        if props.public_access:
            response.add("x-ms-blob-public-access", props.public_access)
        return response

    async def set_acl(self, request: StorageRequest) -> Response:
        identifiers = parse_identifiers(request.body)
        props = await self.blobs.set_container_acl(request.resource, _public_access(request), identifiers,
                                                   lease_id=request.headers.get("x-ms-lease-id"))
        return container_headers(Response(200), props)

    async def lease(self, request: StorageRequest) -> Response:
        action, kwargs = lease_arguments(request)
        props, lease_id, remaining = await self.blobs.container_lease(request.resource, action, **kwargs)
        return lease_response(action, container_headers(Response(200), props), lease_id, remaining)

    async def list_containers(self, request: StorageRequest) -> Response:
        prefix, marker = request.query.get("prefix", ""), request.query.get("marker", "")
        limit = min(integer(request, "maxresults", MAX_LIST, 1, 2**31 - 1) or MAX_LIST, MAX_LIST)
        items, next_marker = await self.blobs.list_container_properties(prefix, marker, limit)
        with_metadata = "metadata" in request.query.get("include", "").split(",")
        body = "".join(_container_xml(c, with_metadata) for c in items)
        endpoint = f"http://{request.host}/{request.account}/"
        return xml_response(200, f"<EnumerationResults ServiceEndpoint={quoteattr(endpoint)}>"
                            f"<Prefix>{escape(prefix)}</Prefix>" + (f"<Marker>{escape(marker)}</Marker>" if marker else "")
                            + f"<MaxResults>{limit}</MaxResults><Containers>{body}</Containers>"
                            f"<NextMarker>{escape(next_marker or '')}</NextMarker></EnumerationResults>")

    async def list_blobs(self, request: StorageRequest) -> Response:
        includes = set(request.query.get("include", "").split(","))
        unsupported = includes & {"snapshots", "versions", "deleted", "uncommittedblobs", "tags", "immutabilitypolicy",
                                  "legalhold", "deletedwithversions"}
        if unsupported:
            raise not_supported(f"List Blobs with include={','.join(sorted(unsupported))}")
        prefix, marker = request.query.get("prefix", ""), request.query.get("marker", "")
        delimiter = request.query.get("delimiter", "")
        limit = min(integer(request, "maxresults", MAX_LIST, 1, 2**31 - 1) or MAX_LIST, MAX_LIST)
        page = await self.blobs.list_blobs_page(request.resource, prefix=prefix, delimiter=delimiter, marker=marker,
                                                max_results=limit)
        entries = [(b.name, _blob_xml(b, "metadata" in includes)) for b in page.blobs]
        entries += [(p, f"<BlobPrefix><Name>{escape(p)}</Name></BlobPrefix>") for p in page.prefixes]
        entries.sort(key=lambda e: e[0])
        endpoint = f"http://{request.host}/{request.account}/"
        return xml_response(200, f"<EnumerationResults ServiceEndpoint={quoteattr(endpoint)} "
                            f"ContainerName={quoteattr(request.resource)}><Prefix>{escape(prefix)}</Prefix>"
                            + (f"<Marker>{escape(marker)}</Marker>" if marker else "")
                            + f"<MaxResults>{limit}</MaxResults>"
                            + (f"<Delimiter>{escape(delimiter)}</Delimiter>" if delimiter else "")
                            + f"<Blobs>{''.join(e[1] for e in entries)}</Blobs>"
                            f"<NextMarker>{escape(page.next_marker or '')}</NextMarker></EnumerationResults>")


def _container_xml(props: ContainerProperties, with_metadata: bool) -> str:
    public = f"<PublicAccess>{props.public_access}</PublicAccess>" if props.public_access else ""
    duration = f"<LeaseDuration>{props.lease_duration}</LeaseDuration>" if props.lease_duration else ""
    return (f"<Container><Name>{escape(props.name)}</Name><Properties>"
            f"<Last-Modified>{http_date(props.last_modified)}</Last-Modified><Etag>{props.etag}</Etag>"
            f"<LeaseStatus>{props.lease_status}</LeaseStatus><LeaseState>{props.lease_state}</LeaseState>{duration}"
            f"{public}<DefaultEncryptionScope>$account-encryption-key</DefaultEncryptionScope>"
            "<DenyEncryptionScopeOverride>false</DenyEncryptionScopeOverride>"
            "<HasImmutabilityPolicy>false</HasImmutabilityPolicy><HasLegalHold>false</HasLegalHold></Properties>"
            + (_metadata_xml(props.metadata) if with_metadata else "") + "</Container>")


def _blob_xml(props: BlobProperties, with_metadata: bool) -> str:
    def element(name: str, value: object) -> str:
        return f"<{name}>{escape(str(value))}</{name}>" if value not in (None, "") else f"<{name} />"

    tier = "<AccessTier>Hot</AccessTier><AccessTierInferred>true</AccessTierInferred>" \
        if props.blob_type == "BlockBlob" else ""
    duration = element("LeaseDuration", props.lease_duration) if props.lease_duration else ""
    committed = element("x-ms-blob-committed-block-count", props.committed_block_count) \
        if props.committed_block_count is not None else ""
    version = element("VersionId", props.version_id) + "<IsCurrentVersion>true</IsCurrentVersion>" \
        if props.version_id else ""
    return (f"<Blob><Name>{escape(props.name)}</Name>{version}<Properties>"
            + element("Creation-Time", http_date(props.creation_time))
            + element("Last-Modified", http_date(props.last_modified)) + element("Etag", props.etag.strip('"'))
            + element("Content-Length", props.size) + element("Content-Type", props.content_type)
            + element("Content-Encoding", props.content_encoding) + element("Content-Language", props.content_language)
            + element("Content-MD5", b64(props.content_md5)) + element("Content-Disposition", props.content_disposition)
            + element("Cache-Control", props.cache_control) + element("BlobType", props.blob_type) + tier
            + element("LeaseStatus", props.lease_status) + element("LeaseState", props.lease_state) + duration
            + committed + "<ServerEncrypted>true</ServerEncrypted></Properties>"
            + (_metadata_xml(props.metadata) if with_metadata else "") + "</Blob>")


def parse_identifiers(body: bytes) -> Sequence[SignedIdentifier]:
    if not body.strip():
        return []
    root = xml_document(body, "SignedIdentifiers")
    identifiers = []
    for item in root:
        policy = item.find("AccessPolicy")
        identifier = item.findtext("Id")
        if item.tag != "SignedIdentifier" or not identifier or len(identifier) > 64:
            raise ApiError(400, "InvalidXmlDocument")
        identifiers.append(SignedIdentifier(
            identifier, policy.findtext("Start") or "" if policy is not None else "",
            policy.findtext("Expiry") or "" if policy is not None else "",
            policy.findtext("Permission") or "" if policy is not None else ""))
    return identifiers


def lease_arguments(request: StorageRequest) -> tuple[str, dict[str, Any]]:
    action = (request.headers.get("x-ms-lease-action") or "").lower()
    if action not in ("acquire", "renew", "change", "release", "break"):
        raise ApiError(400, "InvalidHeaderValue", None, {"HeaderName": "x-ms-lease-action",
                                                         "HeaderValue": action})

    def number(name: str) -> int | None:
        raw = request.headers.get(name)
        if raw is None:
            return None
        try:
            return int(raw)
        except ValueError:
            raise ApiError(400, "InvalidHeaderValue", None, {"HeaderName": name, "HeaderValue": raw}) from None

    return action, {"lease_id": request.headers.get("x-ms-lease-id"),
                    "proposed_id": request.headers.get("x-ms-proposed-lease-id"),
                    "duration": number("x-ms-lease-duration"), "break_period": number("x-ms-lease-break-period")}


def lease_response(action: str, response: Response, lease_id: str | None, remaining: int) -> Response:
    if action == "acquire":
        response.status = 201
    if action == "break":
        response.status = 202
        response.add("x-ms-lease-time", remaining)
    elif action != "release" and lease_id:
        response.add("x-ms-lease-id", lease_id)
    return response


def check_container_read(request: StorageRequest, props: ContainerProperties) -> None:
    check_read(request, props.last_modified, props.etag)
