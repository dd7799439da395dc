"""Per-function isolation (docs/isolation.md): a function the host cannot set up, or whose
listener cannot start, is in error with its reason; the rest of the app runs."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from funchost.clock import ManualClock
from funchost.documents import connect
from funchost.testing import HostHarness, write_app

APP = """
import azure.functions as func
app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

@app.route(route="hello")
def hello(req: func.HttpRequest) -> func.HttpResponse:
    return func.HttpResponse("hi")

@app.generic_trigger(arg_name="x", type="madeUpTrigger")
def madeup(x: str) -> None:
    pass

@app.route(route="broken")
@app.generic_output_binding(arg_name="out", type="madeUpOutput")
@app.generic_output_binding(arg_name="also", type="otherOutput")  # listed first: the library's order
def broken(req: func.HttpRequest, out: func.Out[str], also: func.Out[str]) -> func.HttpResponse:
    return func.HttpResponse("never")

@app.route(route="same")
def alpha(req: func.HttpRequest) -> func.HttpResponse:
    return func.HttpResponse("alpha")

@app.route(route="same")
def beta(req: func.HttpRequest) -> func.HttpResponse:
    return func.HttpResponse("beta")

@app.queue_trigger(arg_name="msg", queue_name="bad--name", connection="AzureWebJobsStorage")
def badqueue(msg: str) -> None:
    pass

@app.queue_trigger(arg_name="msg", queue_name="%NOT_DEFINED%", connection="AzureWebJobsStorage")
def unset(msg: str) -> None:
    pass
"""

FEED_APP = """
import azure.functions as func
app = func.FunctionApp()
SEEN = []

@app.cosmos_db_trigger(arg_name="docs", connection="CosmosDB", database_name="db", container_name="items",
                       lease_container_name="leases", create_lease_container_if_not_exists=True,
                       start_from_beginning=True)
def feed(docs: func.DocumentList) -> None:
    SEEN.extend(d["id"] for d in docs)
"""

NOT_REGISTERED = "are not registered. Please ensure the type is correct and the binding extension is installed."


async def errors(host: HostHarness, name: str) -> dict[str, object]:
    response = await host.http("GET", f"/admin/functions/{name}/status", key="master")
    assert response.status_code == 200, response.text
    return dict(response.json())


async def test_each_broken_function_is_in_error_and_the_rest_serves(tmp_path: Path) -> None:
    write_app(tmp_path / "app", APP)
    async with HostHarness(tmp_path / "app", data_dir=tmp_path / "data") as host:
        assert sorted(host.runtime.functions) == ["alpha", "hello"]
        assert (await host.http("GET", "/api/hello")).text == "hi"
        assert (await host.http("GET", "/api/same")).text == "alpha"
        assert (await host.http("GET", "/api/broken")).status_code == 404  # no route, as on Azure
        assert await errors(host, "madeup") == {"errors": [f"The binding type(s) 'madeUpTrigger' {NOT_REGISTERED}"]}
        assert await errors(host, "broken") == {
            "errors": [f"The binding type(s) 'otherOutput, madeUpOutput' {NOT_REGISTERED}"]}
        assert await errors(host, "beta") == {
            "errors": ["The route specified conflicts with the route defined by function 'alpha'."]}
        [bad_queue] = (await errors(host, "badqueue"))["errors"]  # type: ignore[misc]
        assert "invalid queue name 'bad--name'" in bad_queue
        assert await errors(host, "unset") == {
            "errors": ["function 'unset' binding 'msg' queueName: app setting 'NOT_DEFINED' referenced as "
                       "%NOT_DEFINED% is not defined"]}
        assert await errors(host, "hello") == {}
        assert (await host.http("GET", "/admin/functions/nothing/status", key="master")).status_code == 404
        rows = {row.name: row for row in host.host.describe_functions()}
        assert rows["madeup"].description == "madeUpTrigger" and rows["madeup"].errors
        assert rows["hello"].errors == [] and rows["hello"].description.endswith("/api/hello")
        assert (await host.http("POST", "/admin/functions/madeup", json={"input": "x"}, key="master")).status_code == 404


async def test_the_bundle_message_when_host_json_has_an_extension_bundle(tmp_path: Path) -> None:
    bundle = {"id": "Microsoft.Azure.Functions.ExtensionBundle", "version": "[4.*, 5.0.0)"}
    write_app(tmp_path / "app", APP, host_json={"version": "2.0", "extensionBundle": bundle})
    async with HostHarness(tmp_path / "app", data_dir=tmp_path / "data") as host:
        assert host.runtime.function_errors.of("madeup") == [
            "The binding type(s) 'madeUpTrigger' were not found in the configured extension bundle. Please ensure "
            "the type is correct and the correct version of extension bundle is configured."]


async def test_errors_are_logged_after_the_start(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_app(tmp_path / "app", APP)
    with caplog.at_level(logging.ERROR, logger="funchost.startup"):
        async with HostHarness(tmp_path / "app", data_dir=tmp_path / "data"):
            pass
    lines = [r.getMessage() for r in caplog.records if r.name == "funchost.startup"]
    assert "The 'beta' function is in error: The route specified conflicts with the route defined by function " \
           "'alpha'." in lines
    assert sum(line.startswith("The 'madeup' function is in error: ") for line in lines) == 1


async def test_a_listener_that_cannot_start_is_retried_until_its_container_exists(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_app(tmp_path / "app", FEED_APP)
    clock = ManualClock()
    caplog.set_level(logging.INFO, logger="funchost.startup")
    async with HostHarness(tmp_path / "app", data_dir=tmp_path / "data", clock=clock) as host:
        [reason] = host.runtime.function_errors.of("feed")
        assert reason.startswith("The listener for function 'Functions.feed' was unable to start. Either the source "
                                 "container 'items' (in database 'db')")
        assert "feed" in host.runtime.functions  # set up fine: invocable, only not listening yet
        await host.advance(2.5)  # the first retry (2 s, randomized) fails again
        assert "Retrying to start listener for function 'Functions.feed' (Attempt 1)" in caplog.text
        assert host.runtime.function_errors.of("feed") == [reason]
        db = connect("CosmosDB", data_dir=tmp_path / "data").create_database_if_not_exists("db")
        db.create_container_if_not_exists("items").upsert_item({"id": "first"})
        await host.advance(30)  # the next retries: 2 s and then about 4, 8, 16 s
        assert "Listener successfully started for function 'Functions.feed' after" in caplog.text
        assert host.runtime.function_errors.of("feed") == []
        assert host.runtime.functions["feed"].func.__globals__["SEEN"] == ["first"]


async def test_a_stopping_host_ends_the_retries(tmp_path: Path) -> None:
    write_app(tmp_path / "app", FEED_APP)
    host = await HostHarness(tmp_path / "app", data_dir=tmp_path / "data").start()
    listener = host.host.listeners["feed"]
    assert not listener.started
    await host.stop()  # returns: the retry loop ended, nothing was started
    assert not listener.started and listener.listener is None


class _FailsUntil:
    """A listener that cannot start until `ready` is set (the resource exists)."""

    def __init__(self, ready: list[bool], started: list[float], clock: ManualClock) -> None:
        self.ready, self.started, self.clock = ready, started, clock

    async def start(self) -> None:
        self.started.append(self.clock.monotonic())
        if not self.ready:
            raise RuntimeError("the container does not exist")

    async def stop(self) -> None:
        pass


@pytest.mark.parametrize(("cap", "expected"), [(120.0, [0.0, 2.0]), (1.0, [0.0, 1.0, 2.0, 3.0])])
async def test_listener_retries_follow_the_back_off_and_the_cap(cap: float, expected: list[float]) -> None:
    from funchost.listeners.function_listener import FunctionListener
    from funchost.runtime.function_errors import FunctionErrors
    from funchost.testing import settle

    clock, errors = ManualClock(), FunctionErrors()
    ready: list[bool] = []
    attempts: list[float] = []
    start = clock.monotonic()
    listener = FunctionListener("feed", lambda: _FailsUntil(ready, attempts, clock), errors, clock,
                                max_retry_interval=cap)
    await listener.start()
    assert errors.of("feed") == ["The listener for function 'Functions.feed' was unable to start. "
                                 "the container does not exist."]
    await clock.advance(expected[-1] + 0.01, settle)
    assert [round(t - start, 2) for t in attempts] == expected  # Azure: 2 s first, growing to 2 min
    ready.append(True)
    await clock.advance(cap if cap < 10 else 5, settle)
    assert listener.started and errors.of("feed") == []
    await listener.stop()
