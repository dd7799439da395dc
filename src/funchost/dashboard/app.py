"""The dashboard's ASGI app, mounted at ``/_funchost`` on the host's port.

    GET  /_funchost/                      the first section (functions)
    GET  /_funchost/<section>[/...]       a section's page (or a download)
    POST /_funchost/<section>/<action>    an action, then 303 back to the page with a notice
    GET  /_funchost/events?page=<section> the live view's event stream (`live.py`)
    GET  /_funchost/static/<file>         the style sheet and script (no data: no key needed)

Every other request is checked by `auth.Gate` first: 403 for a remote client, 401 (a page that
says how to sign in and nothing else) without the master key.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections import OrderedDict
from importlib import resources
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, quote, urlencode

from funchost.dashboard import layout, live
from funchost.dashboard.auth import Access, Gate, Request, Verdict, cookie_header
from funchost.dashboard.layout import SECURITY_HEADERS, Notice
from funchost.dashboard.markup import Markup, join, tag
from funchost.dashboard.page import ActionFailed, Download, NotFound, Page, View
from funchost.errors import FunchostError
from funchost.triggers.http.asgi import BodyTooLarge, ClientGone, Receive, Scope, Send, read_body, respond

if TYPE_CHECKING:
    from funchost.dashboard.service import DashboardService

log = logging.getLogger("funchost.dashboard")

FORM_LIMIT = 64 * 1024
NOTICES_KEPT = 64
STATIC_TYPES = {"css": b"text/css; charset=utf-8", "js": b"text/javascript; charset=utf-8"}
SIGN_IN_HELP = ("Open the dashboard with ?code=<master key> once (the link funchost start prints); "
                "the browser then keeps a session cookie for it.")


class DashboardApp:
    def __init__(self, dashboard: DashboardService) -> None:
        self.dashboard = dashboard
        self.prefix = dashboard.prefix
        self._notices: OrderedDict[str, Notice] = OrderedDict()
        self._static: dict[str, bytes] = {}

    @property
    def gate(self) -> Gate:
        return Gate(self.dashboard.runtime.services.keys, allow_remote=self.dashboard.options.allow_remote)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        rest = scope["path"][len(self.prefix):]
        if rest.startswith("/static/") and scope["method"] in ("GET", "HEAD"):
            await self._static_file(rest[len("/static/"):], send)
            return
        request = Request.from_scope(scope)
        gate = self.gate
        access = gate.check(request)
        if access.verdict == Verdict.FORBIDDEN:
            await self._message(send, 403, "Forbidden", "The dashboard answers only on this machine "
                                "(set FUNCHOST_DASHBOARD_ALLOW_REMOTE=true to allow other clients).")
            return
        if access.verdict == Verdict.UNAUTHORIZED:
            await self._message(send, 401, "Sign in to the dashboard", SIGN_IN_HELP)
            return
        if access.verdict == Verdict.SIGN_IN:
            await self._sign_in(scope, request, gate, send)
            return
        segments = [s for s in rest.split("/") if s]
        method = scope["method"]
        if method in ("GET", "HEAD"):
            await self._get(segments, request, gate, receive, send)
        elif method == "POST" and len(segments) == 2:
            await self._post(segments[0], segments[1], request, access, gate, scope, receive, send)
        else:
            await respond(send, 405, b"", [(b"allow", b"GET, HEAD, POST")])

    # -- pages ------------------------------------------------------------------------------------

    async def _get(self, segments: list[str], request: Request, gate: Gate, receive: Receive, send: Send) -> None:
        pages = self.dashboard.pages
        if not segments:
            await respond(send, 303, b"", [(b"location", f"{self.prefix}/{pages[0].slug}".encode())])
            return
        if segments == ["events"]:
            await self._events(request, receive, send)
            return
        page = self._page(segments[0])
        if page is None:
            await self._message(send, 404, "Not found", "The dashboard has no such section.")
            return
        notice = self._notices.pop(request.query.get("notice", ""), None)
        view = View(self.dashboard, page.slug, tuple(segments[1:]), request.query, gate.csrf())
        try:
            content = await page.render(view)
        except NotFound as exc:
            await self._page_response(send, 404, page, join(tag("h1", "Not found"), tag("p", str(exc))), notice)
            return
        except FunchostError as exc:  # storage unreachable, ...: the section says so, the rest works
            await self._page_response(send, 503, page, join(tag("h1", page.title), tag("p", str(exc), role="alert")),
                                      notice)
            return
        if isinstance(content, Download):
            await self._download(send, content)
            return
        await self._page_response(send, 200, page, content, notice)

    def _page(self, slug: str) -> Page | None:
        return next((p for p in self.dashboard.pages if p.slug == slug), None)

    async def _page_response(self, send: Send, status: int, page: Page, body: Markup,
                             notice: Notice | None) -> None:
        dashboard = self.dashboard
        html = layout.document(prefix=self.prefix, title=page.title, app_name=dashboard.runtime.app_dir.name,
                               body=body,
                               nav=dashboard.navigation(), current=page.slug, notice=notice,
                               events=f"{self.prefix}/events?{urlencode({'page': page.slug})}")
        await respond(send, status, html, [layout.HTML_TYPE, *SECURITY_HEADERS])

    async def _message(self, send: Send, status: int, title: str, text: str) -> None:
        await respond(send, status, layout.message_page(self.prefix, title, text), [layout.HTML_TYPE, *SECURITY_HEADERS])

    async def _download(self, send: Send, download: Download) -> None:
        name = quote(download.filename, safe="")
        await respond(send, 200, download.body, [
            (b"content-type", download.content_type.encode("latin-1")),
            (b"content-disposition", f"attachment; filename*=UTF-8''{name}".encode("latin-1")),
            *SECURITY_HEADERS])

    async def _sign_in(self, scope: Scope, request: Request, gate: Gate, send: Send) -> None:
        """Set the session cookie and reload the same address without the key: a page of our own
        navigates (not a redirect), so the SameSite=Strict cookie goes with it even when the
        link was opened from another application."""
        query = [(k, v) for k, v in parse_qsl(scope.get("query_string", b"").decode("latin-1"),
                                              keep_blank_values=True) if k != "code"]
        target = scope["path"] + ("?" + urlencode(query) if query else "")
        body = layout.document(prefix=self.prefix, title="Signing in", app_name="", refresh=target,
                               body=join(tag("h1", "Signed in"),
                                         tag("p", tag("a", "Continue to the dashboard", href=target))))
        await respond(send, 200, body, [layout.HTML_TYPE, *SECURITY_HEADERS,
                                        (b"set-cookie", cookie_header(gate.session(), self.prefix).encode())])

    # -- actions ----------------------------------------------------------------------------------

    async def _post(self, slug: str, name: str, request: Request, access: Access, gate: Gate, scope: Scope,
                    receive: Receive, send: Send) -> None:
        try:
            raw = await read_body(scope, receive, FORM_LIMIT)
        except BodyTooLarge:
            await respond(send, 413)
            return
        except ClientGone:
            return
        form = dict(parse_qsl(raw.decode("utf-8", errors="replace"), keep_blank_values=True))
        if not gate.action_allowed(request, access, form):
            await self._message(send, 403, "Forbidden", "This action must come from the dashboard's own page "
                                "(the request's origin or its form token did not match).")
            return
        page = self._page(slug)
        action = page.actions.get(name) if page is not None else None
        if page is None or action is None:
            await self._message(send, 404, "Not found", "The dashboard has no such action.")
            return
        view = View(self.dashboard, page.slug, (), {}, gate.csrf())
        try:
            notice = Notice(await action(view, form))
        except FunchostError as exc:
            notice = Notice(str(exc) if isinstance(exc, ActionFailed | NotFound) else f"{type(exc).__name__}: {exc}",
                            ok=False)
        log.info("Dashboard action %s/%s: %s", slug, name, notice.text,
                 extra={"event": "DashboardAction", "section": slug, "action": name, "succeeded": notice.ok})
        back = form.get("back", "")
        if not back.startswith(self.prefix + "/") or back.startswith("//") or "\\" in back:
            back = f"{self.prefix}/{slug}"
        await respond(send, 303, b"", [(b"location", _with_notice(back, self._remember(notice)).encode("latin-1"))])

    def _remember(self, notice: Notice) -> str:
        key = secrets.token_urlsafe(12)
        self._notices[key] = notice
        while len(self._notices) > NOTICES_KEPT:
            self._notices.popitem(last=False)
        return key

    # -- live view --------------------------------------------------------------------------------

    async def _events(self, request: Request, receive: Receive, send: Send) -> None:
        page = self._page(request.query.get("page", ""))
        dashboard = self.dashboard
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"text/event-stream; charset=utf-8"), (b"x-accel-buffering", b"no"),
            *SECURITY_HEADERS]})
        gone = asyncio.Event()

        async def watch_disconnect() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()

        watcher = asyncio.get_running_loop().create_task(watch_disconnect())
        try:
            stream = live.changes(dashboard.notifier, dashboard.runtime.clock, polled=dashboard.polled(page),
                                  stopping=lambda: gone.is_set() or dashboard.stopping())
            async for chunk in stream:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            if not gone.is_set():
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            pass  # the client went away mid-write
        finally:
            watcher.cancel()

    # -- static files -----------------------------------------------------------------------------

    async def _static_file(self, name: str, send: Send) -> None:
        kind = name.rsplit(".", 1)[-1]
        if "/" in name or kind not in STATIC_TYPES or name not in ("dashboard.css", "dashboard.js"):
            await respond(send, 404)
            return
        body = self._static.get(name)
        if body is None:
            body = self._static[name] = resources.files("funchost.dashboard").joinpath("static").joinpath(name).read_bytes()
        await respond(send, 200, body, [(b"content-type", STATIC_TYPES[kind]), *SECURITY_HEADERS[:2],
                                        (b"cache-control", b"no-cache")])


def _with_notice(target: str, key: str) -> str:
    return f"{target}{'&' if '?' in target else '?'}notice={key}"

