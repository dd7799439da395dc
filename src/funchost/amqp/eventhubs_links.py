"""Event Hubs nodes (placeholder)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from funchost.amqp.links import Link
from funchost.runtime.signals import Signals
from funchost.settings.app_settings import AppSettings
from funchost.storage.host_storage import HostStorage


class EventHubsNodes:
    def __init__(self, storage: HostStorage, app_dir: Path, settings: AppSettings, signals: Signals) -> None:
        self.storage = storage

    async def claims(self, link: Link) -> bool:
        return False

    async def resolve(self, link: Link, authorized: set[str]) -> Any:
        raise NotImplementedError
