"""How Durable Functions plug into the host: return values through the triggers, and the task
hub as a storage port whatever the backend."""

from __future__ import annotations

import json
from pathlib import Path

from funchost.clock import SystemClock
from funchost.durable import history as h
from funchost.indexing.indexer import index_app
from funchost.invocation.plan import InvocationPlan
from funchost.settings.app_settings import AppSettings
from funchost.storage.durable import RUNNING_STATUSES, NewInstance
from funchost.storage.host_storage import open_storage
from funchost.testing.harness import write_app

APP = """
import azure.functions as func
import azure.durable_functions as df

app = df.DFApp(http_auth_level=func.AuthLevel.ANONYMOUS)

@app.orchestration_trigger(context_name="context")
def orchestrate(context):
    return (yield context.call_activity("square", 3))

@app.activity_trigger(input_name="value")
def square(value: int) -> int:
    return value * value

@app.activity_trigger(input_name="value")
def nothing(value) -> None:
    return None
"""


def plans(tmp_path: Path) -> dict[str, InvocationPlan]:
    app = write_app(tmp_path / "app", APP)
    return {f.name: InvocationPlan(f) for f in index_app(app, AppSettings({}, environ={}))}


def test_durable_triggers_return_their_value_through_the_trigger_as_the_worker_does(tmp_path: Path) -> None:
    found = plans(tmp_path)
    square = found["square"]
    assert square.return_name == "$return" and square.return_encoder is not None
    datum = square.return_encoder(9)
    assert (datum.type, datum.value) == ("json", "9")  # ActivityTriggerConverter.encode: df_dumps
    nothing = found["nothing"].return_encoder
    assert nothing is not None and nothing(None).value == "null"  # None is encoded too, as for $return
    orchestrate = found["orchestrate"]
    assert orchestrate.return_name == "$return" and orchestrate.return_encoder is not None
    assert orchestrate.return_encoder('{"isDone": true}').type == "json"
    assert not orchestrate.writes_outputs  # the dispatcher reads the value; no binding writes it


async def test_under_azure_storage_the_task_hub_is_the_data_folders_embedded_one(tmp_path: Path) -> None:
    data = tmp_path / "data"
    azurite = ("DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5;"
               "BlobEndpoint=http://127.0.0.1:1/devstoreaccount1;QueueEndpoint=http://127.0.0.1:1/devstoreaccount1")
    azure = open_storage("azure", data, AppSettings({"AzureWebJobsStorage": azurite}, environ={}), SystemClock())
    embedded = open_storage("embedded", data, AppSettings({}, environ={}), SystemClock())
    try:
        hub = azure.task_hub("SharedHub")
        await hub.create_if_not_exists()
        started = h.execution_started(h.parse_time("2024-05-01T10:00:00Z"), instance_id="i1", execution_id="e1",
                                      name="orchestrate", version="", input_text=json.dumps("x"))
        await hub.create_instance(NewInstance("i1", "orchestrate", "", "e1", '"x"', started), now=1.0,
                                  dedupe=RUNNING_STATUSES)
        record = await embedded.task_hub("sharedhub").get_instance("i1")  # hub names ignore case
        assert record is not None and record.status == "Pending"
        assert (data / "storage" / "devstoreaccount1" / "durable" / "sharedhub.sqlite").is_file()
    finally:
        await azure.aclose()
        await embedded.aclose()
