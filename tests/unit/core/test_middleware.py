"""Invocation middleware: the chain's order, and pieces a feature adds (`MIDDLEWARE_MODULES`)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from azure.functions.meta import Datum

from funchost.invocation.contracts import InvocationRequest, InvocationResult
from funchost.invocation.middleware import CallNext, Invocation, compose
from funchost.runtime import registry
from funchost.testing import HostHarness, write_app

from . import middleware_probe

TIMER = Datum(json.dumps({"Schedule": {"AdjustForDST": True}, "ScheduleStatus": None, "IsPastDue": False}), "json")

APP = """
import azure.functions as func
app = func.FunctionApp()

@app.timer_trigger(arg_name="t", schedule="0 0 0 1 1 *")
def ok(t: func.TimerRequest) -> None:
    pass

@app.timer_trigger(arg_name="t", schedule="0 0 0 1 1 *")
@app.retry(strategy="fixed_delay", max_retry_count="1", delay_interval="00:00:01")
def flaky(t: func.TimerRequest) -> None:
    raise ValueError("no")
"""


async def test_pieces_run_outermost_first_and_may_answer_without_calling_on() -> None:
    order: list[str] = []

    def piece(name: str, stop: bool = False):  # type: ignore[no-untyped-def]
        async def run(invocation: Invocation, call_next: CallNext) -> InvocationResult:
            order.append(f"{name} in")
            if stop:
                return InvocationResult("id", "f", succeeded=False)
            result = await call_next(invocation)
            order.append(f"{name} out")
            return result
        return run

    async def endpoint(invocation: Invocation) -> InvocationResult:
        order.append("call")
        return InvocationResult("id", "f", succeeded=True)

    handle = compose([piece("a"), piece("b")], endpoint)
    assert (await handle(Invocation(None, None))).succeeded  # type: ignore[arg-type]
    assert order == ["a in", "b in", "call", "b out", "a out"]
    order.clear()
    assert not (await compose([piece("a", stop=True), piece("b")], endpoint)(Invocation(None, None))).succeeded  # type: ignore[arg-type]
    assert order == ["a in"]


async def test_a_registered_piece_sees_every_attempt_and_its_result(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(registry, "MIDDLEWARE_MODULES", ("tests.unit.core.middleware_probe",))
    middleware_probe.SEEN.clear()
    write_app(tmp_path / "app", APP)
    async with HostHarness(tmp_path / "app", data_dir=tmp_path / "data") as host:
        runtime = host.runtime
        ok = await runtime.invoker.invoke(InvocationRequest(function=runtime.functions["ok"], trigger_value=TIMER))
        assert ok.succeeded
        flaky = runtime.invoker.invoke(InvocationRequest(function=runtime.functions["flaky"], trigger_value=TIMER))
        task = asyncio.ensure_future(flaky)
        await host.advance(2)  # the retry policy (outside the piece) waits 1 s between attempts
        result = await task
        assert not result.succeeded and result.attempts == 2
    host_id = runtime.host_id
    assert middleware_probe.SEEN == [("ok", True, host_id), ("flaky", False, host_id), ("flaky", False, host_id)]
