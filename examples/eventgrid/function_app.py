"""Event Grid example: blob events and a custom topic, handled quickly and handed to a queue.

As the design notes recommend, the Event Grid function only checks the event and enqueues a
job; slow work belongs to a queue-triggered function (where retries and poison handling live).
"""

import json
import logging

import azure.functions as func

app = func.FunctionApp()


@app.event_grid_trigger(arg_name="event")
@app.queue_output(arg_name="jobs", queue_name="blob-jobs", connection="AzureWebJobsStorage")
def on_blob_event(event: func.EventGridEvent, jobs: func.Out[str]) -> None:
    # A subscription with the CloudEvents schema delivers a func.CloudEvent (`type`, not `event_type`).
    event_type = getattr(event, "event_type", None) or getattr(event, "type", None)
    logging.info("event %s %s subject=%s", event.id, event_type, event.subject)
    if event_type != "Microsoft.Storage.BlobCreated":
        return
    data = event.get_json()
    if not isinstance(data, dict):  # anyone holding the key can post events: check before use
        logging.warning("event %s: BlobCreated without a data object; ignored", event.id)
        return
    jobs.set(json.dumps({"eventId": event.id, "url": data.get("url"), "eTag": data.get("eTag")}))


@app.queue_trigger(arg_name="msg", queue_name="blob-jobs", connection="AzureWebJobsStorage")
def process_blob_job(msg: func.QueueMessage) -> None:
    job = msg.get_json()
    logging.info("processing blob job for %s (eTag %s)", job["url"], job["eTag"])
