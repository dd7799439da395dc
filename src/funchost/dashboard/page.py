"""What a dashboard section is: a small module exposing ``PAGE``, listed in `pages.PAGE_MODULES`.

    PAGE = Page("queues", "Queues", render, actions={"redrive": redrive, "clear": clear},
                applies=lambda runtime: True)

`render(view)` returns the section's HTML (its `<h1>` included) or a `Download`; it reads
``view.path`` (the URL segments after the section) and ``view.query``. An action gets the
posted form and returns the notice shown after it, or raises `ActionFailed` (any
`FunchostError` is shown the same way). Authorization, CSRF and the redirect after an action are
the app's (`app.py`): a page never checks them itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from funchost.dashboard.markup import Markup, join, tag, url
from funchost.errors import FunchostError

if TYPE_CHECKING:
    from funchost.dashboard.service import DashboardService
    from funchost.runtime.contracts import Runtime


class ActionFailed(FunchostError):
    """An action that could not be done; the message is shown to the user."""


class NotFound(FunchostError):
    """The thing a URL names does not exist (404, with a page that says what is missing)."""


@dataclass(frozen=True)
class Download:
    """A file to send instead of a page; always as an attachment, never rendered by the browser."""

    filename: str
    body: bytes
    content_type: str = "application/octet-stream"


@dataclass
class View:
    dashboard: DashboardService
    slug: str
    path: tuple[str, ...]  # URL segments after /_funchost/<slug>/
    query: Mapping[str, str]
    csrf: str

    @property
    def runtime(self) -> Runtime:
        return self.dashboard.runtime

    @property
    def prefix(self) -> str:
        return self.dashboard.prefix

    def href(self, *segments: str, slug: str | None = None, **query: Any) -> str:
        from urllib.parse import quote

        path = "/".join([self.prefix, slug or self.slug, *(quote(s, safe="") for s in segments)])
        return url(path, **query)

    def form(self, action: str, label: str, *, fields: Mapping[str, str] | None = None,
             confirm: str | None = None, danger: bool = False, describe: str | None = None) -> Markup:
        """A POST form running `action` of this section: the CSRF token and the page to come back
        to are hidden fields; `confirm` is asked by the script (without it, no question);
        `describe` is the button's accessible description (which item it acts on)."""
        hidden = {"csrf": self.csrf, "back": self.here(), **(fields or {})}
        return tag("form", join(*(tag("input", type="hidden", name=k, value=v) for k, v in hidden.items()),
                                tag("button", label, type="submit", class_="danger" if danger else None,
                                    aria_label=describe)),
                   method="post", action=self.href(action), class_="action", data_confirm=confirm)

    def here(self) -> str:
        query = {k: v for k, v in self.query.items() if k not in ("notice",)}
        return self.href(*self.path, **query)


Render = Callable[[View], Awaitable[Markup | Download]]
Action = Callable[[View, Mapping[str, str]], Awaitable[str]]


def always(runtime: Runtime) -> bool:
    return True


@dataclass(frozen=True)
class Page:
    slug: str  # the URL segment: /_funchost/<slug>
    title: str  # the navigation label and the document title
    render: Render
    actions: Mapping[str, Action] = field(default_factory=dict)
    # Whether the section is listed in the navigation for this app (its URL answers regardless).
    applies: Callable[[Runtime], bool] = always
    # Resources that other processes change too (queues, blobs, ...): the live view also refreshes
    # the page every few seconds, not only when this host records invocations.
    polled: bool = True


def uses_binding(runtime: Runtime, *types: str) -> bool:
    """Whether any function of the app (running or in error) has a trigger or binding of these types."""
    wanted = {t.lower() for t in types}
    return any(b.type.lower() in wanted for f in runtime.functions.values() for b in f.bindings)
