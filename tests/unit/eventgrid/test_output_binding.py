"""`@app.event_grid_output` publishing to a local topic in-process, with its key checked."""

from __future__ import annotations

import base64
import sys
from pathlib import Path

from funchost.eventgrid.auth import KeyRing
from funchost.storage.secrets import FileSecrets
from funchost.testing.harness import HostHarness, write_app

APP = """
import datetime
import azure.functions as func
app = func.FunctionApp()
GOT = []

@app.queue_trigger(arg_name="msg", queue_name="start", connection="AzureWebJobsStorage")
@app.event_grid_output(arg_name="out", topic_endpoint_uri="TopicUri", topic_key_setting="TopicKey")
def emit(msg: func.QueueMessage, out: func.Out[func.EventGridOutputEvent]) -> None:
    out.set(func.EventGridOutputEvent(id="o1", data={"m": msg.get_body().decode()}, subject="emitted",
                                      event_type="Emitted", event_time=datetime.datetime.utcnow(),
                                      data_version="1.0"))

@app.event_grid_trigger(arg_name="event")
def on_event(event: func.EventGridEvent):
    GOT.append((event.event_type, event.get_json()))
"""


async def test_output_binding_publishes_to_the_local_topic(tmp_path: Path) -> None:
    data = tmp_path / "data"
    key = KeyRing(FileSecrets(data)).ensure(["default"])["default"].key1
    app = write_app(tmp_path / "app", APP, settings={
        "TopicUri": "http://localhost:7071/eventgrid/topics/default/api/events", "TopicKey": key})
    async with HostHarness(app, data_dir=data) as host:
        await host.runtime.storage.queues().create_queue("start")
        await host.runtime.storage.queues().put_message("start", base64.b64encode(b"hello").decode())
        for _ in range(5):
            await host.advance(2)
        assert ("Emitted", {"m": "hello"}) in sys.modules["function_app"].GOT
