"""Binding expressions in paths: ``container/{queueTrigger}``, ``out/{rand-guid}``, ``{data.id}``.

Follows the WebJobs `BindingTemplate`: ``{name}`` takes a value from the trigger's binding data
(names are case-insensitive, dotted names walk into JSON objects), ``{name:format}`` formats it,
``{{`` and ``}}`` are literal braces, and the system expressions ``{rand-guid}``,
``{DateTime}``, ``{sys.randguid}``, ``{sys.utcnow}`` and ``{sys.methodname}`` are built in.
A name with no value fails the invocation, as on Azure ("No value for named parameter").
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from funchost.errors import InvocationError

if TYPE_CHECKING:
    from funchost.invocation.contracts import InvocationRequest
    from funchost.runtime.contracts import Runtime

_NAME = re.compile(r"^[A-Za-z_$][\w$-]*(\.[A-Za-z_$][\w$-]*)*$")
DATETIME_DEFAULT_FORMAT = "yyyy-MM-ddTHH-mm-ssZ"


class ExpressionError(InvocationError):
    """A path expression is malformed, or names a value the invocation does not have."""


@dataclass(frozen=True)
class Token:
    literal: str | None = None
    name: str | None = None
    format: str | None = None


def parse(template: str) -> list[Token]:
    """Split a template into literals and ``{name[:format]}`` parameters; raise on bad syntax."""
    tokens: list[Token] = []
    literal: list[str] = []
    i = 0
    while i < len(template):
        c = template[i]
        if c in "{}" and template[i:i + 2] in ("{{", "}}"):
            literal.append(c)
            i += 2
            continue
        if c == "}":
            raise ExpressionError(f"invalid template '{template}': unmatched '}}' at position {i}")
        if c != "{":
            literal.append(c)
            i += 1
            continue
        end = template.find("}", i)
        if end < 0:
            raise ExpressionError(f"invalid template '{template}': missing closing '}}'")
        name, _, fmt = template[i + 1:end].partition(":")
        name = name.strip()
        if not _NAME.match(name):
            raise ExpressionError(f"invalid template '{template}': bad parameter name '{name}'")
        if literal:
            tokens.append(Token(literal="".join(literal)))
            literal = []
        tokens.append(Token(name=name, format=fmt or None))
        i = end + 1
    if literal:
        tokens.append(Token(literal="".join(literal)))
    return tokens


def invocation_resolver(request: InvocationRequest, runtime: Runtime) -> ExpressionResolver:
    """What every binding resolves its `{...}` properties with: WebJobs resolves each
    `[AutoResolve]` property (blob paths, queue, topic, hub and table names, Cosmos DB ids and
    queries) with the same `BindingTemplate` rules against the invocation's binding data and
    system values (`{rand-guid}`, `{DateTime}`, `{sys.*}`)."""
    return ExpressionResolver(request.binding_data, now=runtime.clock.now(), method_name=request.function.name)


def parameter_names(template: str) -> list[str]:
    return [t.name for t in parse(template) if t.name]


class ExpressionResolver:
    """Resolves templates against one invocation's binding data.

    System values are computed once per resolver, so ``{rand-guid}`` used twice in one binding
    gives one GUID, as the host's per-invocation system binding data does.
    """

    def __init__(self, binding_data: Mapping[str, Any], *, now: datetime,
                 method_name: str = "", new_guid: Callable[[], uuid.UUID] = uuid.uuid4) -> None:
        self._data = {str(k).lower(): v for k, v in binding_data.items()}
        self._now = now
        self._method_name = method_name
        self._new_guid = new_guid
        self._guid: uuid.UUID | None = None

    def resolve(self, template: str) -> str:
        return "".join(t.literal if t.literal is not None else self._value(t) for t in parse(template))

    def _guid_value(self) -> uuid.UUID:
        if self._guid is None:
            self._guid = self._new_guid()
        return self._guid

    def _value(self, token: Token) -> str:
        name = token.name or ""
        lowered = name.lower()
        if lowered in ("rand-guid", "sys.randguid"):
            return format_guid(self._guid_value(), token.format)
        if lowered == "datetime" and "datetime" not in self._data:
            return format_datetime(self._now, token.format or DATETIME_DEFAULT_FORMAT)
        if lowered == "sys.utcnow":
            return format_datetime(self._now, token.format or "yyyy-MM-ddTHH:mm:ss.fffffffZ")
        if lowered == "sys.methodname":
            return self._method_name
        found, value = self._lookup(lowered)
        if not found or value is None:
            raise ExpressionError(f"No value for named parameter '{name}'.")
        return format_value(value, token.format)

    def _lookup(self, dotted: str) -> tuple[bool, Any]:
        first, *rest = dotted.split(".")
        if first not in self._data:
            return False, None
        value = self._data[first]
        for part in rest:
            if isinstance(value, str):
                try:
                    value = json.loads(value)
                except ValueError:
                    return False, None
            if not isinstance(value, Mapping):
                return False, None
            matches = [v for k, v in value.items() if str(k).lower() == part]
            if not matches:
                return False, None
            value = matches[0]
        return True, value


def format_guid(value: uuid.UUID, fmt: str | None) -> str:
    """.NET Guid.ToString(format): D (default), N, B, P."""
    text = str(value)
    spec = (fmt or "D").upper()
    if spec == "N":
        return value.hex
    if spec == "B":
        return "{" + text + "}"
    if spec == "P":
        return "(" + text + ")"
    return text


def format_value(value: Any, fmt: str | None) -> str:
    if isinstance(value, datetime):
        return format_datetime(value, fmt or "yyyy-MM-ddTHH:mm:ssZ")
    if fmt and isinstance(value, str):
        parsed = _parse_datetime(value)
        if parsed is not None:
            return format_datetime(parsed, fmt)
    if isinstance(value, bool):
        return "True" if value else "False"  # .NET's bool.ToString()
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _parse_datetime(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


_DOTNET_TOKENS = re.compile(r"yyyy|yy|MM|M|dd|d|HH|H|hh|h|mm|m|ss|s|f{1,7}|tt|'[^']*'|\\.|.", re.S)


def format_datetime(value: datetime, fmt: str) -> str:
    """The subset of .NET custom date and time format strings that paths use."""
    out: list[str] = []
    for tok in _DOTNET_TOKENS.findall(fmt):
        if tok == "yyyy":
            out.append(f"{value.year:04d}")
        elif tok == "yy":
            out.append(f"{value.year % 100:02d}")
        elif tok in ("MM", "M"):
            out.append(f"{value.month:0{len(tok)}d}")
        elif tok in ("dd", "d"):
            out.append(f"{value.day:0{len(tok)}d}")
        elif tok in ("HH", "H"):
            out.append(f"{value.hour:0{len(tok)}d}")
        elif tok in ("hh", "h"):
            out.append(f"{(value.hour % 12) or 12:0{len(tok)}d}")
        elif tok in ("mm", "m"):
            out.append(f"{value.minute:0{len(tok)}d}")
        elif tok in ("ss", "s"):
            out.append(f"{value.second:0{len(tok)}d}")
        elif tok.startswith("f"):
            out.append(f"{value.microsecond:06d}0"[:len(tok)])
        elif tok == "tt":
            out.append("AM" if value.hour < 12 else "PM")
        elif tok.startswith("'"):
            out.append(tok[1:-1])
        elif tok.startswith("\\"):
            out.append(tok[1:])
        else:
            out.append(tok)
    return "".join(out)
