"""The SQL filter and rule-action language of Service Bus subscriptions (a documented subset).

Filters: comparisons (`= <> != < <= > >=`), `AND`, `OR`, `NOT`, parentheses, `IS [NOT] NULL`,
`[NOT] IN (...)`, `[NOT] LIKE 'pattern' [ESCAPE 'c']`, `EXISTS(prop)`, `+ - * / %`, string,
number, `TRUE`/`FALSE`/`NULL` literals. Names: `sys.<SystemProperty>` (case-insensitive),
`user.<prop>` or a bare `<prop>` (application properties), `[bracketed names]`. Unknown values
are NULL and comparisons with NULL are unknown (three-valued logic): a filter matches only when
it evaluates to TRUE. Actions: `SET <name> = <expr>` and `REMOVE <name>`, separated by `;`.

Source: "SQLFilter syntax" / "SQLRuleAction syntax" (learn.microsoft.com, Service Bus messaging)
and the emulator's Config.json sample (`sys.MessageId = '123456' AND userProp1 = 'value1'`,
`SET sys.To = 'Entity'`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from funchost.storage.servicebus import InvalidServiceBusInput

# System properties a filter can read or an action can set: SQL name (lower) -> message field.
SYSTEM_PROPERTIES = {
    "messageid": "message_id", "correlationid": "correlation_id", "to": "to", "replyto": "reply_to",
    "label": "subject", "subject": "subject", "sessionid": "session_id",
    "replytosessionid": "reply_to_session_id", "contenttype": "content_type",
    "sequencenumber": "sequence_number", "deliverycount": "delivery_count", "size": "size",
    "partitionkey": "partition_key", "enqueuedtimeutc": "enqueued_time_utc",
}

_TOKEN = re.compile(r"""
    \s*(?:
      (?P<string>'(?:[^']|'')*')
    | (?P<number>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
    | (?P<name>\[[^\]]+\]|[A-Za-z_@$][A-Za-z0-9_@$]*(?:\.(?:\[[^\]]+\]|[A-Za-z_@$][A-Za-z0-9_@$]*))?)
    | (?P<op><>|!=|<=|>=|[=<>(),;+\-*/%])
    )""", re.VERBOSE)
_KEYWORDS = {"and", "or", "not", "is", "null", "in", "like", "escape", "exists", "true", "false", "set", "remove"}

Props = MutableMapping[str, Any]


@dataclass(frozen=True)
class _Token:
    kind: str  # string | number | name | op | keyword | end
    value: Any


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    position = 0
    text = text.rstrip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise InvalidServiceBusInput(f"SQL expression: unexpected text at position {position}: "
                                         f"{text[position:position + 20]!r}")
        position = match.end()
        kind = match.lastgroup or "op"
        raw = match.group(kind)
        if kind == "string":
            tokens.append(_Token("string", raw[1:-1].replace("''", "'")))
        elif kind == "number":
            tokens.append(_Token("number", float(raw) if any(c in raw for c in ".eE") else int(raw)))
        elif kind == "name" and raw.lower() in _KEYWORDS:
            tokens.append(_Token("keyword", raw.lower()))
        else:
            tokens.append(_Token(kind, raw))
    tokens.append(_Token("end", None))
    return tokens


Node = Callable[[Props], Any]


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0

    # -- token helpers --
    def peek(self, kind: str, value: Any = None) -> bool:
        token = self.tokens[self.i]
        return token.kind == kind and (value is None or token.value == value)

    def take(self, kind: str, value: Any = None) -> _Token:
        if not self.peek(kind, value):
            found = self.tokens[self.i]
            wanted = value if value is not None else kind
            raise InvalidServiceBusInput(f"SQL expression {self.text!r}: expected {wanted!r}, "
                                         f"found {found.value if found.kind != 'end' else 'the end'!r}")
        token = self.tokens[self.i]
        self.i += 1
        return token

    def accept(self, kind: str, value: Any = None) -> bool:
        if self.peek(kind, value):
            self.i += 1
            return True
        return False

    # -- grammar --
    def expression(self) -> Node:
        left = self.conjunction()
        while self.accept("keyword", "or"):
            left = _or(left, self.conjunction())
        return left

    def conjunction(self) -> Node:
        left = self.negation()
        while self.accept("keyword", "and"):
            left = _and(left, self.negation())
        return left

    def negation(self) -> Node:
        if self.accept("keyword", "not"):
            inner = self.negation()
            return lambda p: None if (v := inner(p)) is None else not v
        return self.predicate()

    def predicate(self) -> Node:
        if self.accept("keyword", "exists"):
            self.take("op", "(")
            name = self.take("name").value
            self.take("op", ")")
            getter = _name(name)
            return lambda p: getter(p) is not None
        left = self.additive()
        if self.accept("keyword", "is"):
            negate = self.accept("keyword", "not")
            self.take("keyword", "null")
            return lambda p: (left(p) is None) != negate
        negate = self.accept("keyword", "not")
        if self.accept("keyword", "in"):
            self.take("op", "(")
            options = [self.additive()]
            while self.accept("op", ","):
                options.append(self.additive())
            self.take("op", ")")
            return _negated(_in(left, options), negate)
        if self.accept("keyword", "like"):
            pattern = self.take("string").value
            escape = self.take("string").value if self.accept("keyword", "escape") else None
            return _negated(_like(left, pattern, escape), negate)
        if negate:
            raise InvalidServiceBusInput(f"SQL expression {self.text!r}: NOT must precede IN or LIKE here")
        for op in ("=", "<>", "!=", "<=", ">=", "<", ">"):
            if self.accept("op", op):
                return _compare(op, left, self.additive())
        return left

    def additive(self) -> Node:
        left = self.term()
        while self.peek("op", "+") or self.peek("op", "-"):
            op = self.take("op").value
            left = _arith(op, left, self.term())
        return left

    def term(self) -> Node:
        left = self.factor()
        while self.peek("op", "*") or self.peek("op", "/") or self.peek("op", "%"):
            op = self.take("op").value
            left = _arith(op, left, self.factor())
        return left

    def factor(self) -> Node:
        token = self.tokens[self.i]
        if self.accept("op", "-"):
            inner = self.factor()
            return lambda p: None if (v := inner(p)) is None else -v
        if self.accept("op", "("):
            inner = self.expression()
            self.take("op", ")")
            return inner
        if token.kind in ("string", "number"):
            self.i += 1
            return _constant(token.value)
        if token.kind == "keyword" and token.value in ("true", "false", "null"):
            self.i += 1
            return _constant({"true": True, "false": False, "null": None}[token.value])
        if token.kind == "name":
            self.i += 1
            return _name(token.value)
        raise InvalidServiceBusInput(f"SQL expression {self.text!r}: unexpected {token.value!r}")

    def finish(self) -> None:
        self.take("end")


def _constant(value: Any) -> Node:
    return lambda p: value


def _split_name(name: str) -> tuple[str, str]:
    """("sys"|"user", property name)."""
    scope, dot, rest = name.partition(".")
    if dot and scope.lower() in ("sys", "user"):
        return scope.lower(), rest.strip("[]")
    return "user", name.strip("[]")


def _name(name: str) -> Node:
    scope, prop = _split_name(name)
    if scope == "sys":
        field = SYSTEM_PROPERTIES.get(prop.lower())
        if field is None:
            raise InvalidServiceBusInput(f"'sys.{prop}' is not a system property a filter can use")
        key = "sys." + field
        return lambda p: p.get(key)
    return lambda p: p.get(prop)


def _negated(node: Node, negate: bool) -> Node:
    if not negate:
        return node
    return lambda p: None if (v := node(p)) is None else not v


def _and(a: Node, b: Node) -> Node:
    def run(p: Props) -> Any:
        x, y = a(p), b(p)
        if x is False or y is False:
            return False
        return None if x is None or y is None else True
    return run


def _or(a: Node, b: Node) -> Node:
    def run(p: Props) -> Any:
        x, y = a(p), b(p)
        if x is True or y is True:
            return True
        return None if x is None or y is None else False
    return run


def _comparable(x: Any, y: Any) -> bool:
    numbers = (int, float)
    return (isinstance(x, numbers) and isinstance(y, numbers) and not isinstance(x, bool) and not isinstance(y, bool)) \
        or type(x) is type(y)


def _compare(op: str, a: Node, b: Node) -> Node:
    def run(p: Props) -> Any:
        x, y = a(p), b(p)
        if x is None or y is None or not _comparable(x, y):
            return None
        if op == "=":
            return x == y
        if op in ("<>", "!="):
            return x != y
        return {"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[op]
    return run


def _arith(op: str, a: Node, b: Node) -> Node:
    def run(p: Props) -> Any:
        x, y = a(p), b(p)
        if x is None or y is None:
            return None
        try:
            if op == "+":
                return x + y
            if op == "-":
                return x - y
            if op == "*":
                return x * y
            if op == "/":
                return x / y
            return x % y
        except (TypeError, ZeroDivisionError):
            return None
    return run


def _in(a: Node, options: list[Node]) -> Node:
    def run(p: Props) -> Any:
        x = a(p)
        if x is None:
            return None
        return any(_comparable(x, v) and x == v for v in (o(p) for o in options))
    return run


def _like(a: Node, pattern: str, escape: str | None) -> Node:
    regex, i = "", 0
    while i < len(pattern):
        c = pattern[i]
        if escape and c == escape and i + 1 < len(pattern):
            regex += re.escape(pattern[i + 1])
            i += 2
            continue
        regex += ".*" if c == "%" else "." if c == "_" else re.escape(c)
        i += 1
    compiled = re.compile(regex, re.DOTALL)

    def run(p: Props) -> Any:
        x = a(p)
        return None if not isinstance(x, str) else compiled.fullmatch(x) is not None
    return run


def compile_filter(expression: str) -> Node:
    """Parse a SQL filter once; InvalidServiceBusInput names the problem."""
    if not isinstance(expression, str) or not expression.strip():
        raise InvalidServiceBusInput("a SQL filter needs an expression")
    parser = _Parser(expression)
    node = parser.expression()
    parser.finish()
    return node


Action = Callable[[Props], None]


def compile_action(text: str) -> Action:
    """`SET name = expr; REMOVE name` applied to a message's property view."""
    parser = _Parser(text)
    steps: list[Action] = []
    while not parser.peek("end"):
        if parser.accept("keyword", "set"):
            scope, prop = _split_name(parser.take("name").value)
            parser.take("op", "=")
            value = parser.additive()
            steps.append(_set(_settable(scope, prop), value))
        elif parser.accept("keyword", "remove"):
            scope, prop = _split_name(parser.take("name").value)
            steps.append(_remove(_settable(scope, prop)))
        else:
            parser.take("keyword", "set")
        if not parser.accept("op", ";"):
            break
    parser.finish()

    def run(p: Props) -> None:
        for step in steps:
            step(p)
    return run


def _set(key: str, value: Node) -> Action:
    def run(p: Props) -> None:
        p[key] = value(p)
    return run


def _remove(key: str) -> Action:
    def run(p: Props) -> None:
        p.pop(key, None)
    return run


def _settable(scope: str, prop: str) -> str:
    if scope == "user":
        return prop
    field = SYSTEM_PROPERTIES.get(prop.lower())
    if field is None or field in ("sequence_number", "delivery_count", "size", "enqueued_time_utc"):
        raise InvalidServiceBusInput(f"a rule action cannot set 'sys.{prop}'")
    return "sys." + field
