"""`triggers.queue.redrive`: poison messages go back to their queue, same text, none lost."""

from __future__ import annotations

from pathlib import Path

from funchost.clock import SystemClock
from funchost.settings.app_settings import AppSettings
from funchost.storage.host_storage import open_storage
from funchost.triggers.queue.redrive import poison_count, redrive


async def test_redrive_moves_every_message_or_a_limit(tmp_path: Path) -> None:
    storage = open_storage("embedded", tmp_path, AppSettings({}, environ={}), SystemClock())
    service = storage.queues()
    try:
        assert await poison_count(service, "jobs") is None
        assert await redrive(service, "jobs") == 0
        await service.create_queue("jobs-poison")
        for n in range(40):
            await service.put_message("jobs-poison", f"m{n}")
        assert await poison_count(service, "jobs") == 40
        assert await redrive(service, "jobs", limit=5) == 5
        assert await redrive(service, "jobs") == 35
        assert await poison_count(service, "jobs") == 0
        moved = sorted(m.content for m in await service.get_messages("jobs", max_messages=32)) + sorted(
            m.content for m in await service.get_messages("jobs", max_messages=32))
        assert sorted(moved) == sorted(f"m{n}" for n in range(40))
    finally:
        await storage.aclose()
