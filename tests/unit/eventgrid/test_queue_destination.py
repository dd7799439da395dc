"""A storage-queue subscription delivers through the host's queue sending: the queue listener of
this host is woken at once, as for any other put in this process."""

from __future__ import annotations

import json
from pathlib import Path

from funchost.eventgrid.service import EventGridService
from funchost.testing.harness import HostHarness, write_app

APP = """
import json
import azure.functions as func
app = func.FunctionApp()
GOT = []

@app.queue_trigger(arg_name="msg", queue_name="order-events", connection="AzureWebJobsStorage")
def on_queue(msg: func.QueueMessage) -> None:
    GOT.append(json.loads(msg.get_body())["subject"])
"""

EVENTGRID = {
    "topics": {"orders": {"inputSchema": "EventGridSchema"}},
    "subscriptions": [{"name": "to-queue", "topic": "orders", "destination": {
        "type": "storageQueue", "queueName": "order-events", "connection": "AzureWebJobsStorage"}}],
}


def event(subject: str) -> dict[str, object]:
    return {"id": subject, "subject": subject, "eventType": "Order.Placed", "data": {},
            "dataVersion": "1.0", "eventTime": "2025-01-01T00:00:00Z"}


async def test_a_delivery_to_a_local_queue_is_picked_up_without_waiting_for_a_poll(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP, files={"eventgrid.json": json.dumps(EVENTGRID)})
    async with HostHarness(app, data_dir=tmp_path / "data") as host:
        await host.queues.create("order-events")
        await host.advance(10)  # the listener has found the queue empty and backs off
        service = host.runtime.services.find(EventGridService)
        assert service is not None
        await service.publish("orders", [event("o-1")])
        await host.wait_until_idle()  # no time passes: only a wake-up can bring the message in
        assert host.runtime.functions["on_queue"].func.__globals__["GOT"] == ["o-1"]
        [row] = await service.store.deliveries("to-queue")
        assert row.state == "delivered"
