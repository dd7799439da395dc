"""The OData `$filter` language of Table storage: parse once, then test entities.

https://learn.microsoft.com/rest/api/storageservices/querying-tables-and-entities

Supported: `eq ne gt ge lt le`, `and or not`, parentheses, string literals with `''` escapes,
`42` (Int32), `42L` (Int64), `4.2` (Double), `true`/`false`, `datetime'..'`, `guid'..'`,
`X'hex'` / `binary'hex'`, and a boolean property on its own. Operators are case-insensitive.
A comparison with a missing property, or between values of different kinds, is false (numbers
of any Edm number type compare numerically). A malformed filter is 400 InvalidInput.

`bounds()` gives the PartitionKey/RowKey limits implied by top-level `and` terms, so a store can
narrow its scan before testing each entity.
"""

from __future__ import annotations

import base64
import math
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from funchost.errors import InvalidInput
from funchost.storage.tables import Entity, TypedValue, parse_datetime

_TOKEN = re.compile(r"""
    \s*(?:
      (?P<lparen>\() | (?P<rparen>\)) |
      (?P<typed>(?:datetime|guid|binary|X)'(?:[^']|'')*') |
      (?P<string>'(?:[^']|'')*') |
      (?P<number>-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?[LlDdMmFf]?) |
      (?P<word>[A-Za-z_][A-Za-z0-9_]*)
    )""", re.VERBOSE)
_COMPARISONS = ("eq", "ne", "gt", "ge", "lt", "le")
_NUMBER_TYPES = ("Edm.Int32", "Edm.Int64", "Edm.Double")

Predicate = Callable[[Entity], bool]


def _invalid(detail: str) -> InvalidInput:
    return InvalidInput(f"The query condition specified in the request is invalid: {detail}")


@dataclass(frozen=True)
class Token:
    kind: str
    text: str


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    position = 0
    while position < len(text):
        if text[position:].strip() == "":
            break
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise _invalid(f"unexpected text at position {position}: {text[position:position + 20]!r}")
        kind = match.lastgroup or ""
        tokens.append(Token(kind, match.group(kind)))
        position = match.end()
    return tokens


def literal(token: Token) -> TypedValue:
    text = token.text
    if token.kind == "string":
        return "Edm.String", text[1:-1].replace("''", "'")
    if token.kind == "number":
        suffix = text[-1].lower() if text[-1].isalpha() else ""
        body = text[:-1] if suffix else text
        if suffix == "l":
            return "Edm.Int64", int(body)
        if suffix or any(c in body for c in ".eE"):
            return "Edm.Double", float(body)
        value = int(body)
        return ("Edm.Int32" if -2**31 <= value < 2**31 else "Edm.Int64"), value
    if token.kind == "typed":
        prefix, _, quoted = text.partition("'")
        inner = quoted[:-1].replace("''", "'")
        try:
            if prefix == "datetime":
                parsed = parse_datetime(inner)
                if parsed is None:
                    raise ValueError(inner)
                return "Edm.DateTime", parsed
            if prefix == "guid":
                return "Edm.Guid", str(uuid.UUID(inner))
            return "Edm.Binary", bytes.fromhex(inner)
        except ValueError:
            raise _invalid(f"{text!r} is not a valid {prefix} literal") from None
    if token.kind == "word" and token.text.lower() in ("true", "false"):
        return "Edm.Boolean", token.text.lower() == "true"
    raise _invalid(f"{text!r} is not a value")


def _lookup(entity: Entity, name: str) -> TypedValue | None:
    if name == "PartitionKey":
        return "Edm.String", entity.partition_key
    if name == "RowKey":
        return "Edm.String", entity.row_key
    if name == "Timestamp":
        return "Edm.DateTime", entity.timestamp
    return entity.properties.get(name)


def _comparable(left: TypedValue, right: TypedValue) -> tuple[Any, Any] | None:
    (ltype, lvalue), (rtype, rvalue) = left, right
    if ltype in _NUMBER_TYPES and rtype in _NUMBER_TYPES:
        return float(lvalue), float(rvalue)
    if ltype != rtype:
        return None
    if ltype == "Edm.Guid":
        return str(lvalue).lower(), str(rvalue).lower()
    if ltype == "Edm.Binary" and isinstance(lvalue, str):
        return base64.b64decode(lvalue), rvalue
    return lvalue, rvalue


def _compare(op: str, left: TypedValue | None, right: TypedValue | None) -> bool:
    if left is None or right is None:
        return False
    pair = _comparable(left, right)
    if pair is None:
        return False
    a, b = pair
    if isinstance(a, float) and (math.isnan(a) or math.isnan(b)):
        return op == "ne"
    if op == "eq":
        return bool(a == b)
    if op == "ne":
        return bool(a != b)
    try:
        if op == "gt":
            return bool(a > b)
        if op == "ge":
            return bool(a >= b)
        if op == "lt":
            return bool(a < b)
        return bool(a <= b)
    except TypeError:
        return False


@dataclass
class Filter:
    predicate: Predicate
    key_terms: list[tuple[str, str, str]]  # (PartitionKey|RowKey, op, value) from top-level and-terms

    def matches(self, entity: Entity) -> bool:
        return self.predicate(entity)

    def bounds(self, key: str) -> tuple[str | None, str | None, bool]:
        """(lowest, highest, exact) for PartitionKey or RowKey, from the top-level terms."""
        low: str | None = None
        high: str | None = None
        for name, op, value in self.key_terms:
            if name != key:
                continue
            if op == "eq":
                return value, value, True
            if op in ("gt", "ge"):
                low = value if low is None else max(low, value)
            elif op in ("lt", "le"):
                high = value if high is None else min(high, value)
        return low, high, False


def _either(a: Predicate, b: Predicate) -> Predicate:
    return lambda e: a(e) or b(e)


def _both(a: Predicate, b: Predicate) -> Predicate:
    return lambda e: a(e) and b(e)


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.position = 0

    def peek(self) -> Token | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def word(self) -> str:
        token = self.peek()
        return token.text.lower() if token is not None and token.kind == "word" else ""

    def take(self) -> Token:
        token = self.peek()
        if token is None:
            raise _invalid("the filter ends too early")
        self.position += 1
        return token

    def parse(self) -> tuple[Predicate, list[tuple[str, str, str]]]:
        predicate, terms = self.or_expr()
        if self.peek() is not None:
            raise _invalid(f"unexpected {self.peek().text!r}")  # type: ignore[union-attr]
        return predicate, terms

    def or_expr(self) -> tuple[Predicate, list[tuple[str, str, str]]]:
        left, terms = self.and_expr()
        while self.word() == "or":
            self.take()
            right, _ = self.and_expr()
            left, terms = _either(left, right), []
        return left, terms

    def and_expr(self) -> tuple[Predicate, list[tuple[str, str, str]]]:
        left, terms = self.unary()
        while self.word() == "and":
            self.take()
            right, more = self.unary()
            left, terms = _both(left, right), terms + more
        return left, terms

    def unary(self) -> tuple[Predicate, list[tuple[str, str, str]]]:
        if self.word() == "not":
            self.take()
            inner, _ = self.unary()
            return (lambda e: not inner(e)), []
        token = self.peek()
        if token is not None and token.kind == "lparen":
            self.take()
            inner, terms = self.or_expr()
            if self.take().kind != "rparen":
                raise _invalid("a ')' is missing")
            return inner, terms
        return self.comparison()

    def operand(self) -> tuple[str | None, TypedValue | None]:
        token = self.take()
        if token.kind == "word" and token.text.lower() not in ("true", "false") + _COMPARISONS + ("and", "or",
                                                                                                    "not"):
            return token.text, None
        return None, literal(token)

    def comparison(self) -> tuple[Predicate, list[tuple[str, str, str]]]:
        left_name, left_value = self.operand()
        op = self.word()
        if op not in _COMPARISONS:
            if left_name is not None:  # a boolean property on its own
                return (lambda e: _lookup(e, left_name) == ("Edm.Boolean", True)), []
            if left_value is not None and left_value[0] == "Edm.Boolean":
                constant = bool(left_value[1])
                return (lambda e: constant), []
            raise _invalid("a comparison operator (eq, ne, gt, ge, lt, le) is expected")
        self.take()
        right_name, right_value = self.operand()

        def side(name: str | None, value: TypedValue | None) -> Callable[[Entity], TypedValue | None]:
            if name is not None:
                return lambda e: _lookup(e, name)
            return lambda e: value

        get_left, get_right = side(left_name, left_value), side(right_name, right_value)
        terms: list[tuple[str, str, str]] = []
        if left_name in ("PartitionKey", "RowKey") and right_value is not None and right_value[0] == "Edm.String":
            terms.append((left_name, op, right_value[1]))
        return (lambda e: _compare(op, get_left(e), get_right(e))), terms


def parse_filter(text: str) -> Filter:
    tokens = tokenize(text)
    if not tokens:
        raise _invalid("the filter is empty")
    predicate, terms = _Parser(tokens).parse()
    return Filter(predicate, terms)


def datetime_value(value: datetime) -> TypedValue:
    return "Edm.DateTime", value
