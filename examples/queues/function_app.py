"""Queue trigger, queue output binding and a poison-queue handler, as an unmodified v2 app.

POST /api/tasks?count=N with a text body enqueues N copies ("<body>-<i>") on "tasks".
`process_task` handles each message: bodies starting with "fail" raise (and end up in
"tasks-poison" after 5 attempts), bodies starting with "slow" take a while.
`record_poison` sees every poisoned message.

Set the app setting TASK_LOG to a file path to get one line per handled message
("<kind> <body> <pid> <dequeue count>"), which the acceptance tests read.
"""

import logging
import os
import time

import azure.functions as func

app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)


def _record(kind: str, body: str, dequeue_count: int) -> None:
    path = os.environ.get("TASK_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as log:  # one short append per line: atomic
            log.write(f"{kind} {body} {os.getpid()} {dequeue_count}\n")


@app.route(route="tasks", methods=["POST"])
@app.queue_output(arg_name="tasks", queue_name="tasks", connection="AzureWebJobsStorage")
def enqueue_tasks(req: func.HttpRequest, tasks: func.Out[list[str]]) -> func.HttpResponse:
    body = req.get_body().decode("utf-8") or "task"
    count = int(req.params.get("count", "1"))
    tasks.set([f"{body}-{i}" for i in range(count)])
    return func.HttpResponse(f"queued {count}", status_code=202)


@app.queue_trigger(arg_name="msg", queue_name="tasks", connection="AzureWebJobsStorage")
def process_task(msg: func.QueueMessage) -> None:
    body = msg.get_body().decode("utf-8")
    if body.startswith("slow"):
        time.sleep(float(os.environ.get("SLOW_TASK_SECONDS", "3")))
    if body.startswith("fail"):
        _record("failed", body, msg.dequeue_count)
        raise RuntimeError(f"task {msg.id} failed on purpose")
    _record("done", body, msg.dequeue_count)
    logging.info("task %s done (dequeue count %s)", msg.id, msg.dequeue_count)


@app.queue_trigger(arg_name="msg", queue_name="tasks-poison", connection="AzureWebJobsStorage")
def record_poison(msg: func.QueueMessage) -> None:
    body = msg.get_body().decode("utf-8")
    _record("poison", body, msg.dequeue_count)
    logging.warning("task message %s was poisoned", msg.id)
