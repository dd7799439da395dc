"""An app that uses the Storage SDKs itself, as many real apps do: clients built from the
`AzureWebJobsStorage` connection string, next to the host's own triggers.

With `funchost start` (embedded storage) the SDK calls go to funchost's storage endpoints, so
they reach the same storage the triggers watch: the queue message wakes `on_note_queued` at
once and the uploaded blob raises BlobCreated on the embedded Event Grid (`on_note_blob`).
"""

import json
import logging
import os

import azure.functions as func
from azure.core.exceptions import ResourceExistsError
from azure.data.tables import TableClient
from azure.storage.blob import BlobServiceClient
from azure.storage.queue import QueueClient, TextBase64EncodePolicy

app = func.FunctionApp()


def connection() -> str:
    return os.environ["AzureWebJobsStorage"]


@app.route(route="notes/{id}", methods=["POST"], auth_level=func.AuthLevel.ANONYMOUS)
def write_note(req: func.HttpRequest) -> func.HttpResponse:
    note_id = req.route_params["id"]
    text = req.get_body()
    container = BlobServiceClient.from_connection_string(connection()).get_container_client("notes")
    try:
        container.create_container()
    except ResourceExistsError:
        pass
    container.upload_blob(f"{note_id}.txt", text, overwrite=True)
    table = TableClient.from_connection_string(connection(), table_name="Notes")
    try:
        table.create_table()
    except ResourceExistsError:
        pass
    table.upsert_entity({"PartitionKey": "notes", "RowKey": note_id, "length": len(text)})
    queue = QueueClient.from_connection_string(connection(), "notes-written",
                                               message_encode_policy=TextBase64EncodePolicy())
    try:
        queue.create_queue()
    except ResourceExistsError:
        pass
    queue.send_message(note_id)
    return func.HttpResponse("written", status_code=201)


@app.route(route="notes/{id}", methods=["GET"], auth_level=func.AuthLevel.ANONYMOUS)
def read_note(req: func.HttpRequest) -> func.HttpResponse:
    note_id = req.route_params["id"]
    blob = BlobServiceClient.from_connection_string(connection()).get_blob_client("notes", f"{note_id}.txt")
    entity = TableClient.from_connection_string(connection(), table_name="Notes").get_entity("notes", note_id)
    body = {"text": blob.download_blob().readall().decode(), "length": entity["length"]}
    return func.HttpResponse(json.dumps(body), mimetype="application/json")


@app.queue_trigger(arg_name="msg", queue_name="notes-written", connection="AzureWebJobsStorage")
def on_note_queued(msg: func.QueueMessage) -> None:
    logging.info("note queued: %s", msg.get_body().decode())


@app.event_grid_trigger(arg_name="event")
def on_note_blob(event: func.EventGridEvent) -> None:
    logging.info("note blob event %s %s", event.event_type, event.subject)
