"""How the SQL table store (`table_store`) keeps an entity: Timestamps as 100 ns ticks, typed
properties as JSON text, and the ETag written as a function of the Timestamp
(`W/"datetime'<url-encoded Timestamp>'"`), as the service writes it."""

from __future__ import annotations

import base64
import json
import math
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from funchost.errors import InvalidInput, StorageError
from funchost.storage.sqlconn import Row
from funchost.storage.tables import Entity, TypedValue, parse_datetime, table_error

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def ticks(value: datetime) -> int:
    return (value - _EPOCH) // timedelta(microseconds=1) * 10


def timestamp_text(value: int) -> str:
    seconds, fraction = divmod(value, 10_000_000)
    t = time.gmtime(seconds)
    return (f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}"
            f".{fraction:07d}Z")


def etag_for(ts: int) -> str:
    # The Timestamp URL-encoded: of its characters only ':' needs it (urllib's quote gives the same).
    return f"W/\"datetime'{timestamp_text(ts).replace(':', '%3A')}'\""


def encode(properties: Mapping[str, TypedValue]) -> str:
    out: dict[str, list[Any]] = {}
    for name, (edm, value) in properties.items():
        if edm == "Edm.DateTime":
            value = timestamp_text(ticks(value))
        elif edm == "Edm.Binary":
            value = base64.b64encode(value).decode("ascii")
        elif edm == "Edm.Double" and (math.isnan(value) or math.isinf(value)):
            value = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        out[name] = [edm, value]
    return json.dumps(out, ensure_ascii=False)


def decode(text: str) -> dict[str, TypedValue]:
    out: dict[str, TypedValue] = {}
    for name, (edm, value) in json.loads(text).items():
        if edm == "Edm.DateTime":
            value = parse_datetime(value)
        elif edm == "Edm.Binary":
            value = base64.b64decode(value)
        elif edm == "Edm.Double":
            value = float(value)
        out[name] = (edm, value)
    return out


def entity_of(row: Row | tuple[Any, ...]) -> Entity:
    """The entity of a (pk, rk, ts, props) row."""
    pk, rk, ts, props = row[0], row[1], int(row[2]), row[3]
    return Entity(pk, rk, _EPOCH + timedelta(microseconds=ts // 10), etag_for(ts), decode(props))


def not_found_table(name: str) -> StorageError:
    return table_error(404, "TableNotFound", f"table '{name}' does not exist")


def no_entity() -> StorageError:
    return table_error(404, "ResourceNotFound", "the specified entity does not exist")


def condition_failed() -> StorageError:
    return table_error(412, "UpdateConditionNotSatisfied", "the update condition specified in the request was "
                                                           "not satisfied")


def check_etag(if_match: str | None, ts: int) -> None:
    if if_match is None or if_match.strip() == "*":
        return
    given = if_match.strip()
    if not (given.startswith('W/"') and given.endswith('"')):
        raise InvalidInput(f"the If-Match value {if_match!r} is not an entity ETag")
    if given != etag_for(ts):
        raise condition_failed()
