"""Azure Table storage's rules on names, keys, properties, batches and query sizes.

https://learn.microsoft.com/rest/api/storageservices/understanding-the-table-service-data-model

Checked once, by `ValidatingTableService`, before any backend sees a call, so every backend (and
the Table REST endpoint above them) answers a bad argument with the service's code. Rules that
need the stored entity (the size of a merged entity, an ETag) stay in the backends.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from funchost.errors import InvalidInput, InvalidResourceName, StorageError
from funchost.storage.tables import (
    MAX_QUERY_RESULTS,
    SYSTEM_PROPERTIES,
    BatchFailed,
    BatchOperation,
    Entity,
    TableService,
    TypedValue,
    table_error,
)

EDM_TYPES = ("Edm.String", "Edm.Int32", "Edm.Int64", "Edm.Double", "Edm.Boolean", "Edm.DateTime", "Edm.Guid",
             "Edm.Binary")
MAX_KEY_CHARS = 1024
MAX_PROPERTIES = 252  # plus PartitionKey, RowKey and Timestamp
MAX_STRING_CHARS = 32 * 1024  # UTF-16 code units
MAX_BINARY_BYTES = 64 * 1024
MAX_ENTITY_BYTES = 1024 * 1024
MAX_PROPERTY_NAME = 255
MAX_BATCH_OPERATIONS = 100

_TABLE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9]{2,62}$")
_FORBIDDEN_KEY_CHARS = re.compile(r"[/\\#?\x00-\x1f\x7f-\x9f]")
_PROPERTY_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_table_name(name: str) -> None:
    if not isinstance(name, str) or not _TABLE_NAME.match(name) or name.lower() == "tables":
        raise InvalidResourceName("table names are 3-63 letters and digits, starting with a letter, and not "
                                  "'tables'", code="InvalidResourceName")


def check_key(value: Any, which: str) -> str:
    if not isinstance(value, str):
        raise table_error(400, "PropertiesNeedValue", f"the {which} is required and must be a string")
    if len(value) > MAX_KEY_CHARS:
        raise table_error(400, "OutOfRangeInput", f"the {which} is longer than {MAX_KEY_CHARS} characters")
    if _FORBIDDEN_KEY_CHARS.search(value):
        raise InvalidInput(f"the {which} contains a character that is not allowed (/ \\ # ? or a control "
                           "character)")
    return value


def check_properties(properties: Mapping[str, TypedValue]) -> None:
    if len(properties) > MAX_PROPERTIES:
        raise table_error(400, "TooManyProperties", f"an entity has at most {MAX_PROPERTIES} properties")
    size = 0
    for name, (edm, value) in properties.items():
        if name in SYSTEM_PROPERTIES or len(name) > MAX_PROPERTY_NAME or not _PROPERTY_NAME.match(name):
            raise table_error(400, "PropertyNameInvalid", f"the property name {name!r} is invalid")
        if edm not in EDM_TYPES:
            raise InvalidInput(f"the type {edm!r} of property {name!r} is not an Edm type")
        if edm == "Edm.String" and len(value.encode("utf-16-le")) // 2 > MAX_STRING_CHARS:
            raise table_error(400, "PropertyValueTooLarge", f"property {name!r} is larger than 64 KiB")
        if edm == "Edm.Binary" and len(value) > MAX_BINARY_BYTES:
            raise table_error(400, "PropertyValueTooLarge", f"property {name!r} is larger than 64 KiB")
        size += len(name) * 2 + (len(value) * 2 if isinstance(value, str | bytes) else 8)
    if size > MAX_ENTITY_BYTES:
        raise table_error(400, "EntityTooLarge", "the entity is larger than 1 MiB")


def check_batch(operations: Sequence[BatchOperation]) -> None:
    """One entity group: at most 100 operations, one PartitionKey, each entity once (BatchFailed)."""
    if not operations:
        raise BatchFailed(0, InvalidInput("the changeset is empty"))
    if len(operations) > MAX_BATCH_OPERATIONS:
        raise BatchFailed(0, InvalidInput(f"The batch request operation exceeds the maximum {MAX_BATCH_OPERATIONS} "
                                          "changes per change set."))
    seen: set[tuple[str, str]] = set()
    for index, op in enumerate(operations):
        if op.partition_key != operations[0].partition_key:
            raise BatchFailed(index, InvalidInput("All commands in a batch must operate on the same entity group.",
                                                  code="CommandsInBatchActOnDifferentPartitions"))
        if (op.partition_key, op.row_key) in seen:
            raise BatchFailed(index, InvalidInput("The batch request contains multiple changes with same row key. An "
                                                  "entity can appear only once in a batch request.",
                                                  code="InvalidDuplicateRow"))
        seen.add((op.partition_key, op.row_key))


def check_top(top: int) -> None:
    if not 1 <= top <= MAX_QUERY_RESULTS:
        raise InvalidInput(f"$top must be 1..{MAX_QUERY_RESULTS}")


def check_entity(partition_key: Any, row_key: Any, properties: Mapping[str, TypedValue]) -> None:
    check_key(partition_key, "PartitionKey")
    check_key(row_key, "RowKey")
    check_properties(properties)


class ValidatingTableService:
    """`TableService` with the Table service's argument rules checked first."""

    def __init__(self, inner: TableService) -> None:
        self.inner = inner
        self.account_name = inner.account_name
        # Calls without arguments to check go straight to the backend.
        self.list_tables = inner.list_tables
        self.delete_entity = inner.delete_entity
        self.get_entity = inner.get_entity
        self.aclose = inner.aclose

    async def create_table(self, name: str) -> str:
        check_table_name(name)
        return await self.inner.create_table(name)

    async def delete_table(self, name: str) -> None:
        check_table_name(name)
        await self.inner.delete_table(name)

    async def insert_entity(self, table: str, partition_key: str, row_key: str,
                            properties: Mapping[str, TypedValue]) -> Entity:
        check_entity(partition_key, row_key, properties)
        return await self.inner.insert_entity(table, partition_key, row_key, properties)

    async def update_entity(self, table: str, partition_key: str, row_key: str,
                            properties: Mapping[str, TypedValue], *, merge: bool, if_match: str | None) -> Entity:
        check_entity(partition_key, row_key, properties)
        return await self.inner.update_entity(table, partition_key, row_key, properties, merge=merge,
                                              if_match=if_match)

    async def query_entities(self, table: str, *, filter: str | None = None, top: int = MAX_QUERY_RESULTS,
                             after: tuple[str, str] | None = None) -> tuple[list[Entity], tuple[str, str] | None]:
        check_top(top)
        return await self.inner.query_entities(table, filter=filter, top=top, after=after)

    async def submit_batch(self, table: str, operations: Sequence[BatchOperation]) -> list[Entity | None]:
        check_batch(operations)
        for index, op in enumerate(operations):
            try:
                check_entity(op.partition_key, op.row_key, op.properties)
            except StorageError as exc:
                raise BatchFailed(index, exc) from None
        return await self.inner.submit_batch(table, operations)
