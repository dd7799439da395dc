"""The small SQL subset the embedded store answers.

``SELECT * FROM c`` with an optional ``WHERE`` of conditions joined by ``AND``, each either
``c.<path> = <value>`` (value: ``@param``, a quoted string, a number, true/false/null) or
``STARTSWITH(c.id, <value>)``. Anything else is a `CosmosBadRequestError` naming the query:
the store is an emulator of the change feed, not of the query engine.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from funchost.documents.exceptions import CosmosBadRequestError

_SELECT = re.compile(r"^\s*SELECT\s+\*\s+FROM\s+(\w+)(?:\s+WHERE\s+(?P<where>.+?))?\s*$", re.I | re.S)
_EQ = re.compile(r"^(?P<alias>\w+)\.(?P<path>[\w.]+)\s*=\s*(?P<value>.+)$", re.S)
_STARTS = re.compile(r"^STARTSWITH\s*\(\s*(?P<alias>\w+)\.id\s*,\s*(?P<value>.+?)\s*\)$", re.I | re.S)


@dataclass(frozen=True)
class ParsedQuery:
    equals: dict[str, Any] = field(default_factory=dict)
    id_prefix: str | None = None


def _parameters(parameters: Iterable[Mapping[str, Any]] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for p in parameters or ():
        out[str(p["name"])] = p.get("value")
    return out


def _value(text: str, params: Mapping[str, Any], query: str) -> Any:
    text = text.strip()
    if text.startswith("@"):
        if text not in params:
            raise CosmosBadRequestError(f"query parameter {text} has no value: {query}")
        return params[text]
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("\\'", "'")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise CosmosBadRequestError(f"unsupported value {text!r} in query: {query}") from None


def parse_query(query: str, parameters: Iterable[Mapping[str, Any]] | None = None) -> ParsedQuery:
    match = _SELECT.match(query)
    if match is None:
        raise CosmosBadRequestError(f"only 'SELECT * FROM c [WHERE ...]' is supported: {query}")
    alias = match.group(1)
    params = _parameters(parameters)
    equals: dict[str, Any] = {}
    prefix: str | None = None
    where = match.group("where")
    for condition in re.split(r"\s+AND\s+", where, flags=re.I) if where else []:
        condition = condition.strip()
        starts = _STARTS.match(condition)
        if starts and starts.group("alias") == alias:
            prefix = str(_value(starts.group("value"), params, query))
            continue
        eq = _EQ.match(condition)
        if eq is None or eq.group("alias") != alias:
            raise CosmosBadRequestError(f"unsupported condition {condition!r} in query: {query}")
        equals[eq.group("path")] = _value(eq.group("value"), params, query)
    return ParsedQuery(equals, prefix)
