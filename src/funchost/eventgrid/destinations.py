"""Where deliveries go: this host's Event Grid trigger, a webhook URL, or a storage queue.

Each sender turns one batch (a list of events already in the subscription's delivery schema)
into an `Outcome`. Senders never raise: a refused connection is an outcome like a 500.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from azure.functions.meta import Datum

from funchost.clock import Clock
from funchost.eventgrid import SCHEMA_CLOUDEVENTS
from funchost.eventgrid.config import SubscriptionConfig
from funchost.indexing.spec import FunctionSpec
from funchost.invocation.contracts import FunctionInvoker, InvocationRequest
from funchost.runtime.faults import NO_FAULTS, FaultInjector
from funchost.runtime.stopping import until_empty
from funchost.storage.eventgrid import EventGridStore
from funchost.storage.queue_send import send_message
from funchost.storage.queues import QueueService

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("funchost.eventgrid")

RESPONSE_TIMEOUT = 30.0  # seconds Event Grid waits for an endpoint (azure-semantics 6.1)
SUCCESS_CODES = frozenset({200, 201, 202, 203, 204})
VALIDATION_EVENT_TYPE = "Microsoft.EventGrid.SubscriptionValidationEvent"

_OUTCOMES = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 408: "TimedOut",
             413: "PayloadTooLarge", 503: "Busy"}


@dataclass(frozen=True)
class Outcome:
    succeeded: bool
    status: int | None  # HTTP status (or the one the destination maps to); None if no response
    outcome: str  # lastDeliveryOutcome: Succeeded, TimedOut, NotFound, GenericError, ...
    message: str = ""


def outcome_for_status(status: int, message: str = "") -> Outcome:
    if status in SUCCESS_CODES:
        return Outcome(True, status, "Succeeded")
    return Outcome(False, status, _OUTCOMES.get(status, "GenericError"), message)


TIMED_OUT = Outcome(False, None, "TimedOut", "no response within 30 seconds")


class Sender(Protocol):
    async def send(self, sub: SubscriptionConfig, events: list[dict[str, Any]], schema: str,
                   delivery_count: int) -> Outcome: ...


T = TypeVar("T")


async def with_timeout(clock: Clock, work: Awaitable[T], timeout: float = RESPONSE_TIMEOUT) -> T | Outcome:
    """Race `work` against the clock; on timeout the work keeps running (as the endpoint would)."""
    task = asyncio.ensure_future(work)
    timer = asyncio.ensure_future(clock.sleep(timeout))
    try:
        await asyncio.wait({task, timer}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        timer.cancel()
    if task.done():
        return task.result()
    return TIMED_OUT


# --- this host's Event Grid trigger --------------------------------------------------------------


FunctionLookup = Callable[[str], FunctionSpec | None]


def trigger_request(function: FunctionSpec, event: Mapping[str, Any], now: datetime) -> InvocationRequest:
    """One event as the host hands it to the worker: a `json` Datum (azure-semantics 2.4)."""
    binding_data = {k: v for k, v in event.items() if isinstance(k, str)}
    return InvocationRequest(
        function=function,
        trigger_value=Datum(json.dumps(event), "json"),
        binding_data=binding_data,
        reason=f"EventGrid trigger fired at {now.isoformat()}",
        details={"EventId": event.get("id"), "EventType": event.get("eventType") or event.get("type")},
    )


async def invoke_each(invoker: FunctionInvoker, function: FunctionSpec, events: list[dict[str, Any]],
                      now: datetime) -> tuple[bool, str]:
    """Invoke once per event, all in parallel; fail if any fails (the first failure's message)."""
    results = await asyncio.gather(*(invoker.invoke(trigger_request(function, e, now)) for e in events))
    for result in results:
        if not result.succeeded:
            return False, result.error_message or "function failed"
    return True, ""


# Another trigger fed by Event Grid (the blob trigger's Event Grid source): takes the batch as its
# webhook would and says whether it accepted it (and why not).
TriggerDelivery = Callable[[FunctionSpec, list[dict[str, Any]]], Awaitable[tuple[bool, str]]]


class FunctionSender:
    def __init__(self, invoker: FunctionInvoker, functions: FunctionLookup, clock: Clock) -> None:
        self.invoker = invoker
        self.functions = functions
        self.clock = clock
        self.deliveries: dict[str, TriggerDelivery] = {}  # by trigger type, registered by the trigger
        self._running: set[asyncio.Task[Outcome]] = set()

    async def send(self, sub: SubscriptionConfig, events: list[dict[str, Any]], schema: str,
                   delivery_count: int) -> Outcome:
        name = sub.destination.function_name or ""
        function = self.functions(name)
        if function is None:
            return outcome_for_status(404, f"cannot find function: '{name}'")
        deliver = self.deliveries.get(function.trigger_type)
        if deliver is None and function.trigger_type != "eventGridTrigger":
            # e.g. a blob trigger whose listener has not started (yet): retried like a 404
            return outcome_for_status(404, f"function '{name}' does not take Event Grid events now")

        async def run() -> Outcome:
            if deliver is not None:
                ok, message = await deliver(function, events)
            else:
                ok, message = await invoke_each(self.invoker, function, events, self.clock.now())
            return Outcome(True, 202, "Succeeded") if ok else outcome_for_status(500, message)

        task = asyncio.ensure_future(run())  # outlives the delivery when it times out
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        return await with_timeout(self.clock, task)

    async def drain(self) -> None:
        """Until the invocations of every delivery, timed out ones included, are over."""
        await until_empty(self._running)


# --- webhooks ------------------------------------------------------------------------------------


def endpoint_hash(url: str) -> str:
    return hashlib.sha256(url.encode()).hexdigest()


class WebhookSender:
    """POSTs with the ``aeg-*`` headers after a one-time validation handshake per endpoint.
    The HTTP client (and httpx) is loaded by the first webhook: a host without one never waits
    for it at start."""

    def __init__(self, store: EventGridStore, clock: Clock, client: httpx.AsyncClient | None = None) -> None:
        self.store = store
        self.clock = clock
        self._client = client
        self._locks: dict[str, asyncio.Lock] = {}

    @property
    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            import httpx

            self._client = httpx.AsyncClient(timeout=httpx.Timeout(RESPONSE_TIMEOUT + 5))
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()

    async def send(self, sub: SubscriptionConfig, events: list[dict[str, Any]], schema: str,
                   delivery_count: int) -> Outcome:
        url = sub.destination.endpoint_url or ""
        digest = endpoint_hash(url)
        async with self._locks.setdefault(sub.name, asyncio.Lock()):  # one handshake per endpoint
            if not await self.store.is_validated(sub.name, digest):
                problem = await self.validate(sub, schema)
                if problem is not None:
                    return problem
                await self.store.set_validated(sub.name, digest, self.clock.now().timestamp())
        headers = notification_headers(sub.name, events, schema, delivery_count)
        body = events[0] if schema == SCHEMA_CLOUDEVENTS and len(events) == 1 else events
        return await with_timeout(self.clock, self._post(url, body, headers))

    async def validate(self, sub: SubscriptionConfig, schema: str) -> Outcome | None:
        """The handshake; None when the endpoint proved it wants the events."""
        url = sub.destination.endpoint_url or ""
        if schema == SCHEMA_CLOUDEVENTS:
            return await with_timeout(self.clock, self._options_handshake(url))
        code = str(uuid.uuid4())
        event = {
            "id": str(uuid.uuid4()),
            "topic": sub.topic,
            "subject": "",
            "data": {"validationCode": code, "validationUrl": None},
            "eventType": VALIDATION_EVENT_TYPE,
            "eventTime": self.clock.now().isoformat(),
            "metadataVersion": "1",
            "dataVersion": "2",
        }
        headers = {"aeg-event-type": "SubscriptionValidation", "aeg-subscription-name": sub.name.upper(),
                   "content-type": "application/json; charset=utf-8"}

        async def handshake() -> Outcome:
            import httpx

            try:
                response = await self.client.post(url, content=json.dumps([event]), headers=headers)
            except httpx.HTTPError as exc:
                return Outcome(False, None, "GenericError", f"validation request failed: {type(exc).__name__}")
            if response.status_code != 200:
                return Outcome(False, response.status_code, "ValidationFailed",
                               f"validation answered {response.status_code}; expected 200")
            try:
                answer = response.json().get("validationResponse")
            except (ValueError, AttributeError):
                answer = None
            if answer != code:
                return Outcome(False, 200, "ValidationFailed", "the validation response did not echo validationCode")
            return Outcome(True, 200, "Validated")

        result = await with_timeout(self.clock, handshake())
        if not result.succeeded:
            log.warning("eventgrid.validation_failed subscription=%s outcome=%s", sub.name, result.message)
            return result
        return None

    async def _options_handshake(self, url: str) -> Outcome | None:
        import httpx

        try:
            response = await self.client.options(url, headers={"WebHook-Request-Origin": "eventgrid.azure.net"})
        except httpx.HTTPError as exc:
            return Outcome(False, None, "GenericError", f"validation request failed: {type(exc).__name__}")
        allowed = response.headers.get("WebHook-Allowed-Origin", "")
        if response.status_code in SUCCESS_CODES and allowed in ("*", "eventgrid.azure.net"):
            return None
        return Outcome(False, response.status_code, "ValidationFailed",
                       "the endpoint did not grant WebHook-Allowed-Origin")

    async def _post(self, url: str, body: Any, headers: dict[str, str]) -> Outcome:
        import httpx

        try:
            response = await self.client.post(url, content=json.dumps(body), headers=headers)
        except httpx.HTTPError as exc:
            return Outcome(False, None, "GenericError", f"request failed: {type(exc).__name__}")
        return outcome_for_status(response.status_code, f"HTTP {response.status_code}")


def notification_headers(name: str, events: list[dict[str, Any]], schema: str, delivery_count: int) -> dict[str, str]:
    cloud = schema == SCHEMA_CLOUDEVENTS
    if cloud:
        ctype = "application/cloudevents+json; charset=utf-8" if len(events) == 1 else \
            "application/cloudevents-batch+json; charset=utf-8"
    else:
        ctype = "application/json; charset=utf-8"
    headers = {
        "aeg-event-type": "Notification",
        "aeg-subscription-name": name.upper(),
        "aeg-delivery-count": str(delivery_count),
        "aeg-metadata-version": "1",
        "content-type": ctype,
    }
    if not cloud:
        headers["aeg-data-version"] = str(events[0].get("dataVersion", ""))
    return headers


# --- storage queues ------------------------------------------------------------------------------


QueueLookup = Callable[[str | None], QueueService]


class QueueSender:
    """Each event becomes one message: the event's JSON, base64-encoded as the service writes it.

    The queue must exist (a missing one is a 404 outcome, retried), as for Event Grid.
    """

    def __init__(self, queues: QueueLookup, faults: FaultInjector = NO_FAULTS) -> None:
        self.queues = queues
        self.faults = faults

    async def send(self, sub: SubscriptionConfig, events: list[dict[str, Any]], schema: str,
                   delivery_count: int) -> Outcome:
        dest = sub.destination
        try:
            service = self.queues(dest.connection)
            for event in events:
                text = base64.b64encode(json.dumps(event).encode()).decode()
                await send_message(service, dest.queue_name or "", text, time_to_live=dest.queue_message_ttl,
                                   create_queue=False, faults=self.faults)
        except Exception as exc:  # storage errors carry the status the service would answer
            status = int(getattr(exc, "status", 500))
            return outcome_for_status(status, f"{type(exc).__name__}: {getattr(exc, 'code', '')}")
        return Outcome(True, 201, "Succeeded")
