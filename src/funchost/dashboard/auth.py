"""Who may see the dashboard and act through it: the holder of the master key, as the admin API.

* ``?code=<master key>`` (once, e.g. the link printed at start) sets a session cookie,
  ``HttpOnly; SameSite=Strict; Path=/_funchost``, and the page then reloads without the key in
  its address (so the key stays out of the history and the Referer).
* The cookie holds an HMAC of the master key, not the key: it stops working when the key
  changes, and reading it does not reveal the key. Every comparison is constant-time.
* ``x-functions-key: <master key>`` works as on the admin API (tools, scripts).
* Actions (POST) with the cookie also need the page's CSRF token (another HMAC of the key) and,
  when the browser sends them, an ``Origin`` equal to the dashboard's own and a
  ``Sec-Fetch-Site`` of ``same-origin``: another site cannot make a browser act, even before
  SameSite. A request with the key in a header cannot be made cross-site without CORS, which
  the dashboard never grants.
* Clients that are not on the loopback interface get 403 unless ``FUNCHOST_DASHBOARD_ALLOW_REMOTE``
  is true (the host itself binds 127.0.0.1 unless told otherwise).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qsl

from funchost.triggers.http.keys import AuthLevel, KeyStore

COOKIE = "funchost_dashboard"
KEY_HEADER = "x-functions-key"


def _hmac(master_key: str, purpose: bytes) -> str:
    return hmac.new(master_key.encode("utf-8"), b"funchost-dashboard:" + purpose, hashlib.sha256).hexdigest()


def session_token(master_key: str) -> str:
    return _hmac(master_key, b"session")


def csrf_token(master_key: str) -> str:
    return _hmac(master_key, b"csrf")


def cookie_header(token: str, prefix: str) -> str:
    return f"{COOKIE}={token}; Path={prefix}; HttpOnly; SameSite=Strict"


def is_loopback(host: str | None) -> bool:
    if not host:
        return False
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return host == "localhost"


@dataclass(frozen=True)
class Request:
    """What the checks need of an HTTP request (from its ASGI scope)."""

    method: str
    headers: Mapping[str, str]  # lower-cased names
    query: Mapping[str, str]
    client: str | None

    @classmethod
    def from_scope(cls, scope: Mapping[str, object]) -> Request:
        headers: dict[str, str] = {}
        for name, value in scope.get("headers", ()):  # type: ignore[attr-defined]
            headers.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))
        raw_query = scope.get("query_string", b"")
        query = dict(parse_qsl(raw_query.decode("latin-1") if isinstance(raw_query, bytes) else "",
                               keep_blank_values=True))
        client = scope.get("client")
        return cls(str(scope.get("method", "GET")), headers, query,
                   str(client[0]) if isinstance(client, tuple | list) and client else None)

    def cookie(self, name: str) -> str | None:
        raw = self.headers.get("cookie")
        if not raw:
            return None
        try:
            jar = SimpleCookie(raw)
        except CookieError:
            return None
        morsel = jar.get(name)
        return morsel.value if morsel is not None else None


class Verdict:
    ALLOWED = "allowed"
    FORBIDDEN = "forbidden"  # not a loopback client
    UNAUTHORIZED = "unauthorized"
    SIGN_IN = "sign-in"  # a valid ?code=: set the cookie, reload without it


@dataclass(frozen=True)
class Access:
    verdict: str
    by_header: bool = False  # the key came in a header (no cookie, no CSRF token needed)


class Gate:
    def __init__(self, keys: KeyStore | None, *, allow_remote: bool) -> None:
        self.keys = keys
        self.allow_remote = allow_remote

    def check(self, request: Request) -> Access:
        if not self.allow_remote and not is_loopback(request.client):
            return Access(Verdict.FORBIDDEN)
        keys = self.keys
        if keys is None:
            return Access(Verdict.UNAUTHORIZED)
        code = request.query.get("code")
        if code is not None:
            return Access(Verdict.SIGN_IN if self._is_master(code) else Verdict.UNAUTHORIZED)
        header = request.headers.get(KEY_HEADER)
        if header is not None:
            return Access(Verdict.ALLOWED if self._is_master(header) else Verdict.UNAUTHORIZED, by_header=True)
        cookie = request.cookie(COOKIE)
        if cookie and hmac.compare_digest(cookie.encode("utf-8"), self.session().encode("utf-8")):
            return Access(Verdict.ALLOWED)
        return Access(Verdict.UNAUTHORIZED)

    def _is_master(self, presented: str) -> bool:
        assert self.keys is not None
        return self.keys.resolve(presented).level is AuthLevel.ADMIN

    def session(self) -> str:
        assert self.keys is not None
        return session_token(self.keys.master_key)

    def csrf(self) -> str:
        return csrf_token(self.keys.master_key) if self.keys is not None else ""

    def action_allowed(self, request: Request, access: Access, form: Mapping[str, str]) -> bool:
        """A POST may act: with the key in a header, or same-origin with the page's token."""
        if access.verdict != Verdict.ALLOWED:
            return False
        if access.by_header:
            return True
        if not same_origin(request):
            return False
        token = form.get("csrf", "")
        return bool(token) and hmac.compare_digest(token.encode("utf-8"), self.csrf().encode("utf-8"))


def same_origin(request: Request) -> bool:
    """The browser's own statements about where the request comes from, when it makes them."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site != "same-origin":
        return False
    origin = request.headers.get("origin")
    if origin is None:
        return True
    host = request.headers.get("host", "")
    return origin in (f"http://{host}", f"https://{host}")
