"""Run in separate processes: what a host opens on its first start on a data folder, in rounds
started together (one fresh folder per round), to find races between hosts starting at once."""

from __future__ import annotations

import asyncio
import traceback
from pathlib import Path
from typing import Any

FUNCTIONS = ("submit_import", "get_import", "ledger_post")


def open_everything(folder: Path) -> dict[str, Any]:
    """Keys, embedded queues and blobs, the Event Grid store, and a jobs DB: the files a host
    (and the reference pipeline) create at their first start. Returns the keys it ended with."""
    from funchost.clock import SystemClock
    from funchost.reliability import open_sqlite
    from funchost.settings.app_settings import AppSettings
    from funchost.storage.host_storage import open_storage
    from funchost.triggers.http.keys import KeyStore

    keys = KeyStore.load_or_create(folder, {}, FUNCTIONS)

    async def stores() -> None:
        storage = open_storage("embedded", folder, AppSettings({}, environ={}), SystemClock())
        try:
            await storage.queues().create_queue("work")
            await storage.blobs().create_container("box", exist_ok=True)
            await storage.tables().list_tables()
            await storage.eventgrid_store().get_cursor("start")
        finally:
            await storage.aclose()

    asyncio.run(stores())
    open_sqlite(folder / "imports.db").close()
    return {"master": keys.master_key, "host": keys.host_function_keys, "functions": keys.function_keys}


def start_in_rounds(root: str, rounds: int, barrier: Any) -> list[dict[str, Any]]:
    """Round r: wait for every process at the barrier, then open `root/round-r` at once."""
    results: list[dict[str, Any]] = []
    for number in range(rounds):
        barrier.wait(timeout=60)
        try:
            results.append(open_everything(Path(root) / f"round-{number}"))
        except Exception as exc:  # noqa: BLE001 - reported to the test, which fails on it
            results.append({"error": "".join(traceback.format_exception_only(type(exc), exc)).strip()})
    return results
