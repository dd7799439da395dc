"""The Python worker's HTTP end-to-end apps on `funchost start`, with the flows of its tests.

Ported from Azure/azure-functions-python-worker `tests/endtoend/` (sources in
`worker_apps/SOURCE.md`): `test_http_functions.py` (`TestHttpFunctionsStein`,
`TestHttpFunctionsSteinGeneric`), `test_file_name_functions.py`, `test_warmup_functions.py`,
`test_third_party_http_functions.py` and `test_blueprint_functions.py`.
One host per app, started once per module.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

import httpx
import pytest
from tests.acceptance.support import HostDidNotStart, start_funchost
from tests.acceptance.worker_apps_support import WorkerAppHost, copy_app, start_apps, stop_all

pytestmark = pytest.mark.acceptance

HTTP_APPS = [
    "http_functions/http_functions_stein",
    "http_functions/http_functions_stein/generic",
    "http_functions/http_functions_stein/file_name",
]
BLUEPRINT_APPS = [
    "blueprint_functions/functions_in_blueprint_only",
    "blueprint_functions/functions_in_both_blueprint_functionapp",
    "blueprint_functions/blueprint_different_dir",
]
ASGI_APP = "third_party_http_functions/stein/asgi_function"
WSGI_APP = "third_party_http_functions/stein/wsgi_function"
WARMUP_APP = "warmup_functions/warmup_functions_stein"


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, WorkerAppHost]]:
    started = start_apps([*HTTP_APPS, *BLUEPRINT_APPS, ASGI_APP, WARMUP_APP], tmp_path_factory.mktemp("http"))
    yield started
    stop_all(started.values())


# test_http_functions.py: TestHttpFunctions, run on the stein app, its generic twin and
# (test_file_name_functions.py) the same app in main.py with PYTHON_SCRIPT_FILE_NAME=main.py.

@pytest.mark.parametrize("app", HTTP_APPS)
def test_function_index_page_should_return_ok(hosts: dict[str, WorkerAppHost], app: str) -> None:
    assert hosts[app].request("GET", "", no_prefix=True).is_success


@pytest.mark.parametrize("app", HTTP_APPS)
def test_default_http_template_should_return_ok(hosts: dict[str, WorkerAppHost], app: str) -> None:
    assert hosts[app].request("GET", "default_template").is_success


@pytest.mark.parametrize("app", HTTP_APPS)
def test_default_http_template_should_accept_query_param(hosts: dict[str, WorkerAppHost], app: str) -> None:
    response = hosts[app].request("GET", "default_template", params={"name": "query"})
    assert response.is_success
    assert response.content == b"Hello, query. This HTTP triggered function executed successfully."


@pytest.mark.parametrize("app", HTTP_APPS)
def test_default_http_template_should_accept_body(hosts: dict[str, WorkerAppHost], app: str) -> None:
    response = hosts[app].request("POST", "default_template", content=b'{ "name": "body" }')
    assert response.is_success
    assert response.content == b"Hello, body. This HTTP triggered function executed successfully."


@pytest.mark.parametrize("app", HTTP_APPS)
def test_worker_status_endpoint_should_return_ok(hosts: dict[str, WorkerAppHost], app: str) -> None:
    # The worker's twin test "..._when_disabled" sets WEBSITE_PING_METRICS_SCALE_ENABLED=0 in the
    # test process only, after the host started: the request and the answer are the same.
    response = httpx.post(f"{hosts[app].base_url}/admin/host/ping", params={"checkHealth": "1"}, timeout=10)
    assert response.is_success


def test_http_func_sleeps_and_answers_the_time(hosts: dict[str, WorkerAppHost]) -> None:
    # Not called by the worker's tests; the app's second function, checked once for completeness.
    response = hosts["http_functions/http_functions_stein"].request("GET", "http_func")
    assert response.status_code == 200 and len(response.text) == 8 and response.text.count(":") == 2


# test_threadpool_thread_count_functions.py and test_worker_process_count_functions.py: two
# requests to http_func (sleeps 1 s, answers the time to the second) at once are served at the
# same time with two threads, or with two worker processes of one thread each. The worker's
# tests retry up to four times: the two answers straddle a second boundary now and then, and
# which worker process accepts a connection is the kernel's choice.

def two_requests_at_once(host: WorkerAppHost) -> float:
    def http_func() -> datetime:
        response = host.request("GET", "http_func")
        assert response.is_success
        return datetime.strptime(response.text, "%H:%M:%S")

    with ThreadPoolExecutor(max_workers=2) as pool:
        first, second = pool.map(lambda _: http_func(), range(2))
    return abs((first - second).total_seconds())


def served_together(host: WorkerAppHost, attempts: int = 4) -> bool:
    return any(two_requests_at_once(host) < 1 for _ in range(attempts))


@pytest.fixture(scope="module")
def two_threads(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorkerAppHost]:
    started = start_apps(["http_functions/http_functions_stein"], tmp_path_factory.mktemp("threads"),
                         env={"PYTHON_THREADPOOL_THREAD_COUNT": "2"})
    yield started["http_functions/http_functions_stein"]
    stop_all(started.values())


def test_http_func_with_thread_count(two_threads: WorkerAppHost) -> None:
    assert served_together(two_threads)


PROCESS_COUNT_APPS = ["http_functions/http_functions_stein", "blueprint_functions/functions_in_blueprint_only",
                      "blueprint_functions/blueprint_different_dir"]


@pytest.fixture(scope="module")
def two_processes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, WorkerAppHost]]:
    env = {"PYTHON_THREADPOOL_THREAD_COUNT": "1", "FUNCTIONS_WORKER_PROCESS_COUNT": "2"}
    started = start_apps(PROCESS_COUNT_APPS, tmp_path_factory.mktemp("processes"), env=env)
    for host in started.values():  # the second process starts after the first one serves
        assert host.host.wait_for_output("Worker processes: 2 (FUNCTIONS_WORKER_PROCESS_COUNT)", timeout=60)
    yield started
    stop_all(started.values())


@pytest.mark.parametrize("app", PROCESS_COUNT_APPS)
def test_http_func_with_worker_process_count_2(two_processes: dict[str, WorkerAppHost], app: str) -> None:
    # The processes share one listening socket: which one accepts a connection is the kernel's
    # choice, and both connections of an attempt land on one process about half the time (then
    # they are served one after the other). Ten attempts, not the worker's four: 1 in 1,000.
    assert served_together(two_processes[app], attempts=10)


# test_warmup_functions.py

def test_warmup(hosts: dict[str, WorkerAppHost]) -> None:
    host = hosts[WARMUP_APP]
    assert host.request("GET", "admin/warmup", no_prefix=True).is_success
    # check_log_warmup: the function's log line, exactly once.
    lines = host.wait_for_log(lambda out: "Function App instance is warm" in out, "the warmup function's log")
    assert lines.count("Function App instance is warm") == 1


# test_third_party_http_functions.py: FastAPI behind AsgiFunctionApp, Flask behind
# WsgiFunctionApp, with routePrefix "" (their host.json, as the worker's test writes it).

THIRD_PARTY_APPS = [ASGI_APP, WSGI_APP]


@pytest.fixture(scope="module")
def third_party(hosts: dict[str, WorkerAppHost], tmp_path_factory: pytest.TempPathFactory,
                ) -> Iterator[dict[str, WorkerAppHost]]:
    started = {ASGI_APP: hosts[ASGI_APP]}
    wsgi: dict[str, WorkerAppHost] = {}
    if importlib.util.find_spec("flask") is not None:
        wsgi = start_apps([WSGI_APP], tmp_path_factory.mktemp("wsgi"))
        started.update(wsgi)
    for host in started.values():
        host.route_prefix = ""
    yield started
    stop_all(wsgi.values())


@pytest.fixture(params=THIRD_PARTY_APPS, ids=["asgi", "wsgi"])
def framework(request: pytest.FixtureRequest, third_party: dict[str, WorkerAppHost]) -> WorkerAppHost:
    if request.param not in third_party:
        pytest.skip("the WSGI app needs Flask, which is not among funchost's test dependencies")
    return third_party[request.param]


def test_function_index_page_should_return_undefined(framework: WorkerAppHost) -> None:
    assert httpx.get(framework.base_url, timeout=10).status_code == 404


def test_get_endpoint_should_return_ok(framework: WorkerAppHost) -> None:
    response = framework.request("GET", "get_query_param", no_prefix=True)
    assert response.is_success and response.text == "hello world"


def test_get_endpoint_should_accept_query_param(framework: WorkerAppHost) -> None:
    response = framework.request("GET", "get_query_param", params={"name": "dummy"}, no_prefix=True)
    assert response.is_success and response.text == "hello dummy"


def test_post_endpoint_should_accept_body(framework: WorkerAppHost) -> None:
    response = framework.request("POST", "post_str", content="dummy", headers={"content-type": "text/plain"},
                                 no_prefix=True)
    assert response.is_success and response.text == "hello dummy"


def test_third_party_worker_status_endpoint_should_return_ok(framework: WorkerAppHost) -> None:
    response = httpx.post(f"{framework.base_url}/admin/host/ping", params={"checkHealth": "1"}, timeout=10)
    assert response.is_success


def test_get_endpoint_should_accept_path_param(framework: WorkerAppHost) -> None:
    response = framework.request("GET", "get_path_param/1", no_prefix=True)
    assert response.is_success and response.text == "hello 1"


def test_post_json_body_and_return_json_response(framework: WorkerAppHost) -> None:
    test_data = {"name": "apple", "description": "yummy"}
    response = framework.request("POST", "post_json_return_json_response", json=test_data, no_prefix=True)
    assert response.is_success and response.json() == test_data


def test_raise_exception_should_return_not_found(framework: WorkerAppHost) -> None:
    response = framework.request("GET", "raise_http_exception", no_prefix=True)
    assert response.status_code == 404 and response.json() == {"detail": "Item not found"}


# test_blueprint_functions.py: the apps that index.

def test_function_in_blueprint_only(hosts: dict[str, WorkerAppHost]) -> None:
    assert hosts["blueprint_functions/functions_in_blueprint_only"].request("GET", "default_template").is_success


def test_functions_in_both_blueprint_functionapp(hosts: dict[str, WorkerAppHost]) -> None:
    host = hosts["blueprint_functions/functions_in_both_blueprint_functionapp"]
    assert host.request("GET", "default_template").is_success
    assert host.request("GET", "return_http").is_success


def test_blueprint_in_different_dir(hosts: dict[str, WorkerAppHost]) -> None:
    host = hosts["blueprint_functions/blueprint_different_dir"]
    assert host.request("GET", "default_template").is_success
    assert host.request("GET", "http_func").is_success


# The apps the worker does not index. Its tests see the host up with no function (404 on the
# route); funchost refuses to start an app that does not index, with the file, line and reason.
# multiple_function_registers fails before the worker's "More than one ... function app
# instances" check: `func.AsgiFunctionApp()` without its `app` argument raises at import, with
# the library its requirements pin (azure-functions 1.22.0b4) as with today's.

@pytest.mark.parametrize(("app", "reason"), [
    ("blueprint_functions/multiple_function_registers",
     "function_app.py:12: TypeError: AsgiFunctionApp.__init__() missing 1 required positional argument: 'app'"),
    ("blueprint_functions/only_blueprint",
     "function_app.py: Could not find top level function app instances in function_app.py"),
])
def test_app_that_does_not_index_fails_with_the_reason(tmp_path: Path, app: str, reason: str) -> None:
    with pytest.raises(HostDidNotStart) as failure:
        start_funchost(copy_app(app, tmp_path), data_dir=tmp_path / "data")
    message = str(failure.value)
    assert message.startswith("funchost exited with 1:"), message
    assert reason in message, message
