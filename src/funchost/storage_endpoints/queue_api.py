"""The Queue service REST API over the `QueueService` port.

https://learn.microsoft.com/rest/api/storageservices/queue-service-rest-api

    GET    /?comp=list                     List Queues (prefix, marker, maxresults, include=metadata)
    GET    /?restype=service&comp=properties  Get Queue Service Properties (the defaults)
    PUT    /q                              Create Queue (201; 204 when it exists with the same metadata)
    DELETE /q                              Delete Queue
    GET    /q?comp=metadata                Get Queue Metadata (also HEAD)
    PUT    /q?comp=metadata                Set Queue Metadata
    GET    /q?comp=acl                     Get Queue ACL (no stored policies)
    POST   /q/messages                     Put Message (visibilitytimeout, messagettl)
    GET    /q/messages                     Get Messages (numofmessages, visibilitytimeout) / peekonly=true
    DELETE /q/messages                     Clear Messages
    PUT    /q/messages/{id}                Update Message (popreceipt, visibilitytimeout, optional text)
    DELETE /q/messages/{id}                Delete Message (popreceipt)

A message put or made visible here wakes the host's queue listeners at once: the queues are the
host's, behind its wake-up wrapper (`storage/wakeups.py`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from xml.sax.saxutils import escape

from funchost.storage.queue_rules import MAX_GET_MESSAGES, MAX_VISIBILITY
from funchost.storage.queues import QueueMessage
from funchost.storage_endpoints.app import (
    Operation,
    StorageApp,
    integer,
    metadata_from,
    service_level,
    unknown_operation,
    xml_document,
)
from funchost.storage_endpoints.errors import ApiError, not_supported
from funchost.storage_endpoints.sas import Access, Scope
from funchost.storage_endpoints.wire import Response, StorageRequest, http_date

NEVER = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
MESSAGE_BODY_LIMIT = 1024 * 1024  # the XML around at most 64 KiB of text
MAX_LIST = 5000
XML_HEAD = '<?xml version="1.0" encoding="utf-8"?>'


def _xml(status: int, body: str) -> Response:
    return Response(status, (XML_HEAD + body).encode("utf-8"), content_type="application/xml")


def _message_xml(message: QueueMessage, *, with_text: bool, with_receipt: bool) -> str:
    parts = [f"<MessageId>{message.id}</MessageId>",
             f"<InsertionTime>{http_date(message.insertion_time)}</InsertionTime>",
             f"<ExpirationTime>{http_date(message.expiration_time or NEVER)}</ExpirationTime>"]
    if with_receipt and message.pop_receipt is not None and message.next_visible_time is not None:
        parts.append(f"<PopReceipt>{escape(message.pop_receipt)}</PopReceipt>")
        parts.append(f"<TimeNextVisible>{http_date(message.next_visible_time)}</TimeNextVisible>")
    if with_text:
        parts.append(f"<DequeueCount>{message.dequeue_count}</DequeueCount>")
        parts.append(f"<MessageText>{escape(message.content)}</MessageText>")
    return "<QueueMessage>" + "".join(parts) + "</QueueMessage>"


def message_text(body: bytes) -> str:
    """`<QueueMessage><MessageText>..</MessageText></QueueMessage>` -> the text, verbatim."""
    root = xml_document(body, "QueueMessage")
    for child in root:
        if child.tag.lower() == "messagetext":
            return child.text or ""
    raise ApiError(400, "InvalidXmlDocument", "The MessageText element is missing.")


class QueueApp(StorageApp):
    service = "queue"

    def route(self, request: StorageRequest) -> Operation:
        parts = request.resource.split("/") if request.resource else []
        method, comp = request.method, request.query.get("comp")
        if not parts:
            if method == "GET" and comp == "list":
                return Operation("ListQueues", self.list_queues, Access("s", "l"))
            found = service_level(request, "Queue")
            if found is None:
                raise unknown_operation(request)
            return found
        queue = parts[0]
        scope = Scope(container=queue)
        if len(parts) == 1:
            return self._queue_route(request, method, comp, scope)
        if parts[1] != "messages" or len(parts) > 3:
            raise ApiError(400, "InvalidUri")
        if len(parts) == 2:
            if method == "POST":
                return Operation("PutMessage", self.put_message, Access("o", "a"), scope, MESSAGE_BODY_LIMIT)
            if method == "GET":
                if request.query.get("peekonly", "").lower() == "true":
                    return Operation("PeekMessages", self.peek_messages, Access("o", "rp"), scope)
                return Operation("GetMessages", self.get_messages, Access("o", "p"), scope)
            if method == "DELETE":
                return Operation("ClearMessages", self.clear_messages, Access("o", "d" if "ss" in request.query
                                                                             else "p"), scope)
            raise unknown_operation(request)
        if method == "PUT":
            return Operation("UpdateMessage", self.update_message, Access("o", "u"), scope, MESSAGE_BODY_LIMIT)
        if method == "DELETE":
            return Operation("DeleteMessage", self.delete_message, Access("o", "p"), scope)
        raise unknown_operation(request)

    def _queue_route(self, request: StorageRequest, method: str, comp: str | None, scope: Scope) -> Operation:
        if comp is None:
            if method == "PUT":
                return Operation("CreateQueue", self.create_queue, Access("c", "c"), scope)
            if method == "DELETE":
                return Operation("DeleteQueue", self.delete_queue, Access("c", "d"), scope)
        elif comp == "metadata":
            if method in ("GET", "HEAD"):
                return Operation("GetQueueMetadata", self.get_metadata, Access("c", "r"), scope)
            if method == "PUT":
                return Operation("SetQueueMetadata", self.set_metadata, Access("c", "w"), scope)
        elif comp == "acl":
            if method in ("GET", "HEAD"):
                return Operation("GetQueueACL", self.get_acl, Access("c", "r"), scope)
            if method == "PUT":
                raise not_supported("Set Queue ACL (stored access policies)")
        raise unknown_operation(request)

    # -- service ---------------------------------------------------------------------------------

    async def list_queues(self, request: StorageRequest) -> Response:
        service = self.storage.queues(request.account)
        prefix = request.query.get("prefix", "")
        marker = request.query.get("marker", "")
        limit = integer(request, "maxresults", MAX_LIST, 1, 2**31 - 1) or MAX_LIST
        names = [n for n in await service.list_queues(prefix or None) if n > marker]
        page, more = names[:min(limit, MAX_LIST)], len(names) > min(limit, MAX_LIST)
        with_metadata = "metadata" in request.query.get("include", "").split(",")
        items = []
        for name in page:
            metadata = ""
            if with_metadata:
                props = await service.get_queue_properties(name)
                metadata = "<Metadata>" + "".join(f"<{k}>{escape(v)}</{k}>" for k, v in props.metadata.items()) \
                    + "</Metadata>"
            items.append(f"<Queue><Name>{name}</Name>{metadata}</Queue>")
        endpoint = f"http://{request.host}/{request.account}/"
        body = (f'<EnumerationResults ServiceEndpoint="{escape(endpoint)}"><Prefix>{escape(prefix)}</Prefix>'
                + (f"<Marker>{escape(marker)}</Marker>" if marker else "")
                + f"<MaxResults>{limit}</MaxResults><Queues>{''.join(items)}</Queues>"
                + f"<NextMarker>{page[-1] if more else ''}</NextMarker></EnumerationResults>")
        return _xml(200, body)

    # -- queues ----------------------------------------------------------------------------------

    async def create_queue(self, request: StorageRequest) -> Response:
        created = await self.storage.queues(request.account).create_queue(request.resource, metadata_from(request))
        return Response(201 if created else 204)

    async def delete_queue(self, request: StorageRequest) -> Response:
        await self.storage.queues(request.account).delete_queue(request.resource)
        return Response(204)

    async def get_metadata(self, request: StorageRequest) -> Response:
        props = await self.storage.queues(request.account).get_queue_properties(request.resource)
        response = Response(200).add("x-ms-approximate-messages-count", props.approximate_message_count)
        for name, value in props.metadata.items():
            response.add(f"x-ms-meta-{name}", value)
        return response

    async def set_metadata(self, request: StorageRequest) -> Response:
        await self.storage.queues(request.account).set_queue_metadata(request.resource, metadata_from(request))
        return Response(204)

    async def get_acl(self, request: StorageRequest) -> Response:
        await self.storage.queues(request.account).get_queue_properties(request.resource)  # 404 if missing
        return _xml(200, "<SignedIdentifiers/>")

    # -- messages --------------------------------------------------------------------------------

    def _queue_of(self, request: StorageRequest) -> str:
        return request.resource.split("/", 1)[0]

    async def put_message(self, request: StorageRequest) -> Response:
        text = message_text(request.body)
        visibility = integer(request, "visibilitytimeout", 0, 0, MAX_VISIBILITY) or 0
        ttl = integer(request, "messagettl", None, -1, 2**31 - 1)
        if ttl is not None and (ttl == 0 or ttl < -1):
            raise ApiError(400, "InvalidQueryParameterValue", None,
                           {"QueryParameterName": "messagettl", "QueryParameterValue": str(ttl)})
        message = await self.storage.queues(request.account).put_message(
            self._queue_of(request), text, visibility_timeout=visibility, time_to_live=ttl)
        return _xml(201, "<QueueMessagesList>" + _message_xml(message, with_text=False, with_receipt=True)
                    + "</QueueMessagesList>")

    async def get_messages(self, request: StorageRequest) -> Response:
        count = integer(request, "numofmessages", 1, 1, MAX_GET_MESSAGES) or 1
        visibility = integer(request, "visibilitytimeout", 30, 1, MAX_VISIBILITY) or 30
        messages = await self.storage.queues(request.account).get_messages(
            self._queue_of(request), max_messages=count, visibility_timeout=visibility)
        body = "".join(_message_xml(m, with_text=True, with_receipt=True) for m in messages)
        return _xml(200, f"<QueueMessagesList>{body}</QueueMessagesList>")

    async def peek_messages(self, request: StorageRequest) -> Response:
        count = integer(request, "numofmessages", 1, 1, MAX_GET_MESSAGES) or 1
        messages = await self.storage.queues(request.account).peek_messages(self._queue_of(request),
                                                                            max_messages=count)
        body = "".join(_message_xml(m, with_text=True, with_receipt=False) for m in messages)
        return _xml(200, f"<QueueMessagesList>{body}</QueueMessagesList>")

    async def clear_messages(self, request: StorageRequest) -> Response:
        await self.storage.queues(request.account).clear_messages(self._queue_of(request))
        return Response(204)

    async def update_message(self, request: StorageRequest) -> Response:
        queue, _, message_id = request.resource.partition("/messages/")
        receipt = _required(request, "popreceipt")
        visibility = integer(request, "visibilitytimeout", None, 0, MAX_VISIBILITY)
        if visibility is None:
            raise ApiError(400, "MissingRequiredQueryParameter", "A query parameter that's mandatory for this "
                           "request is not specified.", {"QueryParameterName": "visibilitytimeout"})
        text = message_text(request.body) if request.body.strip() else None
        updated = await self.storage.queues(request.account).update_message(
            queue, message_id, receipt, visibility_timeout=visibility, content=text)
        return (Response(204).add("x-ms-popreceipt", updated.pop_receipt)
                .add("x-ms-time-next-visible", http_date(updated.next_visible_time)))

    async def delete_message(self, request: StorageRequest) -> Response:
        queue, _, message_id = request.resource.partition("/messages/")
        await self.storage.queues(request.account).delete_message(queue, message_id, _required(request, "popreceipt"))
        return Response(204)


def _required(request: StorageRequest, name: str) -> str:
    value = request.query.get(name)
    if not value:
        raise ApiError(400, "MissingRequiredQueryParameter", "A query parameter that's mandatory for this request "
                       "is not specified.", {"QueryParameterName": name})
    return value
