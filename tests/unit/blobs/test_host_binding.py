"""Blob input and output bindings through the real host (HTTP and queue triggers)."""

from __future__ import annotations

import base64
from pathlib import Path

from funchost.testing import HostHarness, write_app

APP = """
import azure.functions as func
app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

@app.route(route="copy/{name}", methods=["POST"])
@app.blob_input(arg_name="src", path="inbox/{name}", connection="AzureWebJobsStorage")
@app.blob_output(arg_name="dst", path="outbox/{name}.upper", connection="AzureWebJobsStorage")
def copy(req: func.HttpRequest, src: func.InputStream, dst: func.Out[bytes]) -> func.HttpResponse:
    if src is None:
        return func.HttpResponse("missing", status_code=404)
    dst.set(src.read().upper())
    return func.HttpResponse("copied")

@app.route(route="text/{name}", methods=["GET"])
@app.blob_input(arg_name="doc", path="inbox/{name}", connection="AzureWebJobsStorage", data_type="STRING")
def text(req: func.HttpRequest, doc: str) -> func.HttpResponse:
    return func.HttpResponse(f"{type(doc).__name__}:{doc}")
"""

QUEUE_APP = """
import azure.functions as func
app = func.FunctionApp()

@app.queue_trigger(arg_name="msg", queue_name="jobs", connection="AzureWebJobsStorage")
@app.blob_output(arg_name="out", path="results/{id}-{queueTrigger}", connection="AzureWebJobsStorage")
def from_queue(msg: func.QueueMessage, out: func.Out[str]) -> None:
    out.set("done:" + msg.get_body().decode())
"""


async def start(tmp_path: Path, code: str = APP) -> HostHarness:
    write_app(tmp_path / "app", code)
    return await HostHarness(tmp_path / "app", data_dir=tmp_path / "data").start()


async def test_http_function_reads_and_writes_blobs(tmp_path):
    host = await start(tmp_path)
    try:
        blobs = host.runtime.storage.blobs()
        await blobs.create_container("inbox")
        await blobs.upload_blob("inbox", "a.txt", b"hello")
        response = await host.http("POST", "/api/copy/a.txt")
        assert response.status_code == 200, response.text
        assert (await blobs.download_blob("outbox", "a.txt.upper"))[0] == b"HELLO"
        missing = await host.http("POST", "/api/copy/none.txt")
        assert missing.status_code == 404 and missing.text == "missing"
        assert not [b.name for b in (await blobs.list_blobs("outbox")).items if b.name.startswith("none")]
        as_text = await host.http("GET", "/api/text/a.txt")
        assert as_text.text == "str:hello"
    finally:
        await host.stop()


async def test_queue_function_writes_a_blob_named_from_the_message(tmp_path):
    host = await start(tmp_path, QUEUE_APP)
    try:
        queues = host.runtime.storage.queues()
        await queues.create_queue("jobs")
        await queues.put_message("jobs", base64.b64encode(b"job-7").decode())  # messageEncoding base64
        await host.advance(1)
        await host.wait_until_idle()
        blobs = host.runtime.storage.blobs()
        items = (await blobs.list_blobs("results")).items
        assert len(items) == 1 and items[0].name.endswith("-job-7")
        assert (await blobs.download_blob("results", items[0].name))[0] == b"done:job-7"
    finally:
        await host.stop()
