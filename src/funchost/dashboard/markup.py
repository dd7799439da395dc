"""HTML built from functions, escaped by construction.

Every string that is not `Markup` is escaped where it is placed, so data from functions, queues,
blobs and events (message bodies, log lines, names) can never become markup:

    tag("td", message.body)                      # escaped text
    tag("a", "details", href=url)                # attribute values escaped too
    tag("ul", [tag("li", n) for n in names])     # lists are flattened
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

Child = Any  # str | Markup | number | None | Iterable of those


class Markup(str):
    """Text that is already HTML (built by `tag` or `raw`)."""

    __slots__ = ()


def escape(value: Any) -> Markup:
    if isinstance(value, Markup):
        return value
    return Markup(html.escape("" if value is None else str(value), quote=True))


def raw(text: str) -> Markup:
    """Fixed markup written in this package (never data)."""
    return Markup(text)


def _children(children: Iterable[Child]) -> str:
    parts: list[str] = []
    for child in children:
        if child is None or child is False:
            continue
        if isinstance(child, str | int | float):
            parts.append(escape(child))
        else:
            parts.append(_children(child))
    return "".join(parts)


_VOID = frozenset({"br", "input", "meta", "link", "hr", "img"})


def tag(element: str, /, *children: Child, **attributes: Any) -> Markup:
    """`<name attr="...">children</name>`; `class_` is `class`, `aria_label` is `aria-label`,
    True is a bare attribute, None / False leave the attribute out."""
    attrs = []
    for key, value in attributes.items():
        if value is None or value is False:
            continue
        attr = key.rstrip("_").replace("_", "-")
        attrs.append(f" {attr}" if value is True else f' {attr}="{escape(value)}"')
    opening = f"<{element}{''.join(attrs)}>"
    if element in _VOID:
        return Markup(opening)
    return Markup(f"{opening}{_children(children)}</{element}>")


def join(*children: Child) -> Markup:
    return Markup(_children(children))


def url(path: str, /, **query: Any) -> str:
    """A dashboard URL with the query values that are set (None is left out)."""
    values = {k: v for k, v in query.items() if v is not None and v != ""}
    return path + ("?" + urlencode(values) if values else "")


def when(seconds: float | None) -> Markup:
    """A `<time>` element in UTC (machine-readable in `datetime`)."""
    if seconds is None:
        return escape("-")
    moment = datetime.fromtimestamp(seconds, UTC)
    return tag("time", moment.strftime("%Y-%m-%d %H:%M:%S") + f".{moment.microsecond // 1000:03d}",
               datetime=moment.isoformat().replace("+00:00", "Z"))


def moment(value: datetime | None) -> Markup:
    return when(value.timestamp() if value is not None else None)


def age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def pretty(value: Any) -> str:
    """JSON for a `<pre>` block (escaped where it is placed)."""
    try:
        return json.dumps(value, indent=2, default=str, ensure_ascii=False)
    except ValueError:
        return str(value)


def table(caption: str, headers: Iterable[str], rows: Iterable[Iterable[Child]], *, empty: str,
          live: str | None = None, **attributes: Any) -> Markup:
    """A table with a caption and column headers (`scope="col"`), or a paragraph when empty.
    `live` names the region the live view refreshes."""
    body = [tag("tr", [tag("td", cell) for cell in row]) for row in rows]
    if not body:
        return tag("p", empty, class_="empty", data_live=live, id=live and f"live-{live}")
    return tag("div", tag("table",
                          tag("caption", caption),
                          tag("thead", tag("tr", [tag("th", h, scope="col") for h in headers])),
                          tag("tbody", body), **attributes),
               class_="table-wrap", data_live=live, id=live and f"live-{live}")


def definitions(items: Mapping[str, Child] | Iterable[tuple[str, Child]]) -> Markup:
    pairs = items.items() if isinstance(items, Mapping) else items
    return tag("dl", [join(tag("dt", k), tag("dd", v)) for k, v in pairs])
