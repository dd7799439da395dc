"""ASP.NET Core inline route constraints (``{id:int}``, ``{name:regex(^a)}``, ...).

Each constraint checks a route value as a string, the way the .NET constraint parses it with the
invariant culture. A value that fails is simply "no match" for the route (azure-semantics 3.3).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation

from funchost.errors import ConfigError

Check = Callable[[str], bool]

_INT_RE = re.compile(r"^\s*[+-]?\d+\s*$", re.ASCII)  # .NET parses ASCII digits only
_DECIMAL_RE = re.compile(r"^\s*[+-]?(?=[\d,]*\.?\d)[\d,]*(?:\.\d*)?\s*$", re.ASCII)
_FLOAT_RE = re.compile(r"^\s*[+-]?(?=[\d,]*\.?\d)[\d,]*(?:\.\d*)?(?:[eE][+-]?\d+)?\s*$", re.ASCII)
_FLOAT_SYMBOLS = {"nan", "infinity", "+infinity", "-infinity", "\u221e", "-\u221e", "+\u221e"}
_HEX = "[0-9a-fA-F]"
_GUID_D = f"{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}"
_GUID_RE = re.compile(rf"^(?:{_GUID_D}|{_HEX}{{32}}|\{{{_GUID_D}\}}|\({_GUID_D}\))$")
_ALPHA_RE = re.compile(r"^[a-z]*$", re.IGNORECASE)
_DATETIME_FORMATS = (
    "%m/%d/%Y", "%m/%d/%Y %H:%M", "%m/%d/%Y %H:%M:%S", "%Y/%m/%d", "%Y/%m/%d %H:%M:%S",
    "%d %B %Y", "%B %d %Y", "%B %d, %Y", "%d %b %Y", "%b %d %Y", "%b %d, %Y",
)
INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
INT64_DIGITS = 19  # significant digits of the largest .NET integer; more is out of range
DECIMAL_MAX = Decimal(79228162514264337593543950335)  # System.Decimal.MaxValue


def _integer(value: str, bounds: tuple[int, int]) -> int | None:
    """The value as .NET's int/long TryParse reads it, None when it fails or is out of range.

    Leading zeros are allowed in any number; a value with more significant digits than any
    .NET integer is out of range without being converted (Python refuses to convert strings of
    more than 4300 digits)."""
    if not _INT_RE.match(value):
        return None
    text = value.strip()
    digits = text.lstrip("+-").lstrip("0") or "0"
    if len(digits) > INT64_DIGITS:
        return None
    number = -int(digits) if text.startswith("-") else int(digits)
    return number if bounds[0] <= number <= bounds[1] else None


def _is_int(value: str) -> bool:
    return _integer(value, INT32) is not None


def _is_long(value: str) -> bool:
    return _integer(value, INT64) is not None


def _is_bool(value: str) -> bool:
    return value.strip().lower() in ("true", "false")


def _is_decimal(value: str) -> bool:
    if not _DECIMAL_RE.match(value):
        return False
    try:  # decimal.TryParse fails (overflow) beyond System.Decimal's range
        return Decimal(value.strip().replace(",", "")).copy_abs() <= DECIMAL_MAX
    except InvalidOperation:
        return False


def _is_float(value: str) -> bool:
    return bool(_FLOAT_RE.match(value)) or value.strip().lower() in _FLOAT_SYMBOLS


def _is_guid(value: str) -> bool:
    return bool(_GUID_RE.match(value.strip()))


def _is_alpha(value: str) -> bool:
    return bool(_ALPHA_RE.match(value))


def _is_datetime(value: str) -> bool:
    text = value.strip()
    try:
        datetime.fromisoformat(text)
        return True
    except ValueError:
        pass
    for fmt in _DATETIME_FORMATS:
        try:
            datetime.strptime(text, fmt)
            return True
        except ValueError:
            continue
    return False


def _length(value: str) -> int:
    """.NET string length counts UTF-16 code units."""
    return len(value.encode("utf-16-le", "surrogatepass")) // 2


@dataclass(frozen=True)
class Constraint:
    text: str  # as written, e.g. "range(1,10)"
    check: Check

    def __call__(self, value: str) -> bool:
        return self.check(value)


def _args(name: str, raw: str | None, count: tuple[int, ...], where: str) -> list[int]:
    parts = [] if raw is None or raw == "" else [p.strip() for p in raw.split(",")]
    if len(parts) not in count:
        raise ConfigError(f"constraint '{name}' expects {' or '.join(map(str, count))} argument(s)", path=where)
    try:
        return [int(p) for p in parts]
    except ValueError:
        raise ConfigError(f"constraint '{name}' has a non-integer argument: {raw!r}", path=where) from None


def _bounded(low: int | None, high: int | None) -> Check:
    def check(value: str) -> bool:
        number = _integer(value, INT64)
        if number is None:
            return False
        return (low is None or number >= low) and (high is None or number <= high)

    return check


def _lengths(low: int, high: int | None) -> Check:
    return lambda value: low <= _length(value) and (high is None or _length(value) <= high)


_SIMPLE: dict[str, Check] = {
    "int": _is_int,
    "long": _is_long,
    "bool": _is_bool,
    "datetime": _is_datetime,
    "decimal": _is_decimal,
    "double": _is_float,
    "float": _is_float,
    "guid": _is_guid,
    "alpha": _is_alpha,
    "required": lambda value: value != "",
}


def resolve(text: str, where: str) -> Constraint:
    """Turn ``name`` or ``name(args)`` into a check; unknown names are a start-up error."""
    name, _, rest = text.partition("(")
    raw_args = rest[:-1] if rest.endswith(")") else (None if not rest else rest)
    key = name.strip().lower()
    if key in _SIMPLE and not rest:
        return Constraint(text, _SIMPLE[key])
    if key == "regex" and raw_args is not None:
        try:
            pattern = re.compile(raw_args, re.IGNORECASE)
        except re.error as exc:
            raise ConfigError(f"invalid regex constraint {raw_args!r}: {exc}", path=where) from None
        return Constraint(text, lambda value: pattern.search(value) is not None)
    if key in ("min", "max"):
        (bound,) = _args(key, raw_args, (1,), where)
        return Constraint(text, _bounded(bound, None) if key == "min" else _bounded(None, bound))
    if key == "range":
        low, high = _args(key, raw_args, (2,), where)
        return Constraint(text, _bounded(low, high))
    if key in ("minlength", "maxlength"):
        (size,) = _args(key, raw_args, (1,), where)
        return Constraint(text, _lengths(size, None) if key == "minlength" else _lengths(0, size))
    if key == "length":
        sizes = _args(key, raw_args, (1, 2), where)
        low, high = (sizes[0], sizes[0]) if len(sizes) == 1 else (sizes[0], sizes[1])
        return Constraint(text, _lengths(low, high))
    raise ConfigError(f"the route constraint '{text}' could not be resolved", path=where)
