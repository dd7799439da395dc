"""The ASGI frame shared by the three services: parse, route, authorize, read, handle, answer.

Each service supplies `route(request) -> Operation`; everything else is common. No input reaches
a 500: routing, authorization, body size and the handlers answer with Azure's codes, and an
unexpected exception (a bug) is logged with the request id and answered `InternalError`.
"""

from __future__ import annotations

import json
import logging
import os
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from funchost.clock import Clock
from funchost.errors import StorageError
from funchost.storage_endpoints.accounts import Accounts
from funchost.storage_endpoints.auth import PublicAccess, account_of, authorize
from funchost.storage_endpoints.errors import ApiError, from_storage_error, not_supported, xml_error
from funchost.storage_endpoints.sas import Access, PolicyLookup, Scope
from funchost.storage_endpoints.wire import (
    Receive,
    Response,
    Send,
    StorageRequest,
    build_request,
    read_body,
    send_response,
)
from funchost.storage_endpoints.wire import (
    Scope as AsgiScope,
)

if TYPE_CHECKING:
    from funchost.storage.blob_api import BlobApi
    from funchost.storage.queues import QueueService
    from funchost.storage.tables import TableService

log = logging.getLogger("funchost.storage.endpoints")

IDENTITY_PATH = "/_funchost/identity"  # not an account name: names are 3-24 lower-case letters and digits
DEFAULT_BODY_LIMIT = 4 * 1024 * 1024
STREAM_ABOVE = 4 * 1024 * 1024  # a larger body of a `streamed` operation goes to the store as it arrives


class AccountStorage(Protocol):
    """The storage of every account served, behind the host's wrappers (`service.HostAccounts`)."""

    def queues(self, account: str) -> QueueService: ...

    def blobs(self, account: str) -> BlobApi: ...

    def tables(self, account: str) -> TableService: ...


Handler = Callable[[StorageRequest], Awaitable[Response]]


@dataclass
class Operation:
    name: str
    handler: Handler
    access: Access
    scope: Scope = field(default_factory=Scope)
    body_limit: int = DEFAULT_BODY_LIMIT
    public_access: PublicAccess | None = None
    policy: PolicyLookup | None = None
    streamed: bool = False  # the handler takes a large body as `request.stream` (blob content)


class StorageApp:
    service = ""

    def __init__(self, storage: AccountStorage, accounts: Accounts, clock: Clock, identity: str) -> None:
        self.storage = storage
        self.accounts = accounts
        self.clock = clock
        self.identity = identity

    def route(self, request: StorageRequest) -> Operation:
        raise NotImplementedError

    def error_response(self, error: ApiError, request: StorageRequest | None) -> Response:
        return xml_error(error, request)

    async def __call__(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if scope.get("path") == IDENTITY_PATH:
            body = json.dumps({"service": self.service, "data": self.identity, "pid": os.getpid()}).encode()
            await send_response(send, None, Response(200, body, content_type="application/json"))
            return
        request: StorageRequest | None = None
        head = scope.get("method") == "HEAD"
        try:
            request = build_request(scope)
            response = await self._handle(request, receive)
        except ApiError as exc:
            response = self.error_response(exc, request)
        except StorageError as exc:
            response = self.error_response(from_storage_error(exc), request)
        except Exception:  # a bug: answered as the service answers its own failures, and logged
            log.exception("storage endpoint failed (%s %s, request id %s)", scope.get("method"),
                          self.service, request.request_id if request else "-")
            response = self.error_response(ApiError(500, "InternalError"), request)
        await send_response(send, request, response, head=head)

    async def _handle(self, request: StorageRequest, receive: Receive) -> Response:
        account = account_of(request, self.accounts)
        operation = self.route(request)
        await authorize(request, account, self.service, operation.access, operation.scope, self.clock.now(),
                        public_access=operation.public_access, policy=operation.policy)
        declared = _declared_length(request, operation.body_limit)
        if operation.streamed and (declared is None or declared > STREAM_ABOVE):
            request.stream = _body_pieces(receive, operation.body_limit, declared)
            return await operation.handler(request)
        body = await read_body(receive, operation.body_limit)
        if body is None:
            raise _too_large(operation.body_limit)
        if declared is not None and declared != len(body):
            raise _shorter()
        request.body = body
        return await operation.handler(request)


def _declared_length(request: StorageRequest, limit: int) -> int | None:
    declared = request.headers.get("content-length")
    if declared is None:
        return None
    if not declared.strip().isdigit():
        raise ApiError(400, "InvalidHeaderValue", None, {"HeaderName": "Content-Length", "HeaderValue": declared})
    if int(declared) > limit:
        raise _too_large(limit)
    return int(declared)


async def _body_pieces(receive: Receive, limit: int, declared: int | None) -> AsyncIterator[bytes]:
    """The body as it arrives, with `read_body`'s limits: past `limit` the rest is drained and the
    iteration fails (the store then drops what it kept), as it does for a body shorter than its
    Content-Length or a client gone before the end."""
    size = 0
    more = True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ApiError(400, "InvalidInput", "The client closed the connection before the body was complete.")
        chunk = message.get("body", b"")
        more = bool(message.get("more_body", False))
        size += len(chunk)
        if size > limit:
            while more and (message := await receive())["type"] != "http.disconnect":
                more = bool(message.get("more_body", False))
            raise _too_large(limit)
        if chunk:
            yield chunk
    if declared is not None and size != declared:
        raise _shorter()


def _too_large(limit: int) -> ApiError:
    return ApiError(413, "RequestBodyTooLarge", None, {"MaxLimit": str(limit)})


def _shorter() -> ApiError:
    return ApiError(400, "InvalidInput", "The request body is shorter than its Content-Length.")


def integer(request: StorageRequest, name: str, default: int | None, low: int, high: int) -> int | None:
    """A numeric query parameter: 400 InvalidQueryParameterValue if not a number, OutOfRange... if outside."""
    raw = request.query.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ApiError(400, "InvalidQueryParameterValue", None,
                       {"QueryParameterName": name, "QueryParameterValue": raw}) from None
    if not low <= value <= high:
        raise ApiError(400, "OutOfRangeQueryParameterValue", None,
                       {"QueryParameterName": name, "QueryParameterValue": raw, "MinimumAllowed": str(low),
                        "MaximumAllowed": str(high)})
    return value


def metadata_from(request: StorageRequest) -> dict[str, str]:
    """`x-ms-meta-*` headers; names keep the case the client sent them in."""
    names = {n.lower(): n for n in request.meta_names}
    result = {}
    for name, value in request.headers.items():
        if name.startswith("x-ms-meta-"):
            key = name[10:]
            result[names.get(key, key)] = value
    return result


def xml_document(body: bytes, root: str) -> ET.Element:
    """The request's XML body, whose root element must be `root`: 400 InvalidXmlDocument otherwise."""
    try:
        element = ET.fromstring(body)
    except ET.ParseError:
        raise ApiError(400, "InvalidXmlDocument") from None
    if element.tag != root:
        raise ApiError(400, "InvalidXmlDocument")
    return element


_DISABLED = "<Version>1.0</Version><Enabled>false</Enabled><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy>"


def service_properties_xml(extra: str = "") -> bytes:
    """Get Service Properties as a new account answers it: logging, metrics and CORS off."""
    return ('<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties><Logging><Version>1.0</Version>'
            "<Read>false</Read><Write>false</Write><Delete>false</Delete><RetentionPolicy><Enabled>false</Enabled>"
            f"</RetentionPolicy></Logging><HourMetrics>{_DISABLED}</HourMetrics><MinuteMetrics>{_DISABLED}"
            f"</MinuteMetrics><Cors />{extra}</StorageServiceProperties>").encode()


def service_level(request: StorageRequest, service: str, extra_xml: str = "") -> Operation | None:
    """Get / Set `service` Service Properties and Get Service Stats, alike for the three services
    (the properties are the defaults; setting them and geo-replication stats are not supported)."""
    comp = request.query.get("comp")
    if comp == "properties" and request.query.get("restype") == "service":
        if request.method != "GET":
            raise not_supported(f"Set {service} Service Properties")
        body = service_properties_xml(extra_xml)

        async def properties(request: StorageRequest) -> Response:
            return Response(200, body, content_type="application/xml")

        return Operation(f"Get{service}ServiceProperties", properties, Access("s", "r"))
    if comp == "stats":
        raise not_supported(f"Get {service} Service Stats (geo-replication)")
    return None


def unknown_operation(request: StorageRequest) -> ApiError:
    comp = request.query.get("comp")
    if comp is not None:
        return ApiError(400, "InvalidQueryParameterValue", None,
                        {"QueryParameterName": "comp", "QueryParameterValue": comp,
                         "Reason": "This operation is not supported on this resource."})
    return ApiError(405, "UnsupportedHttpVerb", None, {"Verb": request.method})
