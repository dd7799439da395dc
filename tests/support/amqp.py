"""Funchost's AMQP endpoint on a free port, in a thread of its own (the SDKs' sync clients block).

    with serve_amqp(tmp_path) as served:
        client = ServiceBusClient.from_connection_string(served.connection_string)
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from funchost.amqp.server import AmqpEndpoint, AmqpSettings
from funchost.amqp.service import build_endpoint
from funchost.clock import SystemClock
from funchost.runtime.signals import Signals
from funchost.settings.app_settings import AppSettings
from funchost.storage.host_storage import HostStorage, open_storage


@dataclass
class ServedAmqp:
    endpoint: AmqpEndpoint
    storage: HostStorage
    loop: asyncio.AbstractEventLoop
    signals: Signals = field(default_factory=Signals)

    @property
    def port(self) -> int:
        return self.endpoint.port

    @property
    def connection_string(self) -> str:
        return self.endpoint.connection_string()

    def run(self, coroutine: Any, timeout: float = 60) -> Any:
        """Run a coroutine (e.g. a broker call) on the endpoint's loop and wait for it."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)


@contextmanager
def serve_amqp(root: Path, *, settings: dict[str, str] | None = None, max_connections: int = 1000,
               backend: str = "embedded") -> Iterator[ServedAmqp]:
    app_dir, data_dir = root / "app", root / "data"
    app_dir.mkdir(parents=True, exist_ok=True)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    app_settings = AppSettings(dict(settings or {}), environ={})
    signals = Signals()
    signals.bind_loop(loop)

    async def start() -> ServedAmqp:
        storage = open_storage(backend, data_dir, app_settings, SystemClock(), signals=signals)
        endpoint = build_endpoint(storage, app_dir, app_settings, signals, data_dir,
                                  AmqpSettings("127.0.0.1", 0, max_connections))
        await endpoint.start()
        return ServedAmqp(endpoint, storage, loop, signals)

    served = asyncio.run_coroutine_threadsafe(start(), loop).result(60)
    try:
        yield served
    finally:
        async def stop() -> None:
            await served.endpoint.stop()
            await served.storage.aclose()

        asyncio.run_coroutine_threadsafe(stop(), loop).result(60)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def served_settings(kind: str, request: pytest.FixtureRequest) -> dict[str, str]:
    """The settings of an endpoint over `kind` storage: for "postgres", the session's server and a
    fresh schema (the brokers' namespaces on PostgreSQL)."""
    if kind != "postgres":
        return {}
    return {"FUNCHOST_POSTGRES": request.getfixturevalue("postgres_dsn"),
            "FUNCHOST_POSTGRES_SCHEMA": request.getfixturevalue("postgres_schema")}


# The storage an endpoint's brokers run on in the client suites.
SERVED_BACKENDS = ["embedded", pytest.param("postgres", marks=pytest.mark.postgres)]
