"""Queue-trigger behaviour through the real in-process host: embedded storage written in-process,
embedded storage written through funchost's own storage endpoints ("rest"), queues on PostgreSQL
(`--storage postgres`) and Azurite.

The unit tests in `tests/unit/queue/` drive the same rules with a ManualClock on embedded
storage only; Azurite keeps real time, so here both backends run on the `SystemClock` with short
settings (polling ≤ 200 ms, receive visibility 4 s) and every wait is a bounded poll.
Messages are written from outside the host: by the official `azure.storage.queue` client on
Azurite, as the equivalent message text through the embedded `QueueService` otherwise.
"""

from __future__ import annotations

import base64
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.acceptance.support import free_port
from tests.integration.support_queue_apps import APP, BASE_SETTINGS, QueueBackend, eventually, host_json

from funchost.clock import SystemClock
from funchost.settings.connections import DEVSTORE_ACCOUNT, DEVSTORE_KEY
from funchost.testing import HostHarness, write_app

BACKENDS = ["embedded", "rest", pytest.param("postgres", marks=pytest.mark.postgres),
            pytest.param("azurite", marks=pytest.mark.azurite)]


@pytest.fixture(params=BACKENDS)
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[QueueBackend]:
    connection = request.getfixturevalue("azurite").connection_string if request.param == "azurite" else None
    ports = None
    if request.param == "rest":
        ports = [free_port(), free_port(), free_port()]
        connection = (f"DefaultEndpointsProtocol=http;AccountName={DEVSTORE_ACCOUNT};AccountKey={DEVSTORE_KEY};"
                      f"BlobEndpoint=http://127.0.0.1:{ports[0]}/{DEVSTORE_ACCOUNT};"
                      f"QueueEndpoint=http://127.0.0.1:{ports[1]}/{DEVSTORE_ACCOUNT}")
    postgres = None
    if request.param == "postgres":
        postgres = {"FUNCHOST_POSTGRES": request.getfixturevalue("postgres_dsn"),
                    "FUNCHOST_POSTGRES_SCHEMA": request.getfixturevalue("postgres_schema")}
    queues = QueueBackend(str(request.param), tmp_path / "data", connection, ports, postgres)
    yield queues
    await queues.aclose()


Start = Callable[..., Awaitable[tuple[HostHarness, list[dict[str, Any]]]]]


@pytest.fixture
async def start_host(backend: QueueBackend, tmp_path: Path) -> AsyncIterator[Start]:
    """Start the app on `backend` with the real clock; returns the harness and the app's EVENTS."""
    started: list[HostHarness] = []

    async def start(
        *, create: tuple[str, ...] = ("work",), **queues: Any
    ) -> tuple[HostHarness, list[dict[str, Any]]]:
        for role in create:
            await backend.service.create_queue(backend.queue(role))
        app = write_app(tmp_path / "app", APP, host_json=host_json(**queues))
        settings = {
            **BASE_SETTINGS,
            **backend.settings,
            "WORK_QUEUE": backend.queue("work"),
            "RELAY_QUEUE": backend.queue("relay"),
        }
        harness = HostHarness(
            app,
            data_dir=backend.data_dir,
            storage=backend.storage_kind,
            clock=SystemClock(),
            settings=settings,
        )
        await harness.start()
        started.append(harness)
        return harness, sys.modules["function_app"].EVENTS

    yield start
    for harness in reversed(started):
        await harness.stop()


def runs(events: list[dict[str, Any]], body: str, fn: str = "worker") -> list[dict[str, Any]]:
    return [e for e in events if e["fn"] == fn and e["body"] == body]


def b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


async def test_success_deletes_the_message(backend: QueueBackend, start_host: Start) -> None:
    _, events = await start_host()
    work = backend.queue("work")
    await backend.send(work, "hello", base64_policy=True)

    await eventually(lambda: _async(runs(events, "hello")), "the function ran")
    await eventually(lambda: _async_eq(backend.count(work), 0), "the message was deleted")
    assert [e["dequeue_count"] for e in runs(events, "hello")] == [1]


async def test_failing_message_is_retried_then_moved_to_poison(
    backend: QueueBackend, start_host: Start
) -> None:
    work = backend.queue("work")
    _, events = await start_host(maxDequeueCount=3)
    assert not await backend.service.queue_exists(work + "-poison")
    await backend.send(work, "fail-always", base64_policy=True)

    poisoned = await eventually(lambda: backend.texts(work + "-poison"), "a message in the poison queue")
    await eventually(lambda: _async_eq(backend.count(work), 0), "the original was deleted")
    assert poisoned == [b64("fail-always")]  # same body, encoded like the trigger's queue
    attempts = runs(events, "fail-always")
    assert [e["dequeue_count"] for e in attempts] == [1, 2, 3]  # exactly maxDequeueCount executions
    assert len({e["id"] for e in attempts}) == 1
    [copy] = await backend.service.peek_messages(work + "-poison")
    assert copy.dequeue_count == 0 and copy.id != attempts[0]["id"]  # a brand-new message


async def test_visibility_timeout_delays_the_retry(backend: QueueBackend, start_host: Start) -> None:
    work = backend.queue("work")
    _, events = await start_host(maxDequeueCount=2, visibilityTimeout="00:00:01")
    await backend.send(work, "fail-slowly", base64_policy=True)

    await eventually(lambda: _async(len(runs(events, "fail-slowly")) == 2), "the retry", timeout=8)
    first, second = runs(events, "fail-slowly")
    gap = second["at"] - first["at"]
    # Released with a 1 s visibility after the failure; polling (≤ 200 ms) adds a little.
    assert 1.0 <= gap < 3.0, gap
    assert second["dequeue_count"] == 2


async def test_base64_encoding_decodes_messages_sent_with_the_base64_policy(
    backend: QueueBackend, start_host: Start
) -> None:
    work = backend.queue("work")
    _, events = await start_host(messageEncoding="base64")
    await backend.send(work, "héllo wörld ✓", base64_policy=True)

    await eventually(lambda: _async(runs(events, "héllo wörld ✓")), "the decoded body reached the function")
    await eventually(lambda: _async_eq(backend.count(work), 0), "the message was deleted")


async def test_none_encoding_passes_message_text_unchanged(backend: QueueBackend, start_host: Start) -> None:
    work = backend.queue("work")
    _, events = await start_host(messageEncoding="none")
    await backend.send(work, "plain ✓ text", base64_policy=False)
    await backend.send(work, "abc", base64_policy=True)  # stored as "YWJj": not decoded under `none`

    await eventually(lambda: _async(runs(events, "plain ✓ text") and runs(events, "YWJj")), "both bodies")
    assert runs(events, "abc") == []
    await eventually(lambda: _async_eq(backend.count(work), 0), "both messages were deleted")


async def test_undecodable_message_goes_to_poison_without_invoking(
    backend: QueueBackend, start_host: Start
) -> None:
    work = backend.queue("work")
    _, events = await start_host(messageEncoding="base64", maxDequeueCount=5)
    await backend.send(work, "not base64 !!", base64_policy=False)
    await backend.send(work, "after", base64_policy=True)

    poisoned = await eventually(lambda: backend.texts(work + "-poison"), "the undecodable message in poison")
    assert poisoned == ["not base64 !!"]  # the raw text, at the first dequeue
    await eventually(lambda: _async(runs(events, "after")), "the next message was processed")
    await eventually(lambda: _async_eq(backend.count(work), 0), "the original was deleted")
    assert [e["body"] for e in events] == ["after"]  # never invoked for the undecodable one


async def test_trigger_metadata_reaches_the_function(backend: QueueBackend, start_host: Start) -> None:
    work = backend.queue("work")
    _, events = await start_host()
    sent = await backend.send(work, "meta", base64_policy=True)

    [seen] = await eventually(lambda: _async(runs(events, "meta")), "the function ran")
    assert seen["id"] == sent.id
    assert seen["dequeue_count"] == 1
    assert seen["insertion_time"] == sent.insertion_time
    assert seen["expiration_time"] == sent.expiration_time
    assert sent.insertion_time is not None and sent.expiration_time is not None
    assert sent.expiration_time - sent.insertion_time == timedelta(days=7)  # the default TTL
    # The receipt of this receive, not the one Put Message returned.
    assert seen["pop_receipt"] and seen["pop_receipt"] != sent.pop_receipt
    # Received with funchost's receive visibility (4 s here): next visible ≈ receive time + 4 s.
    assert timedelta(seconds=2) <= seen["next_visible"] - sent.insertion_time <= timedelta(seconds=7)


async def test_output_binding_writes_messages_another_function_receives(
    backend: QueueBackend, start_host: Start
) -> None:
    work, relay = backend.queue("work"), backend.queue("relay")
    _, events = await start_host(create=("relay",))  # the output queue is created by the binding
    assert not await backend.service.queue_exists(work)
    await backend.send(relay, "ping", base64_policy=True)

    await eventually(lambda: _async(runs(events, "relayed:ping")), "the relayed message was received")
    assert [e["body"] for e in events if e["fn"] == "relay"] == ["ping"]
    assert await backend.service.queue_exists(work)
    await eventually(lambda: _async_eq(backend.count(work), 0), "the relayed message was deleted")
    assert await backend.count(relay) == 0


async def test_graceful_stop_finishes_the_in_flight_message(backend: QueueBackend, start_host: Start) -> None:
    work = backend.queue("work")
    host, events = await start_host()
    await backend.send(work, "slow-1", base64_policy=True)

    await eventually(lambda: _async(runs(events, "slow-1")), "the function started")
    assert runs(events, "slow-1", fn="worker-finished") == []
    await host.stop()

    assert len(runs(events, "slow-1", fn="worker-finished")) == 1  # stop waited for it
    assert await backend.count(work) == 0  # and completed it: deleted, not left invisible
    assert len(runs(events, "slow-1")) == 1


async def _async(value: Any) -> Any:
    return value


async def _async_eq(awaitable: Awaitable[Any], expected: Any) -> bool:
    return bool(await awaitable == expected)
