"""Polling blob trigger: shared storage, vanishing blobs, late containers, parameter types, load errors."""

from __future__ import annotations

import pytest

from funchost.clock import ManualClock
from funchost.errors import ServiceUnavailable
from funchost.testing import HostHarness, write_app
from funchost.triggers.blob.hub import BlobTriggerHub

APP = """
import azure.functions as func

app = func.FunctionApp()
SEEN = []

@app.blob_trigger(arg_name="blob", path="inbox/{name}", connection="AzureWebJobsStorage")
def on_inbox(blob: func.InputStream) -> None:
    SEEN.append((blob.name, blob.read()))
"""

TYPED = """
import azure.functions as func

app = func.FunctionApp()
SEEN = []

@app.blob_trigger(arg_name="data", path="raw/{stem}.{ext}", connection="AzureWebJobsStorage")
@app.blob_output(arg_name="out", path="processed/{stem}-{ext}.txt", connection="AzureWebJobsStorage")
def as_bytes(data: bytes, out: func.Out[str]) -> None:
    SEEN.append(("bytes", data))
    out.set(data.decode().upper())

@app.blob_trigger(arg_name="text", path="texts/{name}", connection="AzureWebJobsStorage", data_type="string")
def as_text(text: str) -> None:
    SEEN.append(("str", text))

@app.blob_trigger(arg_name="blob", path="bad{/x", connection="AzureWebJobsStorage")
def broken(blob: func.InputStream) -> None:
    pass
"""


def seen_of(host: HostHarness) -> list:
    return host.runtime.functions[next(iter(host.runtime.functions))].func.__globals__["SEEN"]


async def test_two_hosts_on_shared_storage_run_each_blob_once(tmp_path):
    app = write_app(tmp_path / "app", APP)
    data = tmp_path / "data"
    async with HostHarness(app, data_dir=data, clock=ManualClock()) as first, \
            HostHarness(app, data_dir=data, clock=ManualClock()) as second:
        for i in range(20):
            await (first if i % 2 else second).blobs.upload("inbox", f"doc-{i}.txt", f"body {i}")
        for _ in range(5):
            await first.advance(2)
            await second.advance(2)
        await first.wait_until_idle()
        await second.wait_until_idle()
        runs = seen_of(first) + seen_of(second)
        assert sorted(name for name, _ in runs) == sorted(f"inbox/doc-{i}.txt" for i in range(20))
        hubs = [host.runtime.services.find(BlobTriggerHub) for host in (first, second)]
        assert sorted(hub.discovery.is_listening for hub in hubs) == [False, True]  # one scans, both execute


async def test_blob_deleted_before_its_message_runs_is_dropped(tmp_path):
    app = write_app(tmp_path / "app", APP)
    async with HostHarness(app) as host:
        internal = f"azure-webjobs-blobtrigger-{host.runtime.host_id}"
        host.faults.arm("queue.get.before", ServiceUnavailable("stage B held"), times=None,
                        when=lambda **details: details.get("queue") == internal)
        await host.blobs.upload("inbox", "short-lived.txt", b"x")
        await host.advance(2)
        assert await host.blobs.pending() == 1  # discovered and queued, not run
        await host.blobs.delete("inbox", "short-lived.txt")
        host.faults.disarm()
        for _ in range(3):
            await host.advance(30)
        await host.wait_until_idle()
        assert seen_of(host) == []
        assert await host.blobs.pending() == 0 and await host.blobs.poison() == []


async def test_container_created_after_start_is_watched(tmp_path):
    app = write_app(tmp_path / "app", APP)
    async with HostHarness(app) as host:
        assert host.runtime.function_errors.of("on_inbox") == []
        await host.advance(4)
        await host.blobs.upload("inbox", "late.txt", b"late")
        await host.advance(2)
        await host.wait_until_idle()
        assert seen_of(host) == [("inbox/late.txt", b"late")]


async def test_bytes_str_binding_data_and_a_broken_path(tmp_path):
    app = write_app(tmp_path / "app", TYPED)
    async with HostHarness(app) as host:
        errors = host.runtime.function_errors.of("broken")
        assert errors and "Invalid blob trigger path 'bad{/x'. Container paths cannot contain {resolve} tokens." in errors[0]
        await host.blobs.upload("raw", "report.final.csv", b"a,b")
        await host.blobs.upload("texts", "note.md", "h\u00e9llo")
        await host.advance(2)
        await host.wait_until_idle()
        assert sorted(seen_of(host)) == [("bytes", b"a,b"), ("str", "h\u00e9llo")]
        assert await host.blobs.download("processed", "report.final-csv.txt") == b"A,B"


async def test_admin_invocation_reads_the_named_blob(tmp_path):
    app = write_app(tmp_path / "app", APP)
    async with HostHarness(app) as host:
        await host.blobs.upload("inbox", "manual.txt", b"by hand")
        await host.advance(2)
        await host.wait_until_idle()
        seen_of(host).clear()
        result = await host.invoke("on_inbox", "inbox/manual.txt")
        assert result.succeeded and seen_of(host) == [("inbox/manual.txt", b"by hand")]
        response = await host.http("POST", "/admin/functions/on_inbox", key="master", json={"input": "inbox/none.txt"})
        assert response.status_code == 400


@pytest.mark.parametrize("size", [0, 9 * 1024 * 1024 + 7])
async def test_input_stream_reads_large_blobs_from_a_spooled_file(tmp_path, size):
    app = write_app(tmp_path / "app", """
import azure.functions as func

app = func.FunctionApp()
SEEN = []

@app.blob_trigger(arg_name="blob", path="big/{name}", connection="AzureWebJobsStorage")
def on_big(blob: func.InputStream) -> None:
    total, chunks = 0, 0
    while True:
        chunk = blob.read(1024 * 1024)
        if not chunk:
            break
        total, chunks = total + len(chunk), chunks + 1
    SEEN.append((total, chunks, blob.length, type(blob._io).__name__, getattr(blob._io, "_rolled", None),
                 isinstance(blob, func.InputStream)))
""")
    async with HostHarness(app) as host:
        await host.blobs.upload("big", "file.bin", b"\x01" * size)
        await host.advance(2)
        await host.wait_until_idle()
        [(total, chunks, length, kind, rolled, is_stream)] = seen_of(host)
        assert (total, length, kind, is_stream) == (size, size or None, "SpooledTemporaryFile", True)
        assert rolled is (size > 8 * 1024 * 1024)  # past 8 MiB the download lives on disk, not in memory



async def test_max_degree_of_parallelism_bounds_concurrent_invocations(tmp_path):
    app = write_app(tmp_path / "app", """
import asyncio
import azure.functions as func

app = func.FunctionApp()
RUNNING = [0]
PEAK = [0]
RELEASE = asyncio.Event()
SEEN = []

@app.blob_trigger(arg_name="blob", path="work/{name}", connection="AzureWebJobsStorage")
async def slow(blob: func.InputStream) -> None:
    RUNNING[0] += 1
    PEAK[0] = max(PEAK[0], RUNNING[0])
    await RELEASE.wait()
    RUNNING[0] -= 1
    SEEN.append(blob.name)
""", host_json={"version": "2.0", "extensions": {"blobs": {"maxDegreeOfParallelism": 3}}})
    async with HostHarness(app) as host:
        module = host.runtime.functions["slow"].func.__globals__
        internal = f"azure-webjobs-blobtrigger-{host.runtime.host_id}"
        host.faults.arm("queue.get.before", ServiceUnavailable("stage B held"), times=None,
                        when=lambda **details: details.get("queue") == internal)
        try:
            for i in range(8):
                await host.blobs.upload("work", f"job-{i}", b"x")
            await host.advance(2)
            assert await host.blobs.pending() == 8
            host.faults.disarm()
            for _ in range(3):
                await host.advance(60)
            # mdop 3: batches of 2, the next fetch once at most 1 is still running
            assert (module["PEAK"][0], module["RUNNING"][0]) == (2, 2)
        finally:
            module["RELEASE"].set()
        for _ in range(5):
            await host.advance(2)
        await host.wait_until_idle()
        assert len(module["SEEN"]) == 8 and module["PEAK"][0] <= 3


async def test_failure_after_queueing_runs_the_version_again_at_least_once(tmp_path):
    """The receipt completes after the message is queued: a failure in between leaves it incomplete,
    discovery offers the blob again and queues it once more (two runs), as the extension does."""
    app = write_app(tmp_path / "app", APP)
    async with HostHarness(app) as host:
        internal = f"azure-webjobs-blobtrigger-{host.runtime.host_id}"
        host.faults.arm("queue.put.after", ServiceUnavailable("lost response"),
                        when=lambda **details: details.get("queue") == internal)
        await host.blobs.upload("inbox", "twice.txt", b"x")
        for _ in range(3):
            await host.advance(2)
        await host.wait_until_idle()
        assert seen_of(host) == [("inbox/twice.txt", b"x")] * 2
        [receipt] = await host.blobs.receipts("on_inbox")
        props = await host.runtime.storage.blobs().get_blob_properties("azure-webjobs-hosts", receipt)
        assert "Incomplete" not in props.metadata
