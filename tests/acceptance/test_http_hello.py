"""`funchost start examples/hello` as a real process, called over HTTP like a user would."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.acceptance.support import RunningHost, start_funchost, stop_funchost

pytestmark = pytest.mark.acceptance
APP = Path(__file__).resolve().parents[2] / "examples" / "hello"
BODY_LIMIT = 16 * 1024  # above the 12 000 levels of the nesting cases below


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningHost]:
    data = tmp_path_factory.mktemp("hello") / "data"
    running = start_funchost(APP, data_dir=data, env={"FUNCTIONS_REQUEST_BODY_SIZE_LIMIT": str(BODY_LIMIT)})
    yield running
    stop_funchost(running)


@pytest.fixture
def client(host: RunningHost) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=host.base_url, timeout=10) as client:
        yield client


def test_banner_lists_http_functions_with_methods_and_urls(host: RunningHost) -> None:
    assert f"hello: [GET,POST] http://localhost:{host.port}/api/hello" in host.output()


def test_sync_function_with_query(client: httpx.Client) -> None:
    response = client.get("/api/hello", params={"name": "Ada"})
    assert response.status_code == 200
    assert response.text == "Hello, Ada!"
    assert response.headers["content-type"] == "text/plain; charset=utf-8"


def test_async_function_json_in_and_out(client: httpx.Client) -> None:
    response = client.post("/api/echo?x=1&x=2&blank=", json={"n": 1}, headers={"X-Trace": "t"})
    assert response.status_code == 200
    seen = response.json()
    assert seen["json"] == {"n": 1}
    assert seen["params"] == {"x": "1,2"}
    assert seen["headers"] == {"x-trace": "t"}
    assert seen["method"] == "POST"


@pytest.mark.parametrize("path, body, message", [
    ("/api/hello", b"[1, 2]", "JSON object"),  # not an object: was AttributeError, a 500
    ("/api/hello", b'"Ada"', "JSON object"),
    ("/api/hello", b'{"name": 7}', "JSON object"),
    ("/api/hello", b'{"name": "\\ud800"}', "lone surrogate"),  # was UnicodeEncodeError, a 500
    ("/api/hello", b"{not json", "must be JSON"),
    # RecursionError, not ValueError: json.loads gives up near 1 000 levels on Python 3.11,
    # 1 500 on 3.12 and 10 000 on 3.13
    ("/api/hello", b"[" * 12_000, "nested too deeply"),
    ("/api/echo", b"[" * 12_000, "nested too deeply"),
    ("/api/echo", b"{not json", "must be JSON"),
])
def test_bad_input_is_a_400_with_a_message(client: httpx.Client, host: RunningHost, path: str, body: bytes,
                                           message: str) -> None:
    response = client.post(path, content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 400, response.text
    assert message in response.json()["error"]


def test_a_lone_surrogate_in_the_query_is_no_failure(client: httpx.Client) -> None:
    response = client.get("/api/hello?name=%ED%A0%80")  # invalid UTF-8: the host decodes it with U+FFFD
    assert response.status_code == 200


def test_route_constraints_optional_default_and_catch_all(client: httpx.Client) -> None:
    assert client.get("/api/products/books").json() == {"category": "books"}
    assert client.get("/api/products/books/7").json() == {"category": "books", "id": "7"}
    assert client.get("/api/products/b00ks").status_code == 404
    assert client.get("/api/products/books/seven").status_code == 404
    assert client.get("/api/orders").text == "qty=1"
    assert client.get("/api/orders/10").text == "qty=10"
    assert client.get("/api/orders/11").status_code == 404
    assert client.get("/api/files/a/b/c.txt").text == "path=a/b/c.txt"


def test_unknown_route_and_wrong_method_are_404(client: httpx.Client) -> None:
    for response in (client.get("/api/nope"), client.delete("/api/hello"), client.get("/api/echo")):
        assert response.status_code == 404
        assert response.content == b""


def test_keys_and_auth_levels(host: RunningHost, client: httpx.Client) -> None:
    assert client.get("/api/secure").status_code == 401
    keys = client.get("/admin/functions/secure/keys", headers=host.admin_headers)
    assert keys.status_code == 200
    key = keys.json()["keys"][0]["value"]
    assert client.get("/api/secure", params={"code": key}).text == "you hold a function key"
    assert client.get("/api/secure", headers={"x-functions-key": key}).status_code == 200
    assert client.get("/api/maintenance", headers={"x-functions-key": key}).status_code == 401
    assert client.get("/api/maintenance", headers=host.admin_headers).status_code == 200
    assert client.get("/admin/functions/secure/keys", headers={"x-functions-key": key}).status_code == 401


def test_body_over_limit_is_413(client: httpx.Client) -> None:
    assert client.post("/api/echo", content=b"x" * (BODY_LIMIT + 1)).status_code == 413
    assert client.post("/api/echo", json={"small": True}).status_code == 200


def test_failure_is_500_and_an_unset_response_is_200_empty(client: httpx.Client) -> None:
    assert client.get("/api/fail").status_code == 500
    nothing = client.get("/api/nothing")
    assert (nothing.status_code, nothing.content) == (200, b"")


def test_cookies(client: httpx.Client) -> None:
    response = client.post("/api/login")
    cookies = response.headers.get_list("set-cookie")
    assert "session=abc123; path=/; samesite=lax; httponly" in cookies
    assert "theme=dark; max-age=3600; path=/" in cookies


def test_home_page(client: httpx.Client) -> None:
    response = client.get("/")
    assert response.status_code == 200 and "text/html" in response.headers["content-type"]


def test_admin_status(host: RunningHost, client: httpx.Client) -> None:
    assert client.get("/admin/host/status").status_code == 401
    status = client.get("/admin/host/status", headers=host.admin_headers).json()
    assert status["state"] == "Running"
    assert "processUptime" in status


def test_admin_invoke_runs_a_non_http_function(host: RunningHost, client: httpx.Client) -> None:
    response = client.post("/admin/functions/yearly", json={"input": ""}, headers=host.admin_headers)
    assert response.status_code == 202
    assert host.wait_for_output("yearly timer ran")
    assert client.post("/admin/functions/yearly", headers=host.admin_headers).status_code == 400
    assert client.post("/admin/functions/nope", json={"input": ""}, headers=host.admin_headers).status_code == 404
