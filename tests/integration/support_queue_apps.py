"""The app and the storage access used by `test_queue_trigger_backends.py`.

`QueueBackend` is one storage backend as a test sees it from outside the host: the host's
`--storage` kind and connection settings, an independent `QueueService` to look at queues (its
own client, so it still works after the host has stopped), and a producer that writes messages
the way another application would: through the official `azure.storage.queue` client on
Azurite (with or without `TextBase64EncodePolicy`), and as the equivalent message text through
the embedded `QueueService` otherwise. The "rest" backend is embedded storage whose producer is
the official client talking to the host's own storage endpoints (`rest_ports`).
"""

from __future__ import annotations

import asyncio
import base64
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from funchost.clock import SystemClock
from funchost.errors import QueueNotFound
from funchost.settings.app_settings import AppSettings
from funchost.storage.host_storage import HostStorage, open_storage
from funchost.storage.queues import QueueService

# Queue names come from app settings (%WORK_QUEUE% ...), so every test uses its own queues.
APP = """
import os
import time

import azure.functions as func

app = func.FunctionApp()
EVENTS = []


@app.queue_trigger(arg_name="msg", queue_name="%WORK_QUEUE%", connection="AzureWebJobsStorage")
def worker(msg: func.QueueMessage) -> None:
    body = msg.get_body().decode("utf-8")
    EVENTS.append({
        "fn": "worker", "body": body, "at": time.monotonic(),
        "dequeue_count": msg.dequeue_count, "id": msg.id, "pop_receipt": msg.pop_receipt,
        "insertion_time": msg.insertion_time, "expiration_time": msg.expiration_time,
        "next_visible": msg.time_next_visible,
    })
    if body.startswith("fail"):
        raise RuntimeError("failing on purpose")
    if body.startswith("slow"):
        time.sleep(float(os.environ["SLOW_SECONDS"]))
        EVENTS.append({"fn": "worker-finished", "body": body, "at": time.monotonic()})


@app.queue_trigger(arg_name="text", queue_name="%RELAY_QUEUE%", connection="AzureWebJobsStorage")
@app.queue_output(arg_name="out", queue_name="%WORK_QUEUE%", connection="AzureWebJobsStorage")
def relay(text: str, out: func.Out[str]) -> None:
    EVENTS.append({"fn": "relay", "body": text, "at": time.monotonic()})
    out.set("relayed:" + text)
"""

# Real-time settings: fast polling, a short receive visibility (not an Azure setting).
BASE_SETTINGS = {
    "FUNCHOST_QUEUE_RECEIVE_VISIBILITY": "4",
    "SLOW_SECONDS": "1.0",
}


def host_json(**queues: Any) -> dict[str, Any]:
    section = {"maxPollingInterval": "00:00:00.2", "batchSize": 4, "newBatchThreshold": 2}
    section.update(queues)
    return {"version": "2.0", "extensions": {"queues": section}}


@dataclass(frozen=True)
class Sent:
    """What the producer learnt from the service when it put a message."""

    id: str
    insertion_time: datetime | None
    expiration_time: datetime | None
    pop_receipt: str | None


T = TypeVar("T")


async def eventually(probe: Callable[[], Awaitable[T]], what: str, timeout: float = 6.0) -> T:
    """Poll `probe` every 50 ms until it returns something truthy (bounded, real time)."""
    deadline = time.monotonic() + timeout
    while True:
        value = await probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what} (last value {value!r})")
        await asyncio.sleep(0.05)


class QueueBackend:
    def __init__(self, name: str, data_dir: Path, connection_string: str | None,
                 rest_ports: list[int] | None = None, postgres: dict[str, str] | None = None) -> None:
        self.name = name  # "embedded" | "rest" | "azurite" | "postgres": what known_deviation() is given
        self.data_dir = data_dir
        self.connection_string = connection_string
        self.storage_kind = "azure" if connection_string and rest_ports is None else "embedded"
        if postgres is not None:  # FUNCHOST_POSTGRES and FUNCHOST_POSTGRES_SCHEMA
            self.storage_kind = "postgres"
        self.prefix = "qt" + uuid.uuid4().hex[:10]
        storage = connection_string or "UseDevelopmentStorage=true"
        self.settings = {"AzureWebJobsStorage": storage, **(postgres or {})}
        if rest_ports is not None:
            self.settings["FUNCHOST_STORAGE_ENDPOINTS"] = ",".join(map(str, rest_ports))
        app_settings = AppSettings(self.settings, environ={})
        self.storage: HostStorage = open_storage(self.storage_kind, data_dir, app_settings, SystemClock())
        self._sdk_clients: list[Any] = []

    def queue(self, role: str) -> str:
        return f"{self.prefix}-{role}"

    @property
    def service(self) -> QueueService:
        return self.storage.queues()

    # -- producing -------------------------------------------------------------------------------

    async def send(self, queue: str, text: str, *, base64_policy: bool) -> Sent:
        """Put `text` as another application would: with the SDK's Base64 encode policy or as is."""
        if self.connection_string is None:
            wire = base64.b64encode(text.encode("utf-8")).decode("ascii") if base64_policy else text
            message = await self.service.put_message(queue, wire)
            return Sent(message.id, message.insertion_time, message.expiration_time, message.pop_receipt)
        from azure.storage.queue import TextBase64EncodePolicy
        from azure.storage.queue.aio import QueueClient

        kwargs: dict[str, Any] = {"message_encode_policy": TextBase64EncodePolicy()} if base64_policy else {}
        client = QueueClient.from_connection_string(self.connection_string, queue, **kwargs)
        self._sdk_clients.append(client)
        sdk = await client.send_message(text)
        return Sent(sdk.id, sdk.inserted_on, sdk.expires_on, sdk.pop_receipt)

    # -- looking ---------------------------------------------------------------------------------

    async def count(self, queue: str) -> int:
        try:
            return (await self.service.get_queue_properties(queue)).approximate_message_count
        except QueueNotFound:
            return 0

    async def texts(self, queue: str) -> list[str]:
        """Message texts as stored (visible messages only)."""
        try:
            return [m.content for m in await self.service.peek_messages(queue, max_messages=32)]
        except QueueNotFound:
            return []

    async def aclose(self) -> None:
        for client in self._sdk_clients:
            await client.close()
        if self.storage_kind == "azure":
            for name in await self.service.list_queues(prefix=self.prefix):
                await self.service.delete_queue(name)
        await self.storage.aclose()
