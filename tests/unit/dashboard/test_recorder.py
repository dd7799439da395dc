"""The recorder: nothing written on the invocation path, batches by count and by time, the
history's limits, log lines per attempt, and the dashboard off costs no recording."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path

from azure.functions.meta import Datum
from tests.unit.dashboard.support import dashboard, dashboard_host

from funchost.clock import ManualClock
from funchost.dashboard.options import DashboardOptions
from funchost.dashboard.recorder import HistoryRecorder, LogCapture, middleware
from funchost.invocation.contracts import InvocationRequest
from funchost.storage.invocations import DETAILS, FAILED, InvocationRecord
from funchost.testing import HostHarness, write_app

APP = """
import logging
import azure.functions as func
app = func.FunctionApp()

@app.queue_trigger(arg_name="msg", queue_name="work", connection="AzureWebJobsStorage")
def work(msg: str) -> None:
    logging.info("working on %s", msg)
    if msg == "fail":
        raise KeyError("missing")

@app.queue_trigger(arg_name="msg", queue_name="chatty", connection="AzureWebJobsStorage")
def chatty(msg: str) -> None:
    for i in range(250):
        logging.info("line %d", i)
"""


def request(host: HostHarness, function: str, value: str) -> InvocationRequest:
    return InvocationRequest(function=host.runtime.functions[function], trigger_value=Datum(value, "string"),
                             reason="test", details={"MessageId": value})


class CountingStore:
    """A history store that records the batches it is given (and can fail)."""

    def __init__(self) -> None:
        self.batches: list[list[InvocationRecord]] = []
        self.fail = False

    async def append(self, records: Sequence[InvocationRecord]) -> None:
        if self.fail:
            raise OSError("disk full")
        self.batches.append(list(records))

    async def prune(self, *, max_count: int, oldest_started: float) -> int:
        return 0


async def test_batches_are_written_off_the_invocation_path(tmp_path: Path) -> None:
    async with dashboard_host(tmp_path, APP) as host:
        recorder = dashboard(host).recorder
        assert recorder is not None
        store = CountingStore()
        await recorder.stop()  # replace the history's writer with one on a counting store
        recorder._stopping = False
        await recorder.start(store)  # type: ignore[arg-type]
        for n in range(3):
            assert (await host.runtime.invoker.invoke(request(host, "work", f"m{n}"))).succeeded
        assert store.batches == []  # nothing written while invoking
        await host.advance(recorder.options.flush_interval)
        assert [[r.details["MessageId"] for r in b] for b in store.batches] == [["m0", "m1", "m2"]]
        await recorder.stop()


async def test_a_full_batch_is_written_without_waiting(tmp_path: Path) -> None:
    clock = ManualClock()
    recorder = HistoryRecorder(clock, DashboardOptions(flush_batch=2, flush_interval=3600))
    store = CountingStore()
    async with dashboard_host(tmp_path, APP) as host:
        await recorder.start(store)  # type: ignore[arg-type]
        for n in range(2):
            await _observed(recorder, host, f"b{n}")
        for _ in range(50):
            await asyncio.sleep(0)
        assert len(store.batches) == 1 and len(store.batches[0]) == 2
        await recorder.stop()


async def _observed(recorder: HistoryRecorder, host: HostHarness, value: str,
                    details: dict[str, object] | None = None) -> None:
    """One attempt of `work`, told to `recorder` as binding tells its observers."""
    from funchost.invocation.middleware import Invocation

    req = request(host, "work", value)
    if details is not None:
        req.details = details
    invocation = Invocation(req, host.runtime.invoker.plan(req.function))  # type: ignore[attr-defined]
    recorder.attempt_started(invocation)
    recorder.attempt_finished(invocation, await host.runtime.invoker.invoke(req))


async def test_a_failing_store_keeps_the_records_for_the_next_batch(tmp_path: Path) -> None:
    recorder = HistoryRecorder(ManualClock(), DashboardOptions(flush_interval=3600))
    store = CountingStore()
    async with dashboard_host(tmp_path, APP) as host:
        await recorder.start(store)  # type: ignore[arg-type]
        await _observed(recorder, host, "x")
        store.fail = True
        assert await recorder.flush() == 0
        store.fail = False
        assert await recorder.flush() == 1
        assert store.batches[0][0].details["MessageId"] == "x"
        await recorder.stop()


async def test_past_the_pending_limit_the_oldest_are_dropped_and_counted(tmp_path: Path) -> None:
    recorder = HistoryRecorder(ManualClock(), DashboardOptions(pending_limit=3, flush_batch=100))
    async with dashboard_host(tmp_path, APP) as host:
        for n in range(5):
            await _observed(recorder, host, f"p{n}")
        store = CountingStore()
        recorder._store = store  # type: ignore[assignment]
        await recorder.flush()
        assert recorder.dropped == 2
        assert [r.details["MessageId"] for r in store.batches[0]] == ["p2", "p3", "p4"]


async def test_each_record_has_its_own_log_lines_error_and_outcome(tmp_path: Path) -> None:
    async with dashboard_host(tmp_path, APP) as host:
        results = await asyncio.gather(*(host.runtime.invoker.invoke(request(host, "work", v))
                                         for v in ("ok", "fail")))
        await dashboard(host).recorder.flush()  # type: ignore[union-attr]
        history = dashboard(host).history
        for result in results:
            stored = await history.get(result.invocation_id)
            assert stored is not None
            record = stored.record
            value = record.details["MessageId"]
            assert [line.message for line in record.logs] == [f"working on {value}"]
            assert record.logs[0].category == "Function.work.User"
            if value == "fail":
                assert record.outcome == FAILED and record.error == "KeyError: 'missing'"
                assert record.stack is not None and "raise KeyError" in record.stack
            else:
                assert record.outcome == "succeeded" and record.error is None


async def test_log_lines_per_invocation_are_bounded(tmp_path: Path) -> None:
    async with dashboard_host(tmp_path, APP) as host:
        result = await host.runtime.invoker.invoke(request(host, "chatty", "x"))
        await dashboard(host).recorder.flush()  # type: ignore[union-attr]
        stored = await dashboard(host).history.get(result.invocation_id)
        assert stored is not None
        assert len(stored.record.logs) == 200 and stored.record.dropped_logs == 50


async def test_host_json_log_levels_apply_to_the_captured_lines(tmp_path: Path) -> None:
    folder = write_app(tmp_path / "app", APP, host_json={"version": "2.0", "logging": {"logLevel": {
        "Function.work.User": "Warning"}}})
    logging.getLogger().setLevel(logging.INFO)
    try:
        async with HostHarness(folder, data_dir=tmp_path / "data", settings={"FUNCHOST_DASHBOARD": "true"}) as host:
            result = await host.runtime.invoker.invoke(request(host, "work", "quiet"))
            await dashboard(host).recorder.flush()  # type: ignore[union-attr]
            stored = await dashboard(host).history.get(result.invocation_id)
            assert stored is not None and stored.record.logs == ()
    finally:
        logging.getLogger().setLevel(logging.WARNING)


async def test_the_limits_apply_at_start_and_while_recording(tmp_path: Path) -> None:
    async with dashboard_host(tmp_path, APP, FUNCHOST_DASHBOARD_HISTORY_COUNT="3") as host:
        for n in range(5):
            await host.runtime.invoker.invoke(request(host, "work", f"n{n}"))
        recorder = dashboard(host).recorder
        assert recorder is not None
        await recorder.flush()
        await host.advance(2 * recorder.options.prune_interval)
        assert [s.record.details["MessageId"] for s in await dashboard(host).history.recent()] == ["n4", "n3", "n2"]
    async with dashboard_host(tmp_path, APP, FUNCHOST_DASHBOARD_HISTORY_AGE="00:10:00") as host:
        await host.advance(900)  # the records above are now older than ten minutes
        recorder = dashboard(host).recorder
        assert recorder is not None
        await host.runtime.invoker.invoke(request(host, "work", "fresh"))
        await recorder.flush()
        await host.advance(2 * recorder.options.prune_interval)
        assert [s.record.details["MessageId"] for s in await dashboard(host).history.recent()] == ["fresh"]


async def test_with_the_dashboard_off_nothing_is_recorded(tmp_path: Path) -> None:
    async with dashboard_host(tmp_path, APP, FUNCHOST_DASHBOARD="false") as host:
        assert host.runtime.services.find(HistoryRecorder) is None
        assert (await host.runtime.invoker.invoke(request(host, "work", "x"))).succeeded
        assert not any(isinstance(h, LogCapture) for h in logging.getLogger().handlers)
        assert middleware(host.runtime) is None


def test_a_lean_http_response_is_summarised_without_building_its_datum() -> None:
    from types import SimpleNamespace

    import azure.functions as func

    from funchost.dashboard.recorder import result_summary
    from funchost.invocation.http_response import HttpResponseDatum, encode_response

    response = encode_response(func.HttpResponse("made", status_code=201))
    assert isinstance(response, HttpResponseDatum)

    def refuse() -> dict[str, object]:
        raise AssertionError("the recorder built the response's Datum")

    response._build = refuse  # what the lean path saves: the Datums are never built
    request = SimpleNamespace(function=SimpleNamespace(is_http=True))
    result = SimpleNamespace(outputs={"$return": response})
    assert result_summary(request, result) == "HTTP 201"  # type: ignore[arg-type]
    converter_style = Datum(type="http", value={"status_code": Datum("404", "string")})
    assert result_summary(request, SimpleNamespace(outputs={"$return": converter_style})) == "HTTP 404"  # type: ignore[arg-type]


CANCELLED_APP = """
import asyncio
import azure.functions as func
app = func.FunctionApp()

@app.queue_trigger(arg_name="msg", queue_name="work", connection="AzureWebJobsStorage")
async def work(msg: str) -> None:
    await asyncio.Event().wait()
"""


async def test_the_recorder_adds_no_piece_and_forgets_a_cancelled_attempt(tmp_path: Path) -> None:
    async with dashboard_host(tmp_path, CANCELLED_APP) as host:
        recorder = dashboard(host).recorder
        assert recorder is not None
        invoker = host.runtime.invoker
        assert recorder in invoker._observers  # type: ignore[attr-defined]
        assert recorder.attempt_finished not in invoker._attempt  # type: ignore[attr-defined]
        running = asyncio.ensure_future(invoker.invoke(request(host, "work", "stuck")))
        for _ in range(50):
            await asyncio.sleep(0)
        assert [function for _, function, _ in recorder.running_now()] == ["work"]
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        assert recorder.running_now() == [] and recorder._pending == []  # not recorded, not leaked
        assert recorder._began == {}


async def test_details_marshal_does_not_take_are_kept_as_text(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    recorder = HistoryRecorder(ManualClock(), DashboardOptions(flush_interval=3600))
    store = CountingStore()
    when = datetime(2026, 12, 3, 17, 0, tzinfo=UTC)
    async with dashboard_host(tmp_path, APP) as host:
        await recorder.start(store)  # type: ignore[arg-type]
        await _observed(recorder, host, "q", {"MessageId": "q", "DequeueCount": 1, "InsertedOn": when,
                                              "Ids": ["a", "b"]})
        assert type(recorder._pending[DETAILS]) is bytes  # waits as bytes, not as a tracked dict
        assert await recorder.flush() == 1
        assert store.batches[0][0].details == {"MessageId": "q", "DequeueCount": 1, "InsertedOn": str(when),
                                               "Ids": ["a", "b"]}
        await recorder.stop()


async def test_details_of_untracked_values_wait_as_they_are_and_are_encoded_by_the_writer(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    recorder = HistoryRecorder(ManualClock(), DashboardOptions(flush_interval=3600))
    store = CountingStore()
    when = datetime(2026, 12, 3, 17, 0, tzinfo=UTC)
    plain = {"MessageId": "p", "DequeueCount": 2}
    dated = {"MessageId": "d", "InsertedOn": when}
    async with dashboard_host(tmp_path, APP) as host:
        await recorder.start(store)  # type: ignore[arg-type]
        await _observed(recorder, host, "p", plain)
        await _observed(recorder, host, "d", dated)
        await _observed(recorder, host, "e", dict(dated, MessageId="e"))
        waiting = recorder._pending[DETAILS::len(InvocationRecord._fields)]
        assert waiting[0] is plain and waiting[1] is dated  # no encoding on the invocation path
        assert await recorder.flush() == 3
        assert [r.details for r in store.batches[0]] == [plain, {"MessageId": "d", "InsertedOn": str(when)},
                                                        {"MessageId": "e", "InsertedOn": str(when)}]
        await recorder.stop()


async def test_after_a_batch_written_as_it_came_the_next_is_encoded_whole_and_reads_back_the_same(
        tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from funchost.storage.invocations import RecordBatch
    from funchost.storage.sqlite.invocations import SqliteInvocationHistory

    class Store(SqliteInvocationHistory):
        encoded: list[bool] = []

        async def append(self, records: Sequence[InvocationRecord]) -> None:
            assert isinstance(records, RecordBatch)
            self.encoded.append(records.encoded is not None)
            await super().append(records)

    recorder = HistoryRecorder(ManualClock(), DashboardOptions(flush_interval=3600))
    store = Store(tmp_path / "history")
    when = datetime(2026, 12, 3, 17, 0, tzinfo=UTC)
    batches: list[list[dict[str, object]]] = [
        [{"Method": "GET", "Path": "/api/a"}],  # plain: written as it came, record by record
        [{"Method": "GET", "Path": "/api/b"}, {"Ids": ["x", "y"]}],  # after a plain batch: encoded whole
        [{"MessageId": "d", "InsertedOn": when}],  # a datetime: the whole encoding refused, converted
        [{"Method": "POST", "Path": "/api/c"}],  # after a converted batch: record by record again
        [{"Method": "PUT", "Path": "/api/d"}],
    ]
    async with dashboard_host(tmp_path, APP) as host:
        await recorder.start(store)
        for number, batch in enumerate(batches):
            for index, details in enumerate(batch):
                await _observed(recorder, host, f"{number}-{index}", details)
            assert await recorder.flush() == len(batch)
        assert store.encoded == [False, True, False, False, True]
        read = [s.record.details for s in reversed(await store.recent())]
        assert read == [d if "InsertedOn" not in d else {**d, "InsertedOn": str(when)}
                        for batch in batches for d in batch]
        await recorder.stop()
        await store.aclose()


async def test_the_capture_takes_the_lines_of_running_attempts_only(tmp_path: Path) -> None:
    from funchost.direct_lines import LineObserver
    from funchost.invocation.middleware import Invocation

    recorder = HistoryRecorder(ManualClock(), DashboardOptions(flush_interval=3600))
    capture = LogCapture(recorder)
    assert isinstance(capture, LineObserver)
    async with dashboard_host(tmp_path, APP) as host:
        req = request(host, "work", "x")
        invocation = Invocation(req, host.runtime.invoker.plan(req.function))  # type: ignore[attr-defined]
        assert not capture.takes_invocation_line(req.invocation_id)
        recorder.attempt_started(invocation)
        assert capture.takes_invocation_line(req.invocation_id)
        recorder.attempt_finished(invocation, None)
        assert not capture.takes_invocation_line(req.invocation_id)
