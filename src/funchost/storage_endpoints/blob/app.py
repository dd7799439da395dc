"""Routing of the Blob service REST API (https://learn.microsoft.com/rest/api/storageservices/blob-service-rest-api).

    GET  /?comp=list                             List Containers
    GET  /?restype=service&comp=properties       Get Blob Service Properties (the defaults)
    GET  /?restype=account&comp=properties       Get Account Information (also on a container or blob)
    PUT|GET|HEAD|DELETE /c?restype=container     Create / Get Properties / Delete Container
    PUT  /c?restype=container&comp=metadata      Set Container Metadata (GET/HEAD: Get Container Metadata)
    GET|PUT /c?restype=container&comp=acl        Get / Set Container ACL (public access, stored policies)
    PUT  /c?restype=container&comp=lease         Lease Container
    GET  /c?restype=container&comp=list          List Blobs (prefix, delimiter, marker, maxresults, include=metadata)
    PUT  /c/b                                    Put Blob (BlockBlob, empty AppendBlob) or Copy Blob (x-ms-copy-source)
    GET|HEAD /c/b                                Get Blob (Range / x-ms-range) / Get Blob Properties
    DELETE /c/b                                  Delete Blob
    PUT  /c/b?comp=properties|metadata|lease     Set Blob Properties / Set Blob Metadata / Lease Blob
    GET|HEAD /c/b?comp=metadata                  Get Blob Metadata
    PUT  /c/b?comp=block|blocklist|appendblock   Put Block / Put Block List / Append Block
    GET  /c/b?comp=blocklist                     Get Block List

Everything else the service has (snapshots, page blobs, tiers, tags, batch, soft delete, static
website, user delegation keys, ...) answers 501 NotImplemented, never a crash.
"""

from __future__ import annotations

from collections.abc import Callable

from funchost.errors import ContainerNotFound
from funchost.storage.blob_api import BlobApi
from funchost.storage_endpoints.app import Handler, Operation, StorageApp, service_level, unknown_operation
from funchost.storage_endpoints.blob.blobs import Blobs
from funchost.storage_endpoints.blob.containers import Containers
from funchost.storage_endpoints.errors import ApiError, not_supported
from funchost.storage_endpoints.sas import Access, Scope, StoredPolicy
from funchost.storage_endpoints.wire import Response, StorageRequest

# Azure's limits (since version 2019-12-12); bodies above 4 MiB go to the store as they arrive.
PUT_BLOB_LIMIT = 5000 * 1024 * 1024
PUT_BLOCK_LIMIT = 4000 * 1024 * 1024
APPEND_BLOCK_LIMIT = 100 * 1024 * 1024
BLOB_PROPERTIES_EXTRA = ("<DeleteRetentionPolicy><Enabled>false</Enabled></DeleteRetentionPolicy>"
                         "<StaticWebsite><Enabled>false</Enabled></StaticWebsite>")
NOT_SUPPORTED_COMPS = {"snapshot": "blob snapshots", "tier": "access tiers", "tags": "blob index tags",
                       "page": "page blobs", "pagelist": "page blobs", "incrementalcopy": "incremental copy",
                       "undelete": "soft delete", "query": "Query Blob Contents", "expiry": "blob expiry",
                       "immutabilitypolicies": "immutability policies", "legalhold": "legal holds",
                       "seal": "sealing append blobs", "batch": "Blob Batch", "copy": "Abort Copy Blob",
                       "rename": "renaming containers", "blobs": "Find Blobs by Tags",
                       "userdelegationkey": "user delegation keys", "stats": "service stats"}


class BlobApp(StorageApp):
    service = "blob"

    def route(self, request: StorageRequest) -> Operation:
        method, comp, restype = request.method, request.query.get("comp"), request.query.get("restype")
        if comp in NOT_SUPPORTED_COMPS:
            raise not_supported(NOT_SUPPORTED_COMPS[comp])
        if restype == "account" and comp == "properties" and method in ("GET", "HEAD"):
            return Operation("GetAccountInformation", _account_information, Access("s", "rwdlacup"))
        container, _, name = request.resource.partition("/")
        if not container:
            return self._service_route(request, method, comp)
        if name:
            return self._blob_route(request, method, comp, container, name)
        if container == "$root" or restype != "container":
            raise ApiError(400, "InvalidQueryParameterValue", "The blob name is missing, or restype=container is "
                           "missing for a container operation.", {"QueryParameterName": "restype"})
        return self._container_route(request, method, comp, container)

    def _service_route(self, request: StorageRequest, method: str, comp: str | None) -> Operation:
        handlers = Containers(self.storage.blobs(request.account))
        if method == "GET" and comp == "list":
            return Operation("ListContainers", handlers.list_containers, Access("s", "l"))
        found = service_level(request, "Blob", BLOB_PROPERTIES_EXTRA)
        if found is not None:
            return found
        raise unknown_operation(request)

    def _container_route(self, request: StorageRequest, method: str, comp: str | None, container: str
                         ) -> Operation:
        api = self.storage.blobs(request.account)
        handlers = Containers(api)
        op = _operations(api, Scope(container=container))

        if comp is None:
            if method == "PUT":
                return op("CreateContainer", handlers.create, Access("c", "cw"))
            if method in ("GET", "HEAD"):
                return op("GetContainerProperties", handlers.properties, Access("c", "r"), public=True)
            if method == "DELETE":
                return op("DeleteContainer", handlers.delete, Access("c", "d"))
        elif comp == "metadata":
            if method == "PUT":
                return op("SetContainerMetadata", handlers.set_metadata, Access("c", "w"))
            if method in ("GET", "HEAD"):
                return op("GetContainerMetadata", handlers.properties, Access("c", "r"), public=True)
        elif comp == "acl":
            if method in ("GET", "HEAD"):
                return op("GetContainerACL", handlers.get_acl, Access("c", "r"))
            if method == "PUT":
                return op("SetContainerACL", handlers.set_acl, Access("c", "w"), limit=64 * 1024)
        elif comp == "lease" and method == "PUT":
            return op("LeaseContainer", handlers.lease, Access("c", "wd"))
        elif comp == "list" and method == "GET":
            return op("ListBlobs", handlers.list_blobs, Access("c", "l"), public=True)
        raise unknown_operation(request)

    def _blob_route(self, request: StorageRequest, method: str, comp: str | None, container: str, name: str
                    ) -> Operation:
        api = self.storage.blobs(request.account)
        handlers = Blobs(api)
        op = _operations(api, Scope(container=container, blob=name))

        async def head(request: StorageRequest) -> Response:
            return await handlers.get(request, head=True)

        if comp is None:
            if method == "GET":
                return op("GetBlob", handlers.get, Access("o", "r"), public=True)
            if method == "HEAD":
                return op("GetBlobProperties", head, Access("o", "r"), public=True)
            if method == "PUT":
                access = Access("o", "wc") if "x-ms-copy-source" not in request.headers else Access("o", "w")
                return op("PutBlob", handlers.put, access, limit=PUT_BLOB_LIMIT, streamed=True)
            if method == "DELETE":
                return op("DeleteBlob", handlers.delete, Access("o", "d"))
        elif comp == "metadata":
            if method == "PUT":
                return op("SetBlobMetadata", handlers.set_metadata, Access("o", "w"))
            if method in ("GET", "HEAD"):
                return op("GetBlobMetadata", handlers.get_metadata, Access("o", "r"), public=True)
        elif comp == "properties" and method == "PUT":
            return op("SetBlobProperties", handlers.set_properties, Access("o", "w"))
        elif comp == "lease" and method == "PUT":
            return op("LeaseBlob", handlers.lease, Access("o", "wd"))
        elif comp == "block" and method == "PUT":
            return op("PutBlock", handlers.put_block, Access("o", "wc"), limit=PUT_BLOCK_LIMIT, streamed=True)
        elif comp == "blocklist":
            if method == "PUT":
                return op("PutBlockList", handlers.put_block_list, Access("o", "wc"))
            if method == "GET":
                return op("GetBlockList", handlers.get_block_list, Access("o", "r"))
        elif comp == "appendblock" and method == "PUT":
            return op("AppendBlock", handlers.append_block, Access("o", "aw"), limit=APPEND_BLOCK_LIMIT,
                      streamed=True)
        raise unknown_operation(request)


OperationMaker = Callable[..., Operation]


def _operations(api: BlobApi, scope: Scope) -> OperationMaker:
    """Operations on one container or blob: the container's public access level and stored
    access policies are looked up only when the request needs them (anonymous, or SAS with si)."""

    async def public_access() -> str | None:
        try:
            return (await api.get_container_properties(scope.container)).public_access
        except ContainerNotFound:
            return None

    async def policy(identifier: str) -> StoredPolicy | None:
        _, identifiers = await api.get_container_acl(scope.container)
        found = next((i for i in identifiers if i.id == identifier), None)
        return StoredPolicy(found.start, found.expiry, found.permission) if found else None

    def op(name: str, handler: Handler, access: Access, public: bool = False, limit: int = 4 * 1024 * 1024,
           streamed: bool = False) -> Operation:
        return Operation(name, handler, access, scope, limit, public_access if public else None, policy, streamed)

    return op


async def _account_information(request: StorageRequest) -> Response:
    return (Response(200).add("x-ms-sku-name", "Standard_RAGRS").add("x-ms-account-kind", "StorageV2")
            .add("x-ms-is-hns-enabled", "false"))
