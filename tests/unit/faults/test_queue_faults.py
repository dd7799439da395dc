"""Fault injection through the real in-process host: what happens when a queue write or delete
fails before, during or after, or the function itself fails. Every delay runs on the ManualClock."""

from __future__ import annotations

from pathlib import Path

from funchost.errors import ServiceUnavailable
from funchost.testing import HostHarness, write_app

APP = """
import azure.functions as func
app = func.FunctionApp()
RUNS = []

@app.queue_trigger(arg_name="msg", queue_name="work", connection="AzureWebJobsStorage")
@app.queue_output(arg_name="out", queue_name="results", connection="AzureWebJobsStorage")
def work(msg: func.QueueMessage, out: func.Out[str]) -> None:
    RUNS.append((msg.get_body().decode(), msg.dequeue_count))
    out.set("result of " + msg.get_body().decode())
"""


async def start(tmp_path: Path) -> HostHarness:
    write_app(tmp_path / "app", APP)
    host = HostHarness(tmp_path / "app", data_dir=tmp_path / "data")
    await host.start()
    await host.queues.create("work")
    return host


def runs(host: HostHarness) -> list[tuple[str, int]]:
    return host.runtime.functions["work"].func.__globals__["RUNS"]


async def test_delete_failing_before_it_reaches_storage_redelivers_after_ten_minutes(tmp_path: Path) -> None:
    host = await start(tmp_path)
    try:
        host.faults.arm("queue.delete.before", ServiceUnavailable("storage unreachable"),
                        when=lambda **d: d.get("queue") == "work")
        await host.queues.send("work", "job-1")
        await host.advance(3)
        assert runs(host) == [("job-1", 1)]
        await host.advance(9 * 60)  # still hidden by the 10-minute receive visibility
        assert runs(host) == [("job-1", 1)]
        await host.advance(61 + 3)  # visibility lapsed: delivered again (at least once)
        assert runs(host) == [("job-1", 1), ("job-1", 2)]
        assert await host.queues.count("work") == 0
    finally:
        await host.stop()


async def test_output_write_lost_during_the_put_yields_a_duplicate_result(tmp_path: Path) -> None:
    """The result message is written but the binding sees an error: the invocation fails, the
    trigger message is released and processed again, and the consumer sees the result twice."""
    host = await start(tmp_path)
    try:
        host.faults.arm("queue.put.during", ServiceUnavailable("response lost"),
                        when=lambda **d: d.get("queue") == "results")
        await host.queues.send("work", "job-2")
        await host.advance(5)
        assert [r[0] for r in runs(host)] == ["job-2", "job-2"]
        results = [m.content for m in await host.queues.peek("results")]
        assert len(results) == 2  # at-least-once: consumers must deduplicate
        assert await host.queues.count("work") == 0
    finally:
        await host.stop()


async def test_failure_inside_the_function_counts_towards_poison(tmp_path: Path) -> None:
    host = await start(tmp_path)
    try:
        host.faults.arm("function.before", RuntimeError("crashed inside the function"), times=None)
        await host.queues.send("work", "job-3")
        await host.advance(30)
        assert await host.queues.count("work") == 0
        assert await host.queues.poison("work") == ["job-3"]
        assert runs(host) == []  # the fault fired before the user code each of the 5 times
        assert len([p for p, _ in host.faults.history if p == "function.before"]) == 5
    finally:
        await host.stop()


async def test_a_put_that_never_reached_storage_fails_the_invocation_without_output(tmp_path: Path) -> None:
    host = await start(tmp_path)
    try:
        host.faults.arm("queue.put.before", ServiceUnavailable("unreachable"),
                        when=lambda **d: d.get("queue") == "results")
        await host.queues.send("work", "job-4")
        await host.advance(5)
        assert [r[0] for r in runs(host)] == ["job-4", "job-4"]
        assert len(await host.queues.peek("results")) == 1  # only the retry's write landed
    finally:
        await host.stop()


HTTP_APP = """
import azure.functions as func
app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

@app.route(route="accept", methods=["POST"])
@app.queue_output(arg_name="out", queue_name="accepted", connection="AzureWebJobsStorage")
def accept(req: func.HttpRequest, out: func.Out[str]) -> func.HttpResponse:
    out.set(req.get_body().decode())
    return func.HttpResponse("accepted", status_code=202)
"""


async def test_an_http_write_storage_cannot_take_answers_503_with_retry_after(tmp_path: Path) -> None:
    write_app(tmp_path / "app", HTTP_APP)
    host = HostHarness(tmp_path / "app", data_dir=tmp_path / "data")
    await host.start()
    try:
        await host.queues.create("accepted")
        host.faults.arm("queue.put.before", ServiceUnavailable("the server is away"))
        refused = await host.http("POST", "/api/accept", content=b"one")
        assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
        assert await host.queues.peek("accepted") == []  # refused, so the caller knows to send it again
        accepted = await host.http("POST", "/api/accept", content=b"one")
        assert accepted.status_code == 202
        assert len(await host.queues.peek("accepted")) == 1
    finally:
        await host.stop()
