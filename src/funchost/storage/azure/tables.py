"""`TableService` over the official async SDK (`azure.data.tables.aio`), for Azurite, Azure, or
funchost's own Table endpoint.

The port addresses pages by key ("from this PartitionKey/RowKey on", "from this table name on")
where the service hands out opaque continuation tokens, so paging is expressed as a filter on
the keys. Deleting a missing entity or table is a 404 here as in the port (the SDK's delete
methods swallow it, so existence is checked first).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from azure.core import MatchConditions
from azure.data.tables import EdmType, EntityProperty, TableTransactionError, UpdateMode
from azure.data.tables.aio import TableServiceClient

from funchost.errors import InvalidInput, InvalidResourceName, StorageError
from funchost.storage.azure.errors import translate, translated
from funchost.storage.tables import (
    MAX_QUERY_RESULTS,
    BatchFailed,
    BatchOperation,
    Entity,
    TypedValue,
    table_error,
)


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _to_sdk(properties: Mapping[str, TypedValue]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, (edm, value) in properties.items():
        if edm == "Edm.Guid":
            out[name] = uuid.UUID(value)
        elif edm in ("Edm.Int32", "Edm.Int64"):
            out[name] = EntityProperty(value, EdmType.INT32 if edm == "Edm.Int32" else EdmType.INT64)
        else:
            out[name] = value
    return out


def _typed(value: Any) -> TypedValue:
    if isinstance(value, EntityProperty):
        edm = value.edm_type.value if isinstance(value.edm_type, EdmType) else str(value.edm_type)
        return _typed(value.value) if edm != "Edm.Int64" else ("Edm.Int64", int(value.value))
    if isinstance(value, bool):
        return "Edm.Boolean", value
    if isinstance(value, int):
        return "Edm.Int32", value
    if isinstance(value, float):
        return "Edm.Double", value
    if isinstance(value, datetime):
        return "Edm.DateTime", value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, uuid.UUID):
        return "Edm.Guid", str(value)
    if isinstance(value, bytes):
        return "Edm.Binary", value
    return "Edm.String", str(value)


def _entity(sdk: Any) -> Entity:
    metadata = sdk.metadata
    properties = {k: _typed(v) for k, v in sdk.items() if k not in ("PartitionKey", "RowKey")}
    timestamp = metadata.get("timestamp") or datetime.now(UTC)
    return Entity(sdk["PartitionKey"], sdk["RowKey"], timestamp, metadata.get("etag", ""), properties)


class AzureTableService:
    def __init__(self, connection_string: str, account_name: str, **client_options: Any) -> None:
        self.account_name = account_name
        self._client = TableServiceClient.from_connection_string(connection_string, **client_options)

    async def create_table(self, name: str) -> str:
        try:
            with translated():
                await self._client.create_table(name)
        except ValueError as exc:  # the SDK turns the service's 400 for a bad name into ValueError
            raise InvalidResourceName(str(exc).split("\n")[0]) from None
        return name

    async def _exists(self, name: str) -> bool:
        with translated():
            return bool([t async for t in self._client.query_tables(f"TableName eq {_quote(name)}")])

    async def delete_table(self, name: str) -> None:
        if not await self._exists(name):
            raise table_error(404, "TableNotFound", f"table '{name}' does not exist")
        with translated():
            await self._client.delete_table(name)

    async def list_tables(self, *, prefix: str | None = None, after: str | None = None,
                          top: int = MAX_QUERY_RESULTS) -> tuple[list[str], str | None]:
        with translated():
            names = sorted([t.name async for t in self._client.list_tables()], key=str.lower)
        names = [n for n in names if n.lower().startswith((prefix or "").lower())
                 and n.lower() >= (after or "").lower()]
        return names[:top], names[top] if len(names) > top else None

    async def insert_entity(self, table: str, partition_key: str, row_key: str,
                            properties: Mapping[str, TypedValue]) -> Entity:
        client = self._client.get_table_client(table)
        with translated():
            await client.create_entity({"PartitionKey": partition_key, "RowKey": row_key, **_to_sdk(properties)})
        return await self.get_entity(table, partition_key, row_key)

    async def update_entity(self, table: str, partition_key: str, row_key: str,
                            properties: Mapping[str, TypedValue], *, merge: bool, if_match: str | None) -> Entity:
        client = self._client.get_table_client(table)
        entity = {"PartitionKey": partition_key, "RowKey": row_key, **_to_sdk(properties)}
        mode = UpdateMode.MERGE if merge else UpdateMode.REPLACE
        with translated():
            if if_match is None:
                await client.upsert_entity(entity, mode=mode)
            elif if_match.strip() == "*":
                await client.update_entity(entity, mode=mode)
            else:
                await client.update_entity(entity, mode=mode, etag=if_match,
                                           match_condition=MatchConditions.IfNotModified)
        return await self.get_entity(table, partition_key, row_key)

    async def delete_entity(self, table: str, partition_key: str, row_key: str, *, if_match: str) -> None:
        await self.get_entity(table, partition_key, row_key)  # 404 as the port says (the SDK swallows it)
        client = self._client.get_table_client(table)
        with translated():
            if if_match.strip() == "*":
                await client.delete_entity(partition_key, row_key)
            else:
                await client.delete_entity(partition_key, row_key, etag=if_match,
                                           match_condition=MatchConditions.IfNotModified)

    async def get_entity(self, table: str, partition_key: str, row_key: str) -> Entity:
        with translated():
            return _entity(await self._client.get_table_client(table).get_entity(partition_key, row_key))

    async def query_entities(self, table: str, *, filter: str | None = None, top: int = MAX_QUERY_RESULTS,
                             after: tuple[str, str] | None = None) -> tuple[list[Entity], tuple[str, str] | None]:
        clauses = [f"({filter})"] if filter else []
        if after is not None:
            pk, rk = _quote(after[0]), _quote(after[1])
            clauses.append(f"(PartitionKey gt {pk} or (PartitionKey eq {pk} and RowKey ge {rk}))")
        client = self._client.get_table_client(table)
        found: list[Entity] = []
        with translated():
            query = " and ".join(clauses)
            size = min(top + 1, MAX_QUERY_RESULTS)
            pages = (client.query_entities(query, results_per_page=size) if query
                     else client.list_entities(results_per_page=size))
            async for item in pages:
                found.append(_entity(item))
                if len(found) > top:
                    break
        if len(found) > top:
            return found[:top], (found[top].partition_key, found[top].row_key)
        return found, None

    async def submit_batch(self, table: str, operations: Sequence[BatchOperation]) -> list[Entity | None]:
        client = self._client.get_table_client(table)
        actions: list[Any] = []
        for op in operations:
            entity = {"PartitionKey": op.partition_key, "RowKey": op.row_key, **_to_sdk(op.properties)}
            condition: dict[str, Any] = {}
            if op.if_match and op.if_match.strip() != "*":
                condition = {"etag": op.if_match, "match_condition": MatchConditions.IfNotModified}
            if op.kind == "insert":
                actions.append(("create", entity))
            elif op.kind == "delete":
                actions.append(("delete", entity, condition))
            else:
                mode = UpdateMode.MERGE if op.kind.endswith("merge") else UpdateMode.REPLACE
                verb = "upsert" if op.kind.startswith("upsert") else "update"
                actions.append((verb, entity, {"mode": mode, **condition}))
        try:
            await client.submit_transaction(actions)
        except ValueError as exc:  # refused by the SDK before sending (e.g. several partitions)
            raise BatchFailed(0, InvalidInput(str(exc), code="CommandsInBatchActOnDifferentPartitions")) from None
        except TableTransactionError as exc:
            raise BatchFailed(exc.index, translate(exc)) from None
        except StorageError:
            raise
        except Exception as exc:  # azure-core errors of the whole request
            from azure.core.exceptions import AzureError

            if isinstance(exc, AzureError):
                raise translate(exc) from None
            raise
        results: list[Entity | None] = []
        for op in operations:
            results.append(None if op.kind == "delete" else await self.get_entity(table, op.partition_key, op.row_key))
        return results

    async def aclose(self) -> None:
        await self._client.close()
