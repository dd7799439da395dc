"""The README's "Testing your app" example, run as written against a small app."""

from __future__ import annotations

from pathlib import Path

from funchost.testing import HostHarness, write_app

ORDERS_APP = """
import azure.functions as func
app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

@app.queue_trigger(arg_name="msg", queue_name="orders", connection="AzureWebJobsStorage")
def process_order(msg: func.QueueMessage) -> None:
    raise RuntimeError("downstream is down")

@app.route(route="orders/{id:int}", methods=["GET"])
def get_order(req: func.HttpRequest) -> func.HttpResponse:
    return func.HttpResponse(f"order {req.route_params['id']}")
"""


async def test_poison_after_five_failures(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", ORDERS_APP)
    # --- as in the README ---
    async with HostHarness(app) as host:
        await host.queues.send("orders", {"id": 1})
        await host.advance(60)                       # simulated seconds, runs in milliseconds
        assert await host.queues.poison("orders") == ['{"id": 1}']
        response = await host.http("GET", "/api/orders/1")
    # ---
    assert response.status_code == 200 and response.text == "order 1"
