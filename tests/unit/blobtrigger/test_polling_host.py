"""The polling blob trigger through the in-process host on embedded storage, with a manual clock."""

from __future__ import annotations

import sys

import pytest

from funchost.testing import HostHarness, write_app

APP = """
import azure.functions as func

app = func.FunctionApp()
SEEN = []

@app.blob_trigger(arg_name="blob", path="images/{name}.{ext}", connection="AzureWebJobsStorage")
def on_image(blob: func.InputStream) -> None:
    body = blob.read()
    SEEN.append((blob.name, body, blob.length, blob.uri, dict(blob.metadata or {}),
                 (blob.blob_properties or {}).get("ETag")))
    if body.startswith(b"fail"):
        raise RuntimeError("cannot handle " + blob.name)
"""


def seen():
    return sys.modules["function_app"].SEEN


@pytest.fixture
def app_dir(tmp_path):
    return write_app(tmp_path / "app", APP)


async def test_new_blob_runs_once_with_the_librarys_input_stream(funchost_app, app_dir):
    host = await funchost_app(app_dir)
    props = await host.blobs.upload("images", "a/cat.png", b"meow", metadata={"owner": "bob"})
    await host.advance(2)
    await host.wait_until_idle()
    assert seen() == [("images/a/cat.png", b"meow", 4, "http://127.0.0.1:10000/devstoreaccount1/images/a/cat.png",
                       {"owner": "bob"}, props.etag)]
    await host.advance(10)
    assert len(seen()) == 1
    assert await host.blobs.receipts("on_image") == [
        f"blobreceipts/{host.runtime.host_id}/Host.Functions.on_image/{props.etag}/images/a/cat.png"]


async def test_rewrite_runs_again_and_blobs_that_do_not_match_are_skipped(funchost_app, app_dir):
    host = await funchost_app(app_dir)
    await host.blobs.upload("images", "cat.png", b"one")
    await host.blobs.upload("images", "no-extension", b"skipped")
    await host.advance(2)
    await host.blobs.upload("images", "cat.png", b"one")  # same content, new ETag
    await host.advance(2)
    await host.wait_until_idle()
    assert [s[1] for s in seen()] == [b"one", b"one"]


async def test_restart_does_not_reprocess_and_existing_blobs_run_at_first_start(tmp_path, app_dir):
    data = tmp_path / "data"
    async with HostHarness(app_dir, data_dir=data) as host:
        await host.blobs.upload("images", "before.txt", b"x")  # written before the trigger looked
    seen().clear()
    async with HostHarness(app_dir, data_dir=data) as host:
        await host.advance(2)
        await host.wait_until_idle()
        assert [s[0] for s in seen()] == ["images/before.txt"]
    seen().clear()
    async with HostHarness(app_dir, data_dir=data) as host:
        await host.advance(10)
        await host.wait_until_idle()
        assert seen() == []


async def test_failing_function_runs_five_times_then_poison(funchost_app, app_dir):
    host = await funchost_app(app_dir)
    props = await host.blobs.upload("images", "bad.txt", b"fail me")
    for _ in range(10):
        await host.advance(2)
    await host.wait_until_idle()
    assert [s[0] for s in seen()] == ["images/bad.txt"] * 5
    assert await host.blobs.poison() == [{
        "Type": "BlobTrigger", "FunctionId": "Host.Functions.on_image", "BlobType": "BlockBlob",
        "ContainerName": "images", "BlobName": "bad.txt", "ETag": props.etag}]
    assert await host.blobs.pending() == 0
