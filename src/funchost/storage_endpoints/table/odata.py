"""Entities as OData JSON, both ways (https://learn.microsoft.com/rest/api/storageservices/payload-format-for-table-service-operations).

Reading: un-annotated JSON strings are Edm.String, whole numbers Edm.Int32 (Edm.Int64 beyond
32 bits), other numbers Edm.Double, booleans Edm.Boolean; `Name@odata.type` annotations give the
other types (Int64 values arrive as strings). `null` leaves a property out. Writing, by metadata
level: `nometadata` (values only), `minimalmetadata` (`odata.metadata`, `odata.etag`, and type
annotations only for the types JSON cannot carry: Int64, DateTime, Guid, Binary, and special
doubles), `fullmetadata` (also `odata.type`, `odata.id`, `odata.editLink`, Timestamp's type).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import uuid
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from funchost.storage.tables import Entity, TypedValue, parse_datetime
from funchost.storage_endpoints.errors import ApiError
from funchost.storage_endpoints.wire import StorageRequest, iso7

LEVELS = ("nometadata", "minimalmetadata", "fullmetadata")


def _invalid(message: str) -> ApiError:
    return ApiError(400, "InvalidInput", message)


def payload_level(request: StorageRequest) -> str:
    """$format, else Accept: the metadata level to answer with; Atom/XML is 415 AtomFormatNotSupported."""
    wanted = request.query.get("$format") or request.headers.get("accept") or ""
    wanted = wanted.replace(" ", "").lower()
    for level in LEVELS:
        if f"odata={level}" in wanted:
            return level
    if "application/json" in wanted or wanted in ("", "*/*") or "*/*" in wanted:
        return "minimalmetadata"
    raise ApiError(415, "AtomFormatNotSupported")


def content_type(level: str) -> str:
    return f"application/json;odata={level};streaming=true;charset=utf-8"


def parse_body(body: bytes) -> dict[str, Any]:
    try:
        data = json.loads(body or b"{}")
    except (ValueError, UnicodeDecodeError):
        raise _invalid("The request body is not valid JSON.") from None
    if not isinstance(data, dict):
        raise _invalid("The request body must be a JSON object.")
    return data


def _typed(name: str, value: Any, edm: str | None) -> TypedValue:
    try:
        if edm is None:
            if isinstance(value, bool):
                return "Edm.Boolean", value
            if isinstance(value, int):
                return ("Edm.Int32" if -2**31 <= value < 2**31 else "Edm.Int64"), value
            if isinstance(value, float):
                return "Edm.Double", value
            if isinstance(value, str):
                return "Edm.String", value
            raise ValueError(type(value).__name__)
        if edm == "Edm.String" and isinstance(value, str):
            return edm, value
        if edm in ("Edm.Int32", "Edm.Int64") and not isinstance(value, bool):
            number = int(value) if isinstance(value, int) or (isinstance(value, str) and value.lstrip("-").isdigit()) \
                else None
            limit = 2**31 if edm == "Edm.Int32" else 2**63
            if number is None or not -limit <= number < limit:
                raise ValueError(value)
            return edm, number
        if edm == "Edm.Double" and not isinstance(value, bool) and isinstance(value, int | float | str):
            double = float(value)
            if isinstance(value, str) and value not in ("NaN", "Infinity", "-Infinity") and not math.isfinite(double):
                raise ValueError(value)
            return edm, double
        if edm == "Edm.Boolean" and isinstance(value, bool):
            return edm, value
        if edm == "Edm.DateTime" and isinstance(value, str):
            parsed = parse_datetime(value)
            if parsed is None:
                raise ValueError(value)
            return edm, parsed
        if edm == "Edm.Guid" and isinstance(value, str):
            return edm, str(uuid.UUID(value))
        if edm == "Edm.Binary" and isinstance(value, str):
            return edm, base64.b64decode(value, validate=True)
    except (ValueError, TypeError, binascii.Error):
        pass
    raise _invalid(f"The value of property '{name}' is not a valid {edm or 'JSON value'}.")


def entity_properties(data: Mapping[str, Any]) -> tuple[Any, Any, dict[str, TypedValue]]:
    """(PartitionKey, RowKey, the other properties typed) from a request body."""
    properties: dict[str, TypedValue] = {}
    for name, value in data.items():
        if name.startswith("odata.") or "@odata." in name or name in ("PartitionKey", "RowKey", "Timestamp"):
            continue
        if value is None:
            continue
        properties[name] = _typed(name, value, data.get(f"{name}@odata.type"))
    return data.get("PartitionKey"), data.get("RowKey"), properties


def _wire(edm: str, value: Any) -> tuple[Any, bool]:
    """(JSON value, whether minimal metadata annotates it)."""
    if edm == "Edm.Int64":
        return str(value), True
    if edm == "Edm.DateTime":
        return iso7(value), True
    if edm == "Edm.Binary":
        return base64.b64encode(value).decode("ascii"), True
    if edm == "Edm.Guid":
        return value, True
    if edm == "Edm.Double":
        if math.isnan(value):
            return "NaN", True
        if math.isinf(value):
            return ("Infinity" if value > 0 else "-Infinity"), True
        return float(value), False
    return value, False


def entity_url(base: str, table: str, entity: Entity) -> str:
    def key(value: str) -> str:
        return quote(value.replace("'", "''"), safe="")

    return f"{base}/{table}(PartitionKey='{key(entity.partition_key)}',RowKey='{key(entity.row_key)}')"


def entity_json(entity: Entity, level: str, base: str, table: str, select: list[str] | None = None,
                single: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if level != "nometadata":
        if single:
            out["odata.metadata"] = f"{base}/$metadata#{table}/@Element"
        if level == "fullmetadata":
            out["odata.type"] = f"{base.rsplit('/', 1)[-1]}.{table}"
            out["odata.id"] = entity_url(base, table, entity)
        out["odata.etag"] = entity.etag
        if level == "fullmetadata":
            out["odata.editLink"] = entity_url("", table, entity).lstrip("/")
    system = {"PartitionKey": entity.partition_key, "RowKey": entity.row_key, "Timestamp": iso7(entity.timestamp)}
    for name, value in system.items():
        if select is None or name in select:
            if name == "Timestamp" and level == "fullmetadata":
                out["Timestamp@odata.type"] = "Edm.DateTime"
            out[name] = value
    for name, (edm, value) in entity.properties.items():
        if select is not None and name not in select:
            continue
        wire, annotate = _wire(edm, value)
        if annotate and level != "nometadata":
            out[f"{name}@odata.type"] = edm
        out[name] = wire
    return out


def dumps(payload: Any) -> bytes:
    return json.dumps(payload, ensure_ascii=False, allow_nan=False).encode("utf-8")
