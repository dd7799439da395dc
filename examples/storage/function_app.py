"""A small app that runs unchanged on embedded storage, Azurite and Azure.

POST /api/jobs {"id": "..."} enqueues the job id (queue output binding); the queue trigger
writes ``storage-results/<id>.txt`` (blob output binding).
"""

import json
import logging

import azure.functions as func

app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)


@app.route(route="jobs", methods=["POST"])
@app.queue_output(arg_name="job", queue_name="storage-jobs", connection="AzureWebJobsStorage")
def enqueue_job(req: func.HttpRequest, job: func.Out[str]) -> func.HttpResponse:
    try:
        job_id = str(req.get_json()["id"])
    except (ValueError, KeyError, TypeError):
        return func.HttpResponse("expected a JSON body with an 'id'", status_code=400)
    job.set(job_id)
    return func.HttpResponse(json.dumps({"queued": job_id}), status_code=202, mimetype="application/json")


@app.queue_trigger(arg_name="msg", queue_name="storage-jobs", connection="AzureWebJobsStorage")
@app.blob_output(arg_name="result", path="storage-results/{queueTrigger}.txt", connection="AzureWebJobsStorage")
def process_job(msg: func.QueueMessage, result: func.Out[str]) -> None:
    job_id = msg.get_body().decode("utf-8")
    logging.info("processing job %s (dequeue count %s)", job_id, msg.dequeue_count)
    result.set(f"job {job_id} done")
