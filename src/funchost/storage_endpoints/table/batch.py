"""Entity group transactions: `POST /$batch` (https://learn.microsoft.com/rest/api/storageservices/performing-entity-group-transactions).

The body is `multipart/mixed` with one changeset of up to 100 operations on one table and one
PartitionKey, each entity at most once. All operations run in one transaction (the port's
`submit_batch`); the answer is 202 with one part per operation, or, when an operation fails,
one part with that operation's error, its message prefixed by its zero-based index (`"1:..."`).
"""

from __future__ import annotations

import re
import uuid
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from funchost.errors import StorageError
from funchost.storage.table_rules import MAX_BATCH_OPERATIONS
from funchost.storage.tables import BatchFailed, BatchOperation, Entity
from funchost.storage_endpoints.errors import MESSAGES, ApiError
from funchost.storage_endpoints.table.odata import (
    content_type,
    dumps,
    entity_json,
    entity_properties,
    parse_body,
)
from funchost.storage_endpoints.wire import Response, StorageRequest

if TYPE_CHECKING:
    from funchost.storage_endpoints.table.app import TableApp

_BOUNDARY = re.compile(r'boundary="?([^";]+)"?', re.IGNORECASE)
_ENTITY = re.compile(r"^/?([A-Za-z0-9]+)\(\s*PartitionKey\s*=\s*'((?:[^']|'')*)'\s*,\s*RowKey\s*=\s*'((?:[^']|'')*)'\s*\)$")
_COLLECTION = re.compile(r"^/?([A-Za-z0-9]+)(?:\(\))?$")
STATUS_TEXT = {200: "OK", 201: "Created", 204: "No Content", 400: "Bad Request", 404: "Not Found",
               409: "Conflict", 412: "Precondition Failed", 413: "Request Entity Too Large", 500: "Internal Server Error"}


def _bad(message: str, code: str = "InvalidInput") -> ApiError:
    return ApiError(400, code, message)


def _split(body: bytes, boundary: str) -> list[bytes]:
    marker = b"--" + boundary.encode("latin-1")
    pieces = body.split(marker)
    if len(pieces) < 3:
        raise _bad("The batch body has no parts.")
    parts = []
    for piece in pieces[1:]:
        if piece.startswith(b"--"):
            break
        parts.append(piece.strip(b"\r\n"))
    return parts


def _headers_and_body(part: bytes) -> tuple[dict[str, str], bytes]:
    text = part.replace(b"\r\n", b"\n")
    head, _, body = text.partition(b"\n\n")
    headers = {}
    for line in head.decode("latin-1").split("\n"):
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return headers, body


class _Sub:
    def __init__(self, method: str, url: str, headers: dict[str, str], body: bytes) -> None:
        self.method, self.url, self.headers, self.body = method, url, headers, body


def parse_changeset(request: StorageRequest) -> tuple[str, list[_Sub]]:
    match = _BOUNDARY.search(request.headers.get("content-type", ""))
    if match is None or "multipart/mixed" not in request.headers.get("content-type", "").lower():
        raise _bad("A batch request must be multipart/mixed with a boundary.")
    batch_parts = _split(request.body, match.group(1))
    if len(batch_parts) != 1:
        raise not_a_changeset()
    headers, body = _headers_and_body(batch_parts[0])
    inner = _BOUNDARY.search(headers.get("content-type", ""))
    if inner is None:
        raise not_a_changeset()
    subs = []
    for part in _split(body, inner.group(1)):
        _, http = _headers_and_body(part)
        lines = http.split(b"\n", 1)
        request_line = lines[0].decode("latin-1").strip().split(" ")
        if len(request_line) < 2:
            raise _bad("A batch part has no request line.")
        sub_headers, sub_body = _headers_and_body(lines[1] if len(lines) > 1 else b"")
        subs.append(_Sub(request_line[0].upper(), request_line[1], sub_headers, sub_body.strip()))
    return match.group(1), subs


def not_a_changeset() -> ApiError:
    from funchost.storage_endpoints.errors import not_supported

    return not_supported("batches other than one changeset of entity operations (queries in a batch)")


def _operation(sub: _Sub, account: str) -> tuple[str, BatchOperation]:
    path = unquote(urlparse(sub.url).path)
    prefix = f"/{account}/"
    path = path[len(prefix) - 1:] if path.startswith(prefix) else path
    method = sub.headers.get("x-http-method", sub.method).upper() if sub.method == "POST" else sub.method
    if_match = sub.headers.get("if-match")
    entity = _ENTITY.match(path)
    if entity is not None:
        table, pk, rk = entity.group(1), entity.group(2).replace("''", "'"), entity.group(3).replace("''", "'")
        if method == "DELETE":
            return table, BatchOperation("delete", pk, rk, if_match=if_match or "")
        _, _, properties = entity_properties(parse_body(sub.body))
        kinds = {"PUT": ("replace", "upsert-replace"), "PATCH": ("merge", "upsert-merge"),
                 "MERGE": ("merge", "upsert-merge")}
        if method not in kinds:
            raise _bad(f"{method} is not an entity operation of a changeset.")
        kind = kinds[method][0 if if_match else 1]
        return table, BatchOperation(kind, pk, rk, properties, if_match)
    collection = _COLLECTION.match(path)
    if collection is not None and method == "POST":
        pk, rk, properties = entity_properties(parse_body(sub.body))
        return collection.group(1), BatchOperation("insert", pk, rk, properties)
    if method == "GET":
        raise not_a_changeset()
    raise _bad(f"The batch operation {method} {sub.url} is not valid.")


class BatchHandler:
    def __init__(self, app: TableApp) -> None:
        self.app = app

    async def handle(self, request: StorageRequest) -> Response:
        boundary, subs = parse_changeset(request)
        if len(subs) > MAX_BATCH_OPERATIONS:  # before parsing them all
            return self._failure(request, boundary, 0, ApiError(
                400, "InvalidInput", f"The batch request operation exceeds the maximum {MAX_BATCH_OPERATIONS} "
                                     "changes per change set."))
        tables: set[str] = set()
        operations: list[BatchOperation] = []
        for index, sub in enumerate(subs):
            try:
                table, op = _operation(sub, request.account)
            except ApiError as exc:
                return self._failure(request, boundary, index, exc)
            tables.add(table.lower())
            operations.append(op)
        if not operations:
            raise _bad("The changeset is empty.")
        if len(tables) > 1:
            raise _bad("All operations of a batch must be on the same table.")
        table_name = next(iter(tables))
        try:
            results = await self.app.tables(request).submit_batch(table_name, operations)
        except BatchFailed as failed:
            return self._failure(request, boundary, failed.index, _api_error(failed.error))
        return self._success(request, boundary, subs, results, table_name)

    def _success(self, request: StorageRequest, boundary: str, subs: list[_Sub], results: list[Entity | None],
                 table: str) -> Response:
        parts = []
        for index, (sub, entity) in enumerate(zip(subs, results, strict=True)):
            lines = []
            body = b""
            if entity is not None and sub.method == "POST" and "x-http-method" not in sub.headers \
                    and "return-no-content" not in sub.headers.get("prefer", "").lower():
                level = _level(sub.headers.get("accept", ""))
                body = dumps(entity_json(entity, level, self.app.base(request), table, single=True))
                status = 201
                lines.append(f"Content-Type: {content_type(level)}")
            else:
                status = 204
            lines += [f"Content-ID: {sub.headers.get('content-id', index + 1)}", "X-Content-Type-Options: nosniff",
                      "Cache-Control: no-cache", "DataServiceVersion: 3.0;"]
            if entity is not None:
                lines.append(f"ETag: {entity.etag}")
                if status == 204 and "return-no-content" in sub.headers.get("prefer", "").lower():
                    lines.append("Preference-Applied: return-no-content")
            parts.append(_http_part(status, lines, body))
        return _multipart(boundary, parts)

    def _failure(self, request: StorageRequest, boundary: str, index: int, error: ApiError) -> Response:
        payload = {"odata.error": {"code": error.code, "message": {
            "lang": "en-US", "value": f"{index}:{error.message}\nRequestId:{request.request_id}"}}}
        lines = ["Content-ID: " + str(index + 1), "X-Content-Type-Options: nosniff", "Cache-Control: no-cache",
                 "DataServiceVersion: 3.0;", "Content-Type: application/json;odata=minimalmetadata;charset=utf-8"]
        return _multipart(boundary, [_http_part(error.status, lines, dumps(payload))])


def _api_error(error: StorageError) -> ApiError:
    text = str(error)
    detail = text[len(error.code) + 2:] if text.startswith(f"{error.code}: ") else text
    return ApiError(error.status, error.code, MESSAGES.get(error.code, detail))


def _level(accept: str) -> str:
    for level in ("nometadata", "fullmetadata"):
        if f"odata={level}" in accept.replace(" ", ""):
            return level
    return "minimalmetadata"


def _http_part(status: int, lines: list[str], body: bytes) -> bytes:
    head = f"HTTP/1.1 {status} {STATUS_TEXT.get(status, 'Error')}\r\n" + "".join(f"{line}\r\n" for line in lines)
    return (f"Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n{head}\r\n").encode() + body


def _multipart(request_boundary: str, parts: list[bytes]) -> Response:
    outer = "batchresponse_" + str(uuid.uuid4())
    inner = "changesetresponse_" + str(uuid.uuid4())
    changeset = b"".join(f"--{inner}\r\n".encode() + part + b"\r\n" for part in parts) + f"--{inner}--\r\n".encode()
    body = (f"--{outer}\r\nContent-Type: multipart/mixed; boundary={inner}\r\n\r\n").encode() + changeset + \
        f"--{outer}--\r\n".encode()
    return Response(202, body, content_type=f"multipart/mixed; boundary={outer}")
