"""Who holds a port: the data folder's record, the identity answer, and the takeover of ports
served elsewhere once they are free (server.StorageEndpoints' watch, on a ManualClock)."""

from __future__ import annotations

import asyncio
import socket
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from funchost.clock import ManualClock
from funchost.settings.app_settings import AppSettings
from funchost.storage.host_storage import HostStorage, open_storage
from funchost.storage_endpoints import holders
from funchost.storage_endpoints.accounts import Accounts
from funchost.storage_endpoints.server import EndpointSettings, PortTaken, StorageEndpoints, data_identity
from funchost.storage_endpoints.service import HostAccounts

ZERO = {"blob": 0, "queue": 0, "table": 0}


@asynccontextmanager
async def embedded(data: Path) -> AsyncIterator[HostStorage]:
    storage = open_storage("embedded", data, AppSettings({}, environ={}), ManualClock())
    try:
        yield storage
    finally:
        await storage.aclose()


def endpoints_of(storage: HostStorage, data: Path, clock: ManualClock, ports: dict[str, int]) -> StorageEndpoints:
    root = data / "storage"
    return StorageEndpoints(HostAccounts(storage), Accounts(), clock, data_identity(storage.secrets()),
                            EndpointSettings(ports=ports),
                            record_dir=root)


async def identity(origin: str) -> httpx.Response:
    async with httpx.AsyncClient(timeout=5) as client:  # the endpoints serve in this loop
        return await client.get(f"{origin}/_funchost/identity")


async def until(condition: Callable[[], bool]) -> None:
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")


@pytest.fixture
def silent_port() -> Iterator[socket.socket]:
    """A listening socket that never accepts: connections queue, nothing answers."""
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen()
    yield blocker
    blocker.close()


@pytest.fixture
def other_process() -> Iterator[subprocess.Popen[bytes]]:
    child = subprocess.Popen(["sleep", "60"])
    yield child
    child.kill()
    child.wait()


def test_the_record_names_a_live_process_only(tmp_path: Path, other_process: subprocess.Popen[bytes]) -> None:
    root = tmp_path / "storage"
    holders.write_record(root, "blob", 10000)
    assert holders.recorded_server(root, "blob", 10000) is None  # this process itself
    record = root / "endpoints" / "blob.json"
    started = holders.process_start(other_process.pid)
    record.write_text(f'{{"pid": {other_process.pid}, "port": 10000, "started": "{started}"}}')
    assert holders.recorded_server(root, "blob", 10000) == other_process.pid
    assert holders.recorded_server(root, "blob", 10001) is None  # another port
    record.write_text(f'{{"pid": {other_process.pid}, "port": 10000, "started": "1"}}')
    assert holders.recorded_server(root, "blob", 10000) is None  # a recycled pid: another process
    other_process.kill()
    other_process.wait()
    record.write_text(f'{{"pid": {other_process.pid}, "port": 10000, "started": "{started}"}}')
    assert holders.recorded_server(root, "blob", 10000) is None  # gone


async def test_the_other_hosts_of_the_folder_take_the_ports_over(tmp_path: Path) -> None:
    data, clock = tmp_path / "data", ManualClock()
    async with embedded(data) as storage:
        first = endpoints_of(storage, data, clock, ZERO)
        await first.start()
        second = endpoints_of(storage, data, clock, dict(first.ports))
        await second.start()
        assert second.shared == {"blob", "queue", "table"}
        await first.stop()  # its records go with it
        assert not (data / "storage" / "endpoints" / "blob.json").exists()
        await clock.advance(1.0)
        await until(lambda: not second.shared)
        assert second.ports == first.ports and not second.unknown
        for service in ("blob", "queue", "table"):
            assert holders.recorded_server(data / "storage", service, second.ports[service]) is None  # ours
            answer = (await identity(second.origin(service))).json()
            assert answer["data"] == second.identity
        await second.stop()


async def test_a_frozen_holder_recorded_for_the_folder_is_shared_without_waiting_for_an_answer(
        tmp_path: Path, silent_port: socket.socket, other_process: subprocess.Popen[bytes]) -> None:
    data, clock = tmp_path / "data", ManualClock()
    port = silent_port.getsockname()[1]
    started = holders.process_start(other_process.pid)
    (data / "storage" / "endpoints").mkdir(parents=True)
    (data / "storage" / "endpoints" / "blob.json").write_text(
        f'{{"pid": {other_process.pid}, "port": {port}, "started": "{started}"}}')
    async with embedded(data) as storage:
        endpoints = endpoints_of(storage, data, clock, {**ZERO, "blob": port})
        await asyncio.wait_for(endpoints.start(), 1.0)  # no identity request: the record says who
        assert endpoints.shared == {"blob"}
        other_process.kill()  # the holder dies: its port is free
        silent_port.close()
        await clock.advance(1.0)
        await until(lambda: not endpoints.shared)
        assert (await identity(endpoints.origin("blob"))).json()["service"] == "blob"
        await endpoints.stop()


async def test_a_silent_unrecorded_holder_is_asked_again_and_its_port_taken_when_free(
        tmp_path: Path, silent_port: socket.socket) -> None:
    data, clock = tmp_path / "data", ManualClock()
    port = silent_port.getsockname()[1]
    async with embedded(data) as storage:
        endpoints = endpoints_of(storage, data, clock, {**ZERO, "queue": port})
        await endpoints.start()  # the start goes on: the functions run meanwhile
        assert endpoints.unknown == {"queue"} and endpoints.ports["queue"] == port
        assert any("not identified yet" in line for line in endpoints.describe())
        silent_port.close()
        await clock.advance(1.0)
        await until(lambda: not endpoints.unknown)
        assert not endpoints.shared
        assert (await identity(endpoints.origin("queue"))).status_code == 200
        await endpoints.stop()


async def test_a_program_that_answers_is_a_clear_error(tmp_path: Path) -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    data = tmp_path / "data"
    try:
        async with embedded(data) as storage:
            endpoints = endpoints_of(storage, data, ManualClock(), {**ZERO, "table": port})
            with pytest.raises(PortTaken) as info:
                await endpoints.start()
    finally:
        server.close()
        await server.wait_closed()
    message = str(info.value)
    assert f"127.0.0.1:{port}" in message and "another program" in message
    assert "--storage-ports" in message and "--no-storage-endpoints" in message
