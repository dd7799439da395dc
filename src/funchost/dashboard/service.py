"""The dashboard of a running host: a host-wide service (`registry.HOST_SERVICE_MODULES`).

At start it opens the invocation history (the data folder's store), starts the recorder's writer
and its log capture, and mounts the dashboard's app at ``/_funchost`` on the host's port. With
``FUNCHOST_DASHBOARD=false`` none of this happens (and no recorder observes the executor). Sections find it with ``view.dashboard``; others with
``runtime.services.find(DashboardService)``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import Any

from funchost.cli import supervisor
from funchost.dashboard.app import DashboardApp
from funchost.dashboard.layout import NavItem
from funchost.dashboard.notifier import Notifier
from funchost.dashboard.options import DashboardOptions, from_settings
from funchost.dashboard.page import Page
from funchost.dashboard.pages import load_pages
from funchost.dashboard.recorder import HistoryRecorder, LogCapture
from funchost.logs import CategoryFilter
from funchost.runtime.contracts import Runtime
from funchost.runtime.services import HttpMount
from funchost.storage.invocations import InvocationHistoryStore

PREFIX = "/_funchost"
log = logging.getLogger("funchost.dashboard")


class DashboardService:
    def __init__(self, runtime: Runtime, options: DashboardOptions, history: InvocationHistoryStore,
                 recorder: HistoryRecorder | None) -> None:
        self.runtime = runtime
        self.options = options
        self.history = history
        self.recorder = recorder
        self.prefix = PREFIX
        self.pages: list[Page] = load_pages()
        self.app = DashboardApp(self)
        self._mount: HttpMount | None = None
        self._capture: LogCapture | None = None
        self._stopping = False
        self._background: set[asyncio.Task[Any]] = set()
        # One of several worker processes (FUNCTIONS_WORKER_PROCESS_COUNT): they share the history,
        # but this one's notifier hears only its own invocations, so every section is polled.
        self.shared_history = supervisor.is_worker()

    @property
    def notifier(self) -> Notifier | None:
        return self.recorder.notifier if self.recorder is not None else None

    def url(self) -> str:
        return f"{self.runtime.services.base_url.rstrip('/')}{self.prefix}/"

    def navigation(self) -> list[NavItem]:
        return [NavItem(p.slug, p.title) for p in self.pages if p.applies(self.runtime)]

    def polled(self, page: Page | None) -> bool:
        """Whether the live view of `page` refreshes on a timer as well as on this host's writes."""
        return page is None or page.polled or self.shared_history

    def stopping(self) -> bool:
        """The host is stopping, or has stopped serving HTTP: live streams end."""
        if self._stopping:
            return True
        from funchost.triggers.http.server import HttpServer

        server = self.runtime.services.find(HttpServer)
        return server is not None and server.stopping

    def run_in_background(self, work: Awaitable[Any]) -> None:
        """An invocation an action started (as the admin API's 202): finished before the host stops."""
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        if self.recorder is not None:
            await self.recorder.start(self.history)
            self._capture = LogCapture(self.recorder, CategoryFilter(self.runtime.options.log_levels))
            logging.getLogger().addHandler(self._capture)
        self._mount = self.runtime.services.mount(self.prefix, self.app)

    async def stop(self) -> None:
        self._stopping = True
        if self._mount is not None:
            self.runtime.services.unmount(self._mount)
        if self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)
        if self._capture is not None:
            logging.getLogger().removeHandler(self._capture)
        if self.recorder is not None:
            await self.recorder.stop()
        self.runtime.services.withdraw(self)


async def start(runtime: Runtime) -> DashboardService | None:
    options = from_settings(runtime.settings)
    if not options.enabled:
        return None
    service = DashboardService(runtime, options, runtime.storage.invocation_history(),
                               runtime.services.find(HistoryRecorder))
    return await runtime.services.start_service(service)
