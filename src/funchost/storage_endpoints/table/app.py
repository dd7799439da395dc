"""Routing and handlers of the Table service REST API (https://learn.microsoft.com/rest/api/storageservices/table-service-rest-api).

    GET    /Tables                         Query Tables ($filter, $top, NextTableName)
    POST   /Tables                         Create Table
    DELETE /Tables('t')                    Delete Table
    POST   /t                              Insert Entity (Prefer: return-no-content -> 204)
    GET    /t() or /t                      Query Entities ($filter, $select, $top, NextPartitionKey/NextRowKey)
    GET    /t(PartitionKey='p',RowKey='r') Get Entity
    PUT    same                            Update Entity (no If-Match: Insert Or Replace)
    PATCH / MERGE (or POST + X-HTTP-Method: MERGE)  Merge Entity (no If-Match: Insert Or Merge)
    DELETE same                            Delete Entity (If-Match required)
    POST   /$batch                         Entity group transaction (batch.py)
    GET    /t?comp=acl                     Get Table ACL (no stored policies)
    GET    /?restype=service&comp=properties  Get Table Service Properties (the defaults)
"""

from __future__ import annotations

import base64
import binascii
import re
from datetime import UTC, datetime

from funchost.storage.table_filter import parse_filter
from funchost.storage.tables import MAX_QUERY_RESULTS, Entity, TableService
from funchost.storage_endpoints.app import Operation, StorageApp, integer, service_level
from funchost.storage_endpoints.errors import ApiError, json_error, not_supported, xml_error
from funchost.storage_endpoints.sas import Access, Scope
from funchost.storage_endpoints.table.odata import (
    content_type,
    dumps,
    entity_json,
    entity_properties,
    entity_url,
    parse_body,
    payload_level,
)
from funchost.storage_endpoints.wire import Response, StorageRequest

BODY_LIMIT = 4 * 1024 * 1024
_ENTITY = re.compile(r"^([A-Za-z0-9]+)\(\s*PartitionKey\s*=\s*'((?:[^']|'')*)'\s*,\s*RowKey\s*=\s*'((?:[^']|'')*)'\s*\)$")
_TABLE_ITEM = re.compile(r"^Tables\('((?:[^']|'')*)'\)$")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_COLLECTION = re.compile(r"^([A-Za-z0-9]+)(?:\(\))?$")


def _token(value: str) -> str:
    """An opaque, never empty continuation token (an empty key is a valid key)."""
    return "1!" + base64.urlsafe_b64encode(value.encode("utf-8")).decode("ascii")


def _untoken(value: str) -> str:
    try:
        if not value.startswith("1!"):
            raise ValueError(value)
        return base64.urlsafe_b64decode(value[2:].encode("ascii")).decode("utf-8")
    except (binascii.Error, UnicodeError, ValueError):
        raise ApiError(400, "InvalidInput", "The continuation token is not valid.") from None


def _prefer(request: StorageRequest) -> str | None:
    prefer = (request.headers.get("prefer") or "").lower()
    if "return-no-content" in prefer:
        return "return-no-content"
    if "return-content" in prefer:
        return "return-content"
    return None


class TableApp(StorageApp):
    service = "table"

    def error_response(self, error: ApiError, request: StorageRequest | None) -> Response:
        if request is not None and request.query.get("comp") in ("acl", "properties", "stats"):
            return xml_error(error, request)
        return json_error(error, request)

    def base(self, request: StorageRequest) -> str:
        return f"{request.scheme}://{request.host}/{request.account}"

    def route(self, request: StorageRequest) -> Operation:
        resource, method = request.resource, request.method
        comp = request.query.get("comp")
        if method == "POST" and request.headers.get("x-http-method", "").upper() in ("MERGE", "PATCH", "PUT",
                                                                                    "DELETE"):
            method = request.headers["x-http-method"].upper()
        if not resource:
            found = service_level(request, "Table")
            if found is None:
                raise ApiError(400, "InvalidUri")
            return found
        if resource in ("Tables", "Tables()"):
            if method == "GET":
                return Operation("QueryTables", self.query_tables, Access("s", "l"))
            if method == "POST":
                return Operation("CreateTable", self.create_table, Access("s", "c"), body_limit=BODY_LIMIT)
            raise ApiError(405, "UnsupportedHttpVerb", None, {"Verb": method})
        item = _TABLE_ITEM.match(resource)
        if item:
            name = item.group(1).replace("''", "'")
            if method == "DELETE":
                return Operation("DeleteTable", self.delete_table, Access("s", "d"), Scope(container=name))
            if method == "GET":
                return Operation("GetTable", self.get_table, Access("s", "r"), Scope(container=name))
            raise ApiError(405, "UnsupportedHttpVerb", None, {"Verb": method})
        if resource == "$batch":
            if method != "POST":
                raise ApiError(405, "UnsupportedHttpVerb", None, {"Verb": method})
            from funchost.storage_endpoints.table.batch import BatchHandler

            return Operation("Batch", BatchHandler(self).handle, Access("o", "audr"), body_limit=BODY_LIMIT)
        entity = _ENTITY.match(resource)
        if entity:
            table, pk, rk = entity.group(1), entity.group(2).replace("''", "'"), entity.group(3).replace("''", "'")
            scope = Scope(container=table, partition_key=pk, row_key=rk)
            handlers = {"GET": ("GetEntity", self.get_entity, "r"), "PUT": ("UpdateEntity", self.update_entity, "u"),
                        "PATCH": ("MergeEntity", self.merge_entity, "u"), "MERGE": ("MergeEntity", self.merge_entity, "u"),
                        "DELETE": ("DeleteEntity", self.delete_entity, "d")}
            if method not in handlers:
                raise ApiError(405, "UnsupportedHttpVerb", None, {"Verb": method})
            name, handler, permission = handlers[method]
            # Insert Or Replace / Insert Or Merge (no If-Match) also need the add permission.
            if method != "GET" and method != "DELETE" and "if-match" not in request.headers:
                permission = "a" if "ss" not in request.query else "u"
            return Operation(name, handler, Access("o", permission), scope, BODY_LIMIT)
        collection = _COLLECTION.match(resource)
        if collection:
            table = collection.group(1)
            if comp == "acl":
                if method in ("GET", "HEAD"):
                    return Operation("GetTableACL", self.get_acl, Access("c", "r"), Scope(container=table))
                raise not_supported("Set Table ACL (stored access policies)")
            if method == "GET":
                return Operation("QueryEntities", self.query_entities, Access("o", "r"), Scope(container=table))
            if method == "POST":
                return Operation("InsertEntity", self.insert_entity, Access("o", "a"), Scope(container=table),
                                 BODY_LIMIT)
            raise ApiError(405, "UnsupportedHttpVerb", None, {"Verb": method})
        raise ApiError(400, "InvalidUri")

    def tables(self, request: StorageRequest) -> TableService:
        return self.storage.tables(request.account)

    # -- service and tables ----------------------------------------------------------------------

    async def query_tables(self, request: StorageRequest) -> Response:
        level = payload_level(request)
        top = integer(request, "$top", MAX_QUERY_RESULTS, 1, MAX_QUERY_RESULTS) or MAX_QUERY_RESULTS
        after = _untoken(request.query["nexttablename"]) if request.query.get("nexttablename") else None
        text = request.query.get("$filter")
        parsed = parse_filter(text) if text else None
        found: list[str] = []
        next_name: str | None = None
        while True:
            names, more = await self.tables(request).list_tables(after=after, top=MAX_QUERY_RESULTS)
            for name in names:
                pseudo = Entity("", "", _EPOCH, "", {"TableName": ("Edm.String", name)})
                if parsed is None or parsed.matches(pseudo):
                    if len(found) == top:
                        next_name = name
                        break
                    found.append(name)
            if next_name is not None or more is None:
                break
            after = more
        base = self.base(request)
        value = [self._table_json(name, level, base) for name in found]
        payload: dict[str, object] = {"value": value}
        if level != "nometadata":
            payload = {"odata.metadata": f"{base}/$metadata#Tables", **payload}
        response = Response(200, dumps(payload), content_type=content_type(level))
        if next_name is not None:
            response.add("x-ms-continuation-NextTableName", _token(next_name))
        return response

    def _table_json(self, name: str, level: str, base: str, *, single: bool = False) -> dict[str, object]:
        out: dict[str, object] = {}
        if level != "nometadata" and single:
            out["odata.metadata"] = f"{base}/$metadata#Tables/@Element"
        if level == "fullmetadata":
            out.update({"odata.type": f"{base.rsplit('/', 1)[-1]}.Tables", "odata.id": f"{base}/Tables('{name}')",
                        "odata.editLink": f"Tables('{name}')"})
        out["TableName"] = name
        return out

    async def create_table(self, request: StorageRequest) -> Response:
        level = payload_level(request)
        data = parse_body(request.body)
        name = data.get("TableName")
        if not isinstance(name, str):
            raise ApiError(400, "PropertiesNeedValue", "The TableName property is required.")
        created = await self.tables(request).create_table(name)
        prefer = _prefer(request)
        if prefer == "return-no-content":
            return Response(204).add("Preference-Applied", prefer)
        body = dumps(self._table_json(created, level, self.base(request), single=True))
        response = Response(201, body, content_type=content_type(level))
        return response.add("Preference-Applied", prefer) if prefer else response

    async def delete_table(self, request: StorageRequest) -> Response:
        name = _TABLE_ITEM.match(request.resource).group(1).replace("''", "'")  # type: ignore[union-attr]
        await self.tables(request).delete_table(name)
        return Response(204)

    async def get_table(self, request: StorageRequest) -> Response:
        level = payload_level(request)
        name = _TABLE_ITEM.match(request.resource).group(1).replace("''", "'")  # type: ignore[union-attr]
        names, _ = await self.tables(request).list_tables(after=name, top=1)
        if not names or names[0].lower() != name.lower():
            raise ApiError(404, "TableNotFound")
        return Response(200, dumps(self._table_json(names[0], level, self.base(request), single=True)),
                        content_type=content_type(level))

    async def get_acl(self, request: StorageRequest) -> Response:
        table = _COLLECTION.match(request.resource).group(1)  # type: ignore[union-attr]
        await self.tables(request).query_entities(table, top=1)  # 404 TableNotFound when missing
        body = '<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers />'
        return Response(200, body.encode(), content_type="application/xml")

    # -- entities --------------------------------------------------------------------------------

    def _keys(self, request: StorageRequest) -> tuple[str, str, str]:
        match = _ENTITY.match(request.resource)
        assert match is not None
        return match.group(1), match.group(2).replace("''", "'"), match.group(3).replace("''", "'")

    def _entity_response(self, status: int, entity: Entity, request: StorageRequest, table: str) -> Response:
        level = payload_level(request)
        select = _select(request)
        body = dumps(entity_json(entity, level, self.base(request), table, select, single=True))
        return Response(status, body, content_type=content_type(level)).add("ETag", entity.etag)

    async def insert_entity(self, request: StorageRequest) -> Response:
        table = _COLLECTION.match(request.resource).group(1)  # type: ignore[union-attr]
        payload_level(request)
        pk, rk, properties = entity_properties(parse_body(request.body))
        entity = await self.tables(request).insert_entity(table, pk, rk, properties)
        prefer = _prefer(request)
        location = entity_url(self.base(request), table, entity)
        if prefer == "return-no-content":
            response = Response(204).add("ETag", entity.etag).add("Preference-Applied", prefer)
            return response.add("Location", location).add("DataServiceId", location)
        response = self._entity_response(201, entity, request, table).add("Location", location)
        return response.add("Preference-Applied", prefer) if prefer else response

    async def update_entity(self, request: StorageRequest, *, merge: bool = False) -> Response:
        table, pk, rk = self._keys(request)
        _, _, properties = entity_properties(parse_body(request.body))
        if_match = request.headers.get("if-match")
        entity = await self.tables(request).update_entity(table, pk, rk, properties, merge=merge, if_match=if_match)
        return Response(204).add("ETag", entity.etag)

    async def merge_entity(self, request: StorageRequest) -> Response:
        return await self.update_entity(request, merge=True)

    async def delete_entity(self, request: StorageRequest) -> Response:
        table, pk, rk = self._keys(request)
        if_match = request.headers.get("if-match")
        if not if_match:
            raise ApiError(400, "MissingRequiredHeader", "The If-Match header is required to delete an entity.",
                           {"HeaderName": "If-Match"})
        await self.tables(request).delete_entity(table, pk, rk, if_match=if_match)
        return Response(204)

    async def get_entity(self, request: StorageRequest) -> Response:
        table, pk, rk = self._keys(request)
        payload_level(request)
        entity = await self.tables(request).get_entity(table, pk, rk)
        return self._entity_response(200, entity, request, table)

    async def query_entities(self, request: StorageRequest) -> Response:
        table = _COLLECTION.match(request.resource).group(1)  # type: ignore[union-attr]
        level = payload_level(request)
        top = integer(request, "$top", MAX_QUERY_RESULTS, 1, MAX_QUERY_RESULTS) or MAX_QUERY_RESULTS
        after = None
        if request.query.get("nextpartitionkey"):
            after = (_untoken(request.query["nextpartitionkey"]), _untoken(request.query.get("nextrowkey", "")))
        entities, more = await self.tables(request).query_entities(table, filter=request.query.get("$filter") or None,
                                                                   top=top, after=after)
        base = self.base(request)
        select = _select(request)
        payload: dict[str, object] = {"value": [entity_json(e, level, base, table, select) for e in entities]}
        if level != "nometadata":
            payload = {"odata.metadata": f"{base}/$metadata#{table}", **payload}
        response = Response(200, dumps(payload), content_type=content_type(level))
        if more is not None:
            response.add("x-ms-continuation-NextPartitionKey", _token(more[0]))
            response.add("x-ms-continuation-NextRowKey", _token(more[1]))
        return response


def _select(request: StorageRequest) -> list[str] | None:
    text = request.query.get("$select")
    if not text or text.strip() == "*":
        return None
    return [name.strip() for name in text.split(",") if name.strip()]

