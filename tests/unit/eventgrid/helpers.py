"""Shared pieces for the Event Grid unit tests: a fake invoker, an engine on a manual clock."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from funchost.clock import ManualClock
from funchost.eventgrid.config import Destination, EventGridConfig, SubscriptionConfig, TopicConfig
from funchost.eventgrid.deadletter import DeadLetterWriter
from funchost.eventgrid.delivery import DeliveryEngine
from funchost.eventgrid.destinations import Outcome, outcome_for_status
from funchost.eventgrid.routing import route
from funchost.indexing.spec import BindingSpec, FunctionSpec
from funchost.invocation.contracts import InvocationRequest, InvocationResult
from funchost.runtime import activity
from funchost.storage.sqlite.eventgrid import SqliteEventStore

TOPIC_ID = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/funchost/providers/Microsoft.EventGrid/topics/orders"


def event(i: int = 1, **extra: Any) -> dict[str, Any]:
    body = {"id": f"ev-{i}", "subject": f"/orders/{i}", "eventType": "Order.Created",
            "eventTime": "2024-05-01T10:00:00Z", "data": {"n": i}, "dataVersion": "1.0",
            "metadataVersion": "1", "topic": TOPIC_ID}
    body.update(extra)
    return body


def function_spec(name: str = "on_event") -> FunctionSpec:
    trigger = BindingSpec("event", "eventGridTrigger", "in", None, {}, is_trigger=True)
    return FunctionSpec(name=name, func=lambda event: None, trigger=trigger, bindings=(trigger,), parameters=(),
                        return_binding=None, return_annotation=None, is_async=False, script_file="function_app.py",
                        directory=".", source_line=1)


class FakeInvoker:
    """The FunctionInvoker protocol: records each event; `fail(event)` returns an error message."""

    def __init__(self, fail: Callable[[dict[str, Any]], str | None] = lambda e: None,
                 block: asyncio.Event | None = None) -> None:
        self.events: list[dict[str, Any]] = []
        self.fail = fail
        self.block = block

    async def invoke(self, request: InvocationRequest) -> InvocationResult:
        evt = json.loads(request.trigger_value.value)
        self.events.append(evt)
        if self.block is not None:
            await self.block.wait()
        message = self.fail(evt)
        error = RuntimeError(message) if message else None
        return InvocationResult(request.invocation_id, request.function.name, error is None, error)


class StatusSender:
    """The Sender protocol answering a fixed HTTP status; records (count, events) per call."""

    def __init__(self, status: int | Callable[[int], int]) -> None:
        self.status = status
        self.calls: list[tuple[int, list[dict[str, Any]]]] = []
        self.times: list[float] = []
        self.clock: ManualClock | None = None

    async def send(self, sub: SubscriptionConfig, events: list[dict[str, Any]], schema: str,
                   delivery_count: int) -> Outcome:
        self.calls.append((delivery_count, events))
        if self.clock is not None:
            self.times.append(self.clock.monotonic())
        status = self.status(len(self.calls)) if callable(self.status) else self.status
        return outcome_for_status(status, f"HTTP {status}")


def config(*subs: SubscriptionConfig, schema: str = "EventGridSchema") -> EventGridConfig:
    return EventGridConfig({"orders": TopicConfig("orders", input_schema=schema)}, tuple(subs))


def sub(name: str = "orders-sub", kind: str = "webhook", **kw: Any) -> SubscriptionConfig:
    dest = Destination(kind, function_name="on_event" if kind == "function" else None,
                       endpoint_url="http://example.invalid/hook" if kind == "webhook" else None,
                       queue_name="events" if kind == "storageQueue" else None)
    return SubscriptionConfig(name, "orders", kw.pop("destination", dest), **kw)


class Rig:
    """An engine, its store and a manual clock; `advance` lets deliveries finish at each step."""

    def __init__(self, tmp: Path, cfg: EventGridConfig, senders: dict[str, Any], *, blobs: Any = None,
                 clock: ManualClock | None = None, store: SqliteEventStore | None = None) -> None:
        self.clock = clock or ManualClock()
        self.cfg = cfg
        self.store = store or SqliteEventStore(tmp / "eventgrid")
        self.engine = DeliveryEngine(self.store, cfg, senders, self.clock,
                                     dead_letters=DeadLetterWriter(lambda _c: blobs) if blobs is not None else None)
        for sender in senders.values():
            if isinstance(sender, StatusSender):
                sender.clock = self.clock

    async def start(self) -> Rig:
        await self.engine.start()
        await self.settle()
        return self

    async def publish(self, *events: dict[str, Any], schema: str = "EventGridSchema") -> None:
        routed = route(self.cfg, "orders", list(events), schema)
        await self.store.append("orders", schema, routed, self.clock.now().timestamp())
        self.engine.notify()
        await self.settle()

    async def settle(self) -> None:
        stable, started = 0, time.monotonic()
        while stable < 3:
            for _ in range(10):
                await asyncio.sleep(0)
            quiet = activity.in_flight() == 0 and (self.engine.idle or time.monotonic() - started > 0.2)
            stable = stable + 1 if quiet else 0
            if not quiet:
                await asyncio.sleep(0.001)

    async def advance(self, seconds: float) -> None:
        await self.clock.advance(seconds, settle=self.settle)

    async def stop(self) -> None:
        await self.engine.stop()

    async def rows(self) -> list[Any]:
        return await self.store.deliveries()
