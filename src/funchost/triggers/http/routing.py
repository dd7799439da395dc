"""Function routes: ASP.NET route templates and the host's first-match route table.

The host registers one route per HTTP function, ordered by function name (ordinal, case
insensitive), and the first route that matches the path, its constraints and the method wins;
there is no ASP.NET-style precedence of literal over parameter segments (azure-semantics 3.3).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote

from funchost.errors import ConfigError
from funchost.indexing.spec import FunctionSpec
from funchost.triggers.http.constraints import Constraint, resolve

RESERVED_PREFIXES = ("admin", "runtime")
BUILT_IN_CONFLICT = "The specified route conflicts with one or more built in routes."


@dataclass(frozen=True)
class Parameter:
    name: str
    constraints: tuple[Constraint, ...] = ()
    optional: bool = False
    default: str | None = None
    catch_all: bool = False

    @property
    def may_be_absent(self) -> bool:
        return self.optional or self.default is not None or self.catch_all

    def accepts(self, value: str) -> bool:
        return all(c(value) for c in self.constraints)


Part = str | Parameter  # a literal or a parameter inside one path segment


@dataclass(frozen=True)
class Segment:
    parts: tuple[Part, ...]
    patterns: tuple[re.Pattern[str], ...] = ()  # only for complex segments ("{a}.{b}")
    # Derived once: matching runs on every request.
    simple_parameter: Parameter | None = field(init=False, default=None)
    literal: str | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if len(self.parts) == 1:
            only = self.parts[0]
            if isinstance(only, Parameter):
                object.__setattr__(self, "simple_parameter", only)
            else:
                object.__setattr__(self, "literal", only.upper())


def split_path(raw_path: str) -> list[str]:
    """Path segments as ASP.NET sees them: decoded, except that ``%2F`` stays encoded."""
    path = raw_path.strip("/") if raw_path.endswith("/") else raw_path.lstrip("/")
    if not path:
        return []
    if "%" not in path:
        return path.split("/")  # nothing to decode (the common case)
    return [unquote(s.replace("%2F", "%252F").replace("%2f", "%252f")) for s in path.split("/")]


@dataclass(frozen=True)
class RouteTemplate:
    text: str
    segments: tuple[Segment, ...]
    parameters: tuple[Parameter, ...] = field(default=())

    @classmethod
    def parse(cls, text: str) -> RouteTemplate:
        return _TemplateParser(text).parse()

    def match(self, path_segments: list[str]) -> dict[str, str] | None:
        """Route values (absent optional parameters omitted), or None when the path does not match."""
        values: dict[str, str] = {}
        count = len(path_segments)
        for index, segment in enumerate(self.segments):
            parameter = segment.simple_parameter
            if parameter is not None and parameter.catch_all:
                rest = "/".join(path_segments[index:])
                if rest:
                    values[parameter.name] = rest
                elif parameter.default is not None:
                    values[parameter.name] = parameter.default
                return values if self._constraints_ok(values) else None
            if index >= count:
                if not self._rest_may_be_absent(index, values):
                    return None
                break
            value = path_segments[index]
            if parameter is not None:
                if value == "":
                    return None
                values[parameter.name] = value
            elif segment.literal is not None:
                if value.upper() != segment.literal:
                    return None
            elif not _match_complex(segment, value, values):
                return None
        if count > len(self.segments):
            return None
        return values if self._constraints_ok(values) else None

    def _rest_may_be_absent(self, start: int, values: dict[str, str]) -> bool:
        for segment in self.segments[start:]:
            parameter = segment.simple_parameter
            if parameter is None or not parameter.may_be_absent:
                return False
            if parameter.default is not None:
                values[parameter.name] = parameter.default
        return True

    def _constraints_ok(self, values: Mapping[str, str]) -> bool:
        for parameter in self.parameters:
            value = values.get(parameter.name)
            if value is not None and parameter.constraints and not parameter.accepts(value):
                return False
        return True


def _match_complex(segment: Segment, value: str, values: dict[str, str]) -> bool:
    found = next((m for m in (p.match(value) for p in segment.patterns) if m is not None), None)
    if found is None:
        return False
    groups = found.groupdict()
    for part in segment.parts:
        if isinstance(part, Parameter):
            captured = groups.get(_group(part.name))
            if captured is not None:
                values[part.name] = captured
            elif part.default is not None:
                values[part.name] = part.default
    return True


class _TemplateParser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.where = f"route '{text}'"

    def error(self, message: str) -> ConfigError:
        return ConfigError(message, path=self.where)

    def parse(self) -> RouteTemplate:
        body = self.text.strip("/")
        segments: list[Segment] = []
        parameters: list[Parameter] = []
        for raw_parts in self._split_segments(body):
            parts = tuple(p if isinstance(p, str) else self._parameter(p[0]) for p in raw_parts)
            segments.append(self._segment(parts))
            parameters.extend(p for p in parts if isinstance(p, Parameter))
        names = [p.name.lower() for p in parameters]
        if len(set(names)) != len(names):
            raise self.error("a route parameter name may appear only once")
        for parameter in parameters[:-1]:
            if parameter.catch_all:
                raise self.error("a catch-all parameter can only appear as the last segment")
        return RouteTemplate(self.text, tuple(segments), tuple(parameters))

    def _split_segments(self, body: str) -> list[list[str | tuple[str]]]:
        """Split on '/' outside braces; parameters come back as 1-tuples of their inner text."""
        segments: list[list[str | tuple[str]]] = [[]]
        literal: list[str] = []
        i, n = 0, len(body)
        while i < n:
            ch = body[i]
            if ch in "{}" and body[i + 1:i + 2] == ch:
                literal.append(ch)
                i += 2
            elif ch == "{":
                if literal:
                    segments[-1].append("".join(literal))
                    literal = []
                inner, i = self._read_parameter(body, i + 1)
                segments[-1].append((inner,))
            elif ch == "}":
                raise self.error("unbalanced '}' in route template")
            elif ch == "/":
                if literal:
                    segments[-1].append("".join(literal))
                    literal = []
                if not segments[-1]:
                    raise self.error("a route segment cannot be empty")
                segments.append([])
                i += 1
            else:
                literal.append(ch)
                i += 1
        if literal:
            segments[-1].append("".join(literal))
        return [s for s in segments if s]

    def _read_parameter(self, body: str, i: int) -> tuple[str, int]:
        inner: list[str] = []
        while i < len(body):
            ch = body[i]
            if ch in "{}" and body[i + 1:i + 2] == ch:
                inner.append(ch)
                i += 2
                continue
            if ch == "}":
                return "".join(inner), i + 1
            if ch == "{":
                raise self.error("unescaped '{' inside a route parameter")
            inner.append(ch)
            i += 1
        raise self.error("unterminated '{' in route template")

    def _parameter(self, text: str) -> Parameter:
        catch_all = text.startswith("*")
        text = text.lstrip("*")
        i, n = 0, len(text)
        while i < n and text[i] not in ":=?":
            i += 1
        name = text[:i].strip()
        if not name:
            raise self.error("a route parameter must have a name")
        constraints: list[Constraint] = []
        while i < n and text[i] == ":":
            start = i + 1
            i = self._constraint_end(text, start)
            constraints.append(resolve(text[start:i], self.where))
        optional, default = False, None
        if i < n and text[i] == "=":
            default = text[i + 1:]
        elif i < n and text[i] == "?" and i == n - 1:
            optional = True
        elif i < n:
            raise self.error(f"invalid route parameter '{{{text}}}'")
        return Parameter(name, tuple(constraints), optional, default, catch_all)

    @staticmethod
    def _constraint_end(text: str, start: int) -> int:
        j = start
        while j < len(text):
            if text[j] == "(":
                # Arguments run to a ')' followed by the end or by ':', '=', '?'.
                k = j + 1
                while k < len(text):
                    if text[k] == ")" and (k + 1 == len(text) or text[k + 1] in ":=?"):
                        return k + 1
                    k += 1
                return len(text)
            if text[j] in ":=?":
                return j
            j += 1
        return j

    def _segment(self, parts: tuple[Part, ...]) -> Segment:
        if len(parts) == 1:
            return Segment(parts)
        for left, right in zip(parts, parts[1:], strict=False):
            if isinstance(left, Parameter) and isinstance(right, Parameter):
                raise self.error("a path segment cannot contain two consecutive parameters")
        # ASP.NET matches complex segments right to left: the last literal is found at its last
        # occurrence, so earlier parameters are greedy. A trailing optional parameter (with the
        # literal before it) is tried present first, then absent.
        last = parts[-1]
        optional_tail = isinstance(last, Parameter) and (last.optional or last.default is not None)
        patterns = [self._complex_regex(parts)]
        if optional_tail and len(parts) > 2:
            patterns.append(self._complex_regex(parts[:-2]))
        return Segment(parts, tuple(patterns))

    def _complex_regex(self, parts: tuple[Part, ...]) -> re.Pattern[str]:
        pattern: list[str] = []
        for part in parts:
            if isinstance(part, str):
                pattern.append(re.escape(part))
            elif part.catch_all:
                raise self.error("a catch-all parameter cannot be part of a complex segment")
            else:
                pattern.append(f"(?P<{_group(part.name)}>.+)")
        return re.compile("^" + "".join(pattern) + "$", re.IGNORECASE | re.DOTALL)


def _group(name: str) -> str:
    return "p_" + "".join(ch if ch.isalnum() else "_" for ch in name)


# ----------------------------------------------------------------------------------------------
# The route table


@dataclass(frozen=True)
class HttpRoute:
    function: FunctionSpec
    template: RouteTemplate
    methods: frozenset[str]  # upper-case; empty = every method
    auth_level: str  # "anonymous" | "function" | "admin" | ...
    route: str  # the function's route without the prefix, as written

    def allows(self, method: str) -> bool:
        return not self.methods or method.upper() in self.methods


def function_route(function: FunctionSpec) -> str:
    route = function.trigger.get("route")
    return str(route) if route else function.name


def function_methods(function: FunctionSpec) -> frozenset[str]:
    methods = function.trigger.get("methods") or ()
    if isinstance(methods, str):
        methods = [m for m in methods.split(",") if m.strip()]
    return frozenset(str(m).strip().upper() for m in methods)


def function_auth_level(function: FunctionSpec) -> str:
    return str(function.trigger.get("authLevel") or "function").lower()


def full_template(route_prefix: str, route: str) -> str:
    route = route.strip("/")
    prefix = route_prefix.strip("/")
    return f"{prefix}/{route}" if prefix and route else (prefix or route)


def sort_key(name: str) -> str:
    """.NET OrdinalIgnoreCase compares upper-cased UTF-16 code units."""
    return name.upper()


def _normalized(route: str) -> str:
    return route.strip("/").lower()


def validate_route(function: FunctionSpec, others: Iterable[FunctionSpec]) -> None:
    """Start-up checks of one HTTP function against the functions registered before it."""
    route = function_route(function)
    normalized = _normalized(route)
    if any(normalized.startswith(prefix) for prefix in RESERVED_PREFIXES):
        raise ConfigError(BUILT_IN_CONFLICT)  # the host's words, as the function's error
    RouteTemplate.parse(route)
    methods = function_methods(function)
    for other in others:
        if other.name == function.name or not other.is_http:
            continue
        if sort_key(other.name) > sort_key(function.name):
            continue
        if _normalized(function_route(other)) != normalized:
            continue
        other_methods = function_methods(other)
        if not methods or not other_methods or methods & other_methods:
            raise ConfigError(f"The route specified conflicts with the route defined by function '{other.name}'.")


MATCHES_KEPT = 1024  # (method, path) answers remembered; the table forgets them all when full
KEPT_PATH_LENGTH = 512  # longer paths are matched each time (the answers kept stay small)


class RouteTable:
    def __init__(self, routes: Iterable[HttpRoute]) -> None:
        self.routes = tuple(sorted(routes, key=lambda r: sort_key(r.function.name)))
        # A path's answer depends only on the method, the path and the (fixed) routes: a path
        # requested again (the common case) is answered without splitting it and trying each route.
        self._answers: dict[tuple[str, str], tuple[HttpRoute, dict[str, str]] | None] = {}

    @classmethod
    def build(cls, functions: Iterable[FunctionSpec], route_prefix: str) -> tuple[RouteTable, dict[str, str]]:
        """The table of valid HTTP functions, and the error of each function left out."""
        http = sorted((f for f in functions if f.is_http), key=lambda f: sort_key(f.name))
        routes: list[HttpRoute] = []
        errors: dict[str, str] = {}
        accepted: list[FunctionSpec] = []
        for function in http:
            try:
                validate_route(function, accepted)
                route = function_route(function)
                template = RouteTemplate.parse(full_template(route_prefix, route))
            except ConfigError as exc:
                errors[function.name] = str(exc)
                continue
            accepted.append(function)
            routes.append(HttpRoute(function, template, function_methods(function),
                                    function_auth_level(function), route))
        return cls(routes), errors

    def match(self, method: str, path: str) -> tuple[HttpRoute, dict[str, str]] | None:
        """The route that takes the request and its route values (a dict of the caller's own)."""
        key = (method, path)
        answers = self._answers
        if key in answers:
            found = answers[key]
        else:
            found = self._match(method, path)
            if len(path) <= KEPT_PATH_LENGTH:
                if len(answers) >= MATCHES_KEPT:
                    answers.clear()
                answers[key] = found
        return None if found is None else (found[0], dict(found[1]))

    def _match(self, method: str, path: str) -> tuple[HttpRoute, dict[str, str]] | None:
        segments = split_path(path)
        for route in self.routes:
            if not route.allows(method):
                continue
            values = route.template.match(segments)
            if values is not None:
                return route, values
        return None

    def find(self, name: str) -> HttpRoute | None:
        lowered = name.lower()
        for route in self.routes:
            if route.function.name.lower() == lowered:
                return route
        return None
