"""Who gets the dashboard: the master key only (401 without data otherwise), loopback clients by
default, actions only from the dashboard's own pages (CSRF), nothing secret on any page."""

from __future__ import annotations

from pathlib import Path

import httpx
from tests.unit.dashboard.support import SECRET, cookie_of, csrf_of, dashboard_host, flushed, page, sign_in

from funchost.dashboard.auth import csrf_token, session_token

SECTIONS = ["functions", "invocations", "durable", "queues", "blobs", "timers", "eventgrid", "changefeed", "servicebus",
            "eventhubs"]


async def test_without_or_with_a_wrong_key_every_section_is_401_without_data(tmp_path: Path) -> None:
    async with dashboard_host(tmp_path) as host:
        await host.http("GET", "/api/hello")
        await flushed(host)
        for section in ["", *SECTIONS, "invocations?function=hello", "events?page=functions"]:
            for headers in ({}, {"x-functions-key": "wrong"}):
                response = await host.http("GET", f"/_funchost/{section}", headers=headers)
                assert response.status_code == 401, section
                assert "hello" not in response.text and "orders" not in response.text
        wrong_code = await host.http("GET", "/_funchost/functions?code=wrong")
        assert wrong_code.status_code == 401 and "set-cookie" not in wrong_code.headers
        function_key = host.runtime.services.keys.host_function_keys["default"]  # type: ignore[union-attr]
        assert (await host.http("GET", "/_funchost/functions", headers={"x-functions-key": function_key})
                ).status_code == 401


async def test_the_code_sets_a_strict_http_only_cookie_and_reloads_without_the_key(tmp_path: Path) -> None:
    async with dashboard_host(tmp_path) as host:
        master = host.runtime.services.keys.master_key  # type: ignore[union-attr]
        response = await sign_in(host, "invocations?function=hello")
        assert response.status_code == 200
        cookie = response.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/_funchost" in cookie
        assert master not in cookie  # an HMAC of the key, not the key
        assert 'http-equiv="refresh" content="0;url=/_funchost/invocations?function=hello"' in response.text
        assert master not in response.text
        signed_in = await host.http("GET", "/_funchost/functions", headers={"cookie": cookie_of(response)})
        assert signed_in.status_code == 200 and "hello" in signed_in.text
        forged = await host.http("GET", "/_funchost/functions",
                                 headers={"cookie": f"funchost_dashboard={session_token('another key')}"})
        assert forged.status_code == 401


async def test_remote_clients_are_refused_unless_allowed(tmp_path: Path) -> None:
    async with dashboard_host(tmp_path) as host:
        from funchost.triggers.http.server import create_asgi_app

        app = create_asgi_app(host.runtime, host.runtime.services.keys)  # type: ignore[arg-type]
        master = host.runtime.services.keys.master_key  # type: ignore[union-attr]
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app, client=("192.0.2.7", 4000)),
                                     base_url="http://example.test") as remote:
            response = await remote.get("/_funchost/functions", headers={"x-functions-key": master})
            assert response.status_code == 403 and "hello" not in response.text
    async with dashboard_host(tmp_path / "remote", FUNCHOST_DASHBOARD_ALLOW_REMOTE="true") as host:
        app = create_asgi_app(host.runtime, host.runtime.services.keys)  # type: ignore[arg-type]
        master = host.runtime.services.keys.master_key  # type: ignore[union-attr]
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app, client=("192.0.2.7", 4000)),
                                     base_url="http://example.test") as remote:
            assert (await remote.get("/_funchost/functions", headers={"x-functions-key": master})).status_code == 200


async def _signed_in(host) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    cookie = cookie_of(await sign_in(host, "queues"))
    html = (await host.http("GET", "/_funchost/queues/parked", headers={"cookie": cookie})).text
    return cookie, csrf_of(html)


async def test_actions_need_the_page_token_and_the_same_origin(tmp_path: Path) -> None:
    async with dashboard_host(tmp_path) as host:
        await host.queues.send("parked", "a")
        cookie, token = await _signed_in(host)
        assert token == csrf_token(host.runtime.services.keys.master_key)  # type: ignore[union-attr]
        form = {"queue": "parked", "back": "/_funchost/queues/parked"}
        same = {"cookie": cookie, "origin": "http://localhost:7071", "sec-fetch-site": "same-origin"}
        refused = [
            ({"cookie": cookie}, form),  # no token
            ({"cookie": cookie}, {**form, "csrf": "0" * 64}),  # a wrong token
            ({**same, "origin": "http://evil.test"}, {**form, "csrf": token}),  # another origin
            ({**same, "sec-fetch-site": "cross-site"}, {**form, "csrf": token}),  # the browser says cross-site
            ({}, {**form, "csrf": token}),  # no session at all
        ]
        for headers, data in refused:
            response = await host.http("POST", "/_funchost/queues/clear", headers=headers, data=data)
            assert response.status_code in (401, 403), (headers, data)
            assert await host.queues.count("parked") == 1
        done = await host.http("POST", "/_funchost/queues/clear", headers=same, data={**form, "csrf": token})
        assert done.status_code == 303
        assert done.headers["location"].startswith("/_funchost/queues/parked?notice=")
        assert await host.queues.count("parked") == 0
        notice = await host.http("GET", done.headers["location"], headers={"cookie": cookie})
        assert "Cleared &#x27;parked&#x27;." in notice.text


async def test_an_action_with_the_key_in_a_header_needs_no_token(tmp_path: Path) -> None:
    async with dashboard_host(tmp_path) as host:
        await host.queues.send("parked", "a")
        response = await host.http("POST", "/_funchost/queues/clear", key="master", data={"queue": "parked"})
        assert response.status_code == 303 and await host.queues.count("parked") == 0


async def test_back_must_stay_on_the_dashboard(tmp_path: Path) -> None:
    async with dashboard_host(tmp_path) as host:
        for back in ("https://evil.test/", "//evil.test/_funchost/", "/api/hello"):
            response = await host.http("POST", "/_funchost/queues/clear", key="master",
                                       data={"queue": "parked", "back": back})
            assert response.headers["location"].startswith("/_funchost/queues?notice=")


async def test_pages_carry_a_strict_content_security_policy(tmp_path: Path) -> None:
    async with dashboard_host(tmp_path) as host:
        response = await page(host, "functions")
        policy = response.headers["content-security-policy"]
        assert "default-src 'none'" in policy and "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["cache-control"] == "no-store"
        for name, kind in (("dashboard.js", "text/javascript"), ("dashboard.css", "text/css")):
            static = await host.http("GET", f"/_funchost/static/{name}")  # no data: no key needed
            assert static.status_code == 200 and static.headers["content-type"].startswith(kind)
        assert (await host.http("GET", "/_funchost/static/other.js")).status_code == 404
        assert (await host.http("GET", "/_funchost/static/../keys/host.json")).status_code in (401, 404)


async def test_no_page_shows_a_connection_string_or_a_key(tmp_path: Path) -> None:
    async with dashboard_host(tmp_path) as host:
        await host.http("GET", "/api/hello")
        await flushed(host)
        keys = host.runtime.services.keys
        assert keys is not None
        secrets = [SECRET, "c2VjcmV0LWtleS12YWx1ZQ==", keys.master_key, *keys.host_function_keys.values()]
        for section in SECTIONS:
            html = (await page(host, section)).text
            assert not [s for s in secrets if s in html], section


async def test_the_dashboard_is_off_with_the_setting(tmp_path: Path) -> None:
    async with dashboard_host(tmp_path, FUNCHOST_DASHBOARD="false") as host:
        assert (await page(host, "functions")).status_code == 404
        assert not (tmp_path / "data" / "dashboard").exists()
