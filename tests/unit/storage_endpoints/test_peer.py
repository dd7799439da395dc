"""A host of another data folder finds the endpoints served and uses that host's accounts."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

from tests.support.endpoints import serve_endpoints

from funchost.clock import ManualClock
from funchost.settings.app_settings import AppSettings
from funchost.settings.connections import DEVSTORE_KEY
from funchost.storage_endpoints.peer import find_peer, open_app_storage
from funchost.storage_endpoints.peer_storage import PeerStorage

KEY = "a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5"


def settings(ports: dict[str, int], **values: str) -> AppSettings:
    setting = ",".join(str(ports[s]) for s in ("blob", "queue", "table"))
    return AppSettings({"FUNCHOST_STORAGE_ENDPOINTS": setting, **values}, environ={})


async def test_another_folders_endpoints_are_used_with_each_connections_account(tmp_path: Path) -> None:
    async with serve_endpoints(tmp_path / "serving") as served:
        ports = dict(served.endpoints.ports)
        other = settings(ports, AzureWebJobsStorage="UseDevelopmentStorage=true",
                         Named=f"DefaultEndpointsProtocol=https;AccountName=named;AccountKey={KEY}")
        peer = await asyncio.to_thread(find_peer, "embedded", tmp_path / "other", other)
        assert peer is not None and peer.data == served.endpoints.identity and peer.ports == ports
        assert await asyncio.to_thread(find_peer, "azure", tmp_path / "other", other) is None
        assert await asyncio.to_thread(find_peer, "embedded", tmp_path / "serving", other) is None  # same folder

        storage = await asyncio.to_thread(open_app_storage, "embedded", tmp_path / "other", other, ManualClock())
        try:
            backend = storage.backend
            assert isinstance(backend, PeerStorage) and storage.kind == "azure"
            default = backend.connection(None).connection_string or ""
            assert f"QueueEndpoint=http://127.0.0.1:{ports['queue']}/devstoreaccount1;" in default
            assert f"AccountKey={DEVSTORE_KEY};" in default
            named = backend.connection("Named", "blob").connection_string or ""
            assert f"BlobEndpoint=http://127.0.0.1:{ports['blob']}/named;" in named and f"AccountKey={KEY};" in named
            # A message put through this host's storage is in the serving host's queue.
            queues = storage.queues()
            await queues.create_queue("orders")
            await queues.put_message("orders", "hello")
            [message] = await served.queues().get_messages("orders", max_messages=1)
            assert message.content == "hello"
        finally:
            await storage.aclose()


def test_nobody_serving_keeps_the_embedded_storage(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    ports = {"blob": free, "queue": free, "table": free}
    assert find_peer("embedded", tmp_path, settings(ports)) is None
    assert find_peer("embedded", tmp_path, AppSettings({}, environ={})) is None  # endpoints off
