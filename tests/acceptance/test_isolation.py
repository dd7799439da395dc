"""One broken function does not stop the app (docs/isolation.md), with a real `funchost start`.

The app has an HTTP function, a function with a trigger type funchost does not know, two
functions on one route and a change-feed function whose container does not exist: the HTTP
function answers, the three others are listed in error with their reasons (text listing, admin
status API, ``--output json``), and the change-feed function starts processing within one
listener retry interval after ``funchost docs upsert --create`` makes its container.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from tests.acceptance.support import RunningHost, run_cli, start_funchost, stop_funchost, wait_until

from funchost.testing import write_app

pytestmark = pytest.mark.acceptance

APP = """
import logging
import azure.functions as func
app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

@app.route(route="hello")
def hello(req: func.HttpRequest) -> func.HttpResponse:
    return func.HttpResponse("hi")

@app.generic_trigger(arg_name="x", type="madeUpTrigger")
def madeup(x: str) -> None:
    pass

@app.route(route="orders")
def orders(req: func.HttpRequest) -> func.HttpResponse:
    return func.HttpResponse("orders")

@app.route(route="orders")
def orders_again(req: func.HttpRequest) -> func.HttpResponse:
    return func.HttpResponse("never")

@app.cosmos_db_trigger(arg_name="docs", connection="CosmosDB", database_name="shop", container_name="items",
                       lease_container_name="leases", create_lease_container_if_not_exists=True,
                       start_from_beginning=True)
def feed(docs: func.DocumentList) -> None:
    logging.info("feed saw %s", ",".join(d["id"] for d in docs))
"""

RETRY_INTERVAL = 1.0  # FUNCHOST_LISTENER_RETRY_MAX_INTERVAL below (Azure's back-off is 2 s up to 2 min)
SETTINGS = {"FUNCHOST_LISTENER_RETRY_MAX_INTERVAL": "00:00:01"}
REASONS = {
    "madeup": "The binding type(s) 'madeUpTrigger' are not registered. Please ensure the type is correct and the "
              "binding extension is installed.",
    "orders_again": "The route specified conflicts with the route defined by function 'orders'.",
    "feed": "The listener for function 'Functions.feed' was unable to start. Either the source container 'items' "
            "(in database 'shop')  or the lease container 'leases' (in database 'shop') does not exist.",
}


def status(host: RunningHost, name: str) -> dict[str, object]:
    response = httpx.get(f"{host.base_url}/admin/functions/{name}/status", headers=host.admin_headers, timeout=5)
    assert response.status_code == 200, response.text
    return dict(response.json())


def test_the_healthy_functions_run_and_the_broken_ones_are_listed_in_error(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP, settings=SETTINGS)
    data = tmp_path / "data"
    host = start_funchost(app, data_dir=data)
    try:
        assert httpx.get(f"{host.base_url}/api/hello", timeout=5).text == "hi"
        assert httpx.get(f"{host.base_url}/api/orders", timeout=5).text == "orders"
        listing = host.output()
        for name, reason in REASONS.items():
            assert f"\t{name}: " in listing
            assert reason in listing
            [error] = status(host, name)["errors"]  # type: ignore[misc]
            assert str(error).startswith(reason)
        assert status(host, "hello") == {}
        assert "The 'madeup' function is in error: " in listing

        run_cli("docs", "upsert", "-d", "shop", "-c", "items", "--create", '{"id": "first"}',
                "--app", str(app), "--data", str(data))
        # The next retry (at most one interval away) starts the listener, which reads the feed
        # at once; the bound is generous for a busy machine (the schedule itself is unit-tested).
        wait_until(lambda: "feed saw first" in host.output(), "the change feed function to run",
                   timeout=RETRY_INTERVAL + 20, hosts=[host])
        assert "Listener successfully started for function 'Functions.feed' after" in host.output()
        assert status(host, "feed") == {}
    finally:
        code, output = stop_funchost(host)
    assert code == 0, output


def test_json_output_carries_the_errors(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP, settings=SETTINGS)
    host = start_funchost(app, "--output", "json", data_dir=tmp_path / "data")
    code, output = stop_funchost(host)
    assert code == 0
    events = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    indexed = {e["function"]: e for e in events if e.get("event") == "FunctionIndexed"}
    assert set(indexed) == {"hello", "madeup", "orders", "orders_again", "feed"}
    assert indexed["hello"]["errors"] == []
    for name, reason in REASONS.items():
        [error] = indexed[name]["errors"]
        assert error.startswith(reason)
        assert indexed[name]["file"].endswith("function_app.py") and indexed[name]["line"] > 0
    in_error = {e["function"] for e in events if e.get("event") == "FunctionError"}
    assert in_error == set(REASONS)
