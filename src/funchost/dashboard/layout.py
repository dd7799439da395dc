"""The page around every section: landmarks, navigation, notices, and the security headers.

Landmarks (banner, navigation, main, contentinfo) and a skip link come first so keyboard and
screen-reader users reach the content directly; the current section is marked
``aria-current="page"``; notices after an action are a ``role="status"`` region (``alert`` for a
failure). The script and style sheet are the dashboard's own files: no CDN, no build step, and a
Content-Security-Policy that allows nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from funchost import __version__
from funchost.dashboard.markup import Markup, join, raw, tag

SECURITY_HEADERS: list[tuple[bytes, bytes]] = [
    (b"content-security-policy",
     b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
     b"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),  # no-referrer would make browsers send "Origin: null"
    (b"cache-control", b"no-store"),
]
HTML_TYPE = (b"content-type", b"text/html; charset=utf-8")


@dataclass(frozen=True)
class NavItem:
    slug: str
    title: str


@dataclass(frozen=True)
class Notice:
    text: str
    ok: bool = True


def document(*, prefix: str, title: str, app_name: str, body: Markup, nav: Sequence[NavItem] = (),
             current: str | None = None, notice: Notice | None = None, events: str | None = None,
             refresh: str | None = None) -> bytes:
    """A whole HTML page. `events` is the live view's event stream (None: a static page);
    `refresh` an address the page moves to at once (without script)."""
    links = [tag("li", tag("a", item.title, href=f"{prefix}/{item.slug}",
                           aria_current="page" if item.slug == current else None)) for item in nav]
    notice_region = tag("div", _notice(notice), id="notices", role="status" if notice is None or notice.ok
                        else "alert", class_="notices")
    page = join(
        raw("<!DOCTYPE html>"),
        tag("html",
            tag("head",
                tag("meta", charset="utf-8"),
                tag("meta", name="viewport", content="width=device-width, initial-scale=1"),
                tag("meta", http_equiv="refresh", content=f"0;url={refresh}") if refresh else None,
                tag("title", f"{title} - funchost dashboard"),
                tag("link", rel="stylesheet", href=f"{prefix}/static/dashboard.css"),
                tag("script", src=f"{prefix}/static/dashboard.js", defer=True)),
            tag("body",
                tag("a", "Skip to content", href="#main", class_="skip"),
                tag("header",
                    tag("p", tag("a", "funchost", href=f"{prefix}/", class_="brand"), " ",
                        tag("span", app_name, class_="app")),
                    tag("nav", tag("ul", links), aria_label="Sections") if links else None),
                tag("main", notice_region, body, id="main", tabindex="-1"),
                tag("footer", tag("p", f"funchost {__version__}. ",
                                  tag("span", "Live updates are on." if events else "", id="live-state"))),
                tag("div", "", id="live-status", role="status", aria_live="polite", class_="visually-hidden"),
                data_events=events, data_prefix=prefix),
            lang="en"),
    )
    return page.encode("utf-8")


def _notice(notice: Notice | None) -> Markup | None:
    if notice is None:
        return None
    return tag("p", notice.text, class_="notice ok" if notice.ok else "notice error")


def message_page(prefix: str, title: str, text: str) -> bytes:
    """A page that shows no data at all (401, 403, 404 of the dashboard itself)."""
    return document(prefix=prefix, title=title, app_name="", body=join(tag("h1", title), tag("p", text)))
