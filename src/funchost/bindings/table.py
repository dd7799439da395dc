"""The Azure Tables input and output binding ("table"), as the Tables extension 1.x binds it for
out-of-process workers (Azure/azure-sdk-for-net `Microsoft.Azure.WebJobs.Extensions.Tables`,
`TablesExtensionConfigProvider`, `TableEntityWriter`, `TableClientHelpers`).

Input: a JSON array of the entities matching ``PartitionKey eq '<partitionKey>' and <filter>``
(either part may be absent), at most ``take`` of them, each ``{"PartitionKey", "RowKey", ...its
properties}``. ``rowKey`` does not narrow the query: for Python (and every out-of-process
language) the host binds the attribute to the extension's `JArray` converter, which reads only
the partition key, filter and take; the worker's own end-to-end test looks for its row in that
array, and users see the whole partition (azure-functions-python-worker issues #1231, #1725).
Python functions get the JSON text (the library has no converter of its own for "table").

Output: a JSON object or array of objects. Each becomes an entity whose ``PartitionKey`` /
``RowKey`` (any letter case) win over the binding's ``partitionKey`` / ``rowKey``; the rest are
its properties, typed as Newtonsoft reads JSON (integers Int64, decimals Double, ISO 8601 date
strings DateTime). Entities are inserted (an existing one fails the invocation with
EntityAlreadyExists) unless they carry an ``odata.etag``: then they replace the stored one if
its ETag still matches (``*``: in any case), in one transaction per partition of up to 100,
creating the table when it is missing.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any

from azure.functions.meta import Datum

from funchost.bindings.expressions import ExpressionError, invocation_resolver, parse
from funchost.errors import AppLoadError, ConfigError, InvocationError, StorageError, UnsupportedBindingError
from funchost.indexing.spec import BindingSpec, FunctionSpec
from funchost.invocation.contracts import InvocationRequest
from funchost.runtime.contracts import BindingSupport, Runtime
from funchost.storage.tables import BatchOperation, Entity, TableService, TypedValue, parse_datetime

MAX_BATCH = 100  # TableEntityWriter.MaxBatchSize
_TABLE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9]{2,62}$")  # TableClientHelpers.IsValidAzureTableName
_INVALID_KEY_CHARS = re.compile(r"[/\\#?\x00-\x1f\x7f-\x9f]")  # TableClientHelpers.InvalidKeyValueCharacters
# What Newtonsoft's default DateParseHandling.DateTime takes for a date in a JSON string.
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,7})?)?(Z|[+-]\d{2}:\d{2})?$")


def check_table_name(name: str) -> None:
    if not _TABLE_NAME.match(name):
        raise InvocationError(f"'{name}' is not a valid name for an Azure table")


def check_key_value(value: Any) -> str:
    if not isinstance(value, str) or _INVALID_KEY_CHARS.search(value):
        raise InvocationError(f"'{value}' is not a valid value for a partition key or row key. Ensure that the "
                              "table entity contains valid 'PartitionKey' and 'RowKey' values.")
    return value


def quote(value: str) -> str:
    """An OData string literal, as `TableClient.CreateQueryFilter` formats one."""
    return "'" + value.replace("'", "''") + "'"


def entity_json(entity: Entity) -> dict[str, Any]:
    """An entity as the out-of-process table input gives it: keys, then the properties."""
    result: dict[str, Any] = {"PartitionKey": entity.partition_key, "RowKey": entity.row_key}
    for name, (edm, value) in entity.properties.items():
        result[name] = _json_value(edm, value)
    return result


def _json_value(edm: str, value: Any) -> Any:
    if value is None:
        return None
    if edm == "Edm.DateTime":
        return _date_text(value)
    if edm == "Edm.Binary":
        return base64.b64encode(value).decode("ascii")
    return value


def _date_text(value: datetime) -> str:
    """DateTimeOffset as Json.NET writes it: seven fractional digits, the offset spelled out."""
    return value.strftime("%Y-%m-%dT%H:%M:%S.%f") + "0" + value.strftime("%z")[:3] + ":" + value.strftime("%z")[3:]


def typed(value: Any, name: str) -> TypedValue | None:
    """A JSON value as the typed property the extension stores (None: no property)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "Edm.Boolean", value
    if isinstance(value, int):
        return "Edm.Int64", value
    if isinstance(value, float):
        return "Edm.Double", value
    if isinstance(value, str):
        parsed = parse_datetime(value) if _ISO_DATE.match(value) else None
        return ("Edm.DateTime", parsed) if parsed is not None else ("Edm.String", value)
    raise InvocationError(f"property '{name}' of a table entity is a JSON {type(value).__name__}; "
                          "only strings, numbers, booleans and null can be stored")


def output_entities(datum: Datum, partition_key: str | None, row_key: str | None) -> Iterator[BatchOperation]:
    """The entities a function's output value stands for (`CreateTableEntityFromJObject`)."""
    text = datum.value.decode("utf-8") if isinstance(datum.value, bytes) else datum.value
    try:
        value = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        raise InvocationError("a table output must be a JSON object or an array of JSON objects") from None
    items = value if isinstance(value, list) else [value]
    for item in items:
        if not isinstance(item, dict):
            raise InvocationError("a table output must be a JSON object or an array of JSON objects")
        pk, rk, etag, properties = partition_key, row_key, None, {}
        for name, field in item.items():
            if name.lower() == "partitionkey":
                pk = field
            elif name.lower() == "rowkey":
                rk = field
            elif name == "odata.etag":  # an entity read through the input binding, written back
                etag = str(field)
            elif name == "Timestamp":
                continue  # the service's own; the SDK never sends it
            elif (prop := typed(field, name)) is not None:
                properties[name] = prop
        pk, rk = check_key_value(pk), check_key_value(rk)
        if etag is None:
            yield BatchOperation("insert", pk, rk, properties)
        elif etag == "*":
            yield BatchOperation("upsert-replace", pk, rk, properties)
        else:
            yield BatchOperation("replace", pk, rk, properties, if_match=etag)


async def write_entities(service: TableService, table: str, operations: Sequence[BatchOperation]) -> None:
    """One transaction per partition of up to 100 operations; the table created when missing."""
    partitions: dict[str, list[BatchOperation]] = {}
    for operation in operations:
        group = partitions.setdefault(operation.partition_key, [])
        if any(op.row_key == operation.row_key for op in group) or len(group) == MAX_BATCH:
            await _submit(service, table, group)  # a repeated row key flushes first, as the writer does
            group.clear()
        group.append(operation)
    for group in partitions.values():
        if group:
            await _submit(service, table, group)


async def _submit(service: TableService, table: str, group: list[BatchOperation]) -> None:
    try:
        await service.submit_batch(table, list(group))
    except StorageError as exc:
        if exc.code not in ("TableNotFound", "ResourceNotFound") or exc.status != 404:
            raise
        try:
            await service.create_table(table)
        except StorageError as created:
            if created.code != "TableAlreadyExists":
                raise
        await service.submit_batch(table, list(group))


class TableBindingSupport:
    binding_type = "table"

    def validate(self, binding: BindingSpec, function: FunctionSpec, runtime: Runtime) -> None:
        where = {"function": function.name, "file": function.script_file}
        line = function.source_line
        if binding.direction not in ("in", "out"):
            raise UnsupportedBindingError(f"table binding '{binding.name}': direction '{binding.direction}' "
                                          "is not supported", line=line, **where)
        name = str(binding.get("tableName") or "")
        try:
            tokens = [parse(str(binding.get(key) or "")) for key in ("tableName", "partitionKey", "rowKey", "filter")]
            if not name:
                raise ExpressionError("tableName is required")
            if not any(t.name for t in tokens[0]):
                check_table_name(name)
            runtime.storage.connection(binding.get("connection"), "table")
        except (ExpressionError, InvocationError, ConfigError) as exc:
            raise AppLoadError(f"table binding '{binding.name}': {exc}", line=line, **where) from None

    async def read(self, binding: BindingSpec, request: InvocationRequest, runtime: Runtime) -> Datum:
        resolve = _resolver(request, runtime)
        table = _table_name(binding, resolve)
        service = runtime.storage.tables(binding.get("connection"))
        try:
            entities = await _query(service, table, resolve(binding.get("partitionKey")),
                                    resolve(binding.get("filter")), int(binding.get("take") or 0))
        except StorageError as exc:
            raise InvocationError(f"Exception binding parameter '{binding.name}'. {exc}") from exc
        return Datum(json.dumps(entities), "json")

    async def write(
        self, binding: BindingSpec, datum: Datum, request: InvocationRequest, runtime: Runtime
    ) -> None:
        if datum is None or datum.value is None:
            return
        resolve = _resolver(request, runtime)
        table = _table_name(binding, resolve)
        operations = list(output_entities(datum, resolve(binding.get("partitionKey")),
                                          resolve(binding.get("rowKey"))))
        await write_entities(runtime.storage.tables(binding.get("connection")), table, operations)


async def _query(service: TableService, table: str, partition_key: str | None, filter_text: str | None,
                 take: int) -> list[dict[str, Any]]:
    clauses = [f"PartitionKey eq {quote(partition_key)}"] if partition_key else []
    if filter_text:
        clauses.append(filter_text)  # joined without parentheses, as the extension does
    query = " and ".join(clauses) or None
    found: list[dict[str, Any]] = []
    after: tuple[str, str] | None = None
    while True:
        page, after = await service.query_entities(table, filter=query, after=after)
        for entity in page:
            found.append(entity_json(entity))
            if take and len(found) == take:
                return found
        if after is None:
            return found


def _table_name(binding: BindingSpec, resolve: Callable[[Any], str | None]) -> str:
    """The binding's table after binding expressions, checked as the extension does."""
    table = resolve(binding.get("tableName")) or ""
    check_table_name(table)
    return table


def _resolver(request: InvocationRequest, runtime: Runtime) -> Callable[[Any], str | None]:
    expressions = invocation_resolver(request, runtime)

    def resolve(template: Any) -> str | None:
        return None if template in (None, "") else expressions.resolve(str(template))

    return resolve


SUPPORT: BindingSupport = TableBindingSupport()
