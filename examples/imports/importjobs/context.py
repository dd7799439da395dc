"""`Pipeline`: the app's long-lived objects (jobs store, storage adapters, dispatcher, ledger
client), created once per host process on the first function call.

Where the jobs database lives: `IMPORTS_DB` (a file path, or a `postgresql://` DSN for several
hosts), else `imports.db` in the funchost data folder, else `<app dir>/.funchost/imports.db`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from funchost.reliability import (
    BlobPolicy,
    CommitSignal,
    DispatcherOptions,
    JobStore,
    Metrics,
    OutboxDispatcher,
    OutboxRow,
    Quarantine,
    open_store,
)
from importjobs.identity import VerifiedTokens
from importjobs.ledger import LedgerBook, LedgerClient
from importjobs.settings import PipelineSettings
from importjobs.storage import BlobStore, QueueSender, _runtime, fault, open_storage

T = TypeVar("T")
APP_DIR = Path(__file__).resolve().parents[1]


class Pipeline:
    def __init__(self, settings: PipelineSettings, loop: asyncio.AbstractEventLoop) -> None:
        self.settings = settings
        self.runtime = _runtime()
        self.now: Callable[[], datetime] = self.runtime.clock.now if self.runtime else (lambda: datetime.now(UTC))
        self.data_dir = Path(self.runtime.data_dir) if self.runtime else APP_DIR / ".funchost"
        self.metrics = Metrics()
        self.signal = CommitSignal()
        self.store: JobStore = self._open_store()
        self.queues: QueueSender
        self.blobs: BlobStore
        self.queues, self.blobs = open_storage(settings.storage_connection)
        self.account = settings.storage_account or self.blobs.account
        self.policy = BlobPolicy.of(settings.allowed_containers, account=self.account)
        self.tokens = VerifiedTokens()  # bearer tokens verified before (exp / nbf re-checked per use)
        self.dispatcher = OutboxDispatcher(
            self.store, self._send, prepare=self._prepare, metrics=self.metrics,
            options=DispatcherOptions(interval_seconds=settings.dispatch_interval))
        # An intake commit in this process dispatches at once (the toolkit's own wake-up path;
        # under funchost it counts as host activity); the timer is the safety net.
        self._unsubscribe = self.dispatcher.attach(self.signal, loop)
        self.quarantine = Quarantine(self.store, self._quarantine_writer, container=settings.quarantine_container,
                                     function_version=settings.function_version, metrics=self.metrics)
        self.ledger = LedgerClient(self._ledger_url(), settings.ledger_timeout, self._ledger_transport())
        self._book: LedgerBook | None = None

    def _open_store(self) -> JobStore:
        target = self.settings.database or str(self.data_dir / "imports.db")
        if not str(target).startswith(("postgres://", "postgresql://")):
            Path(target).parent.mkdir(parents=True, exist_ok=True)
            return open_store(target, now=self.now, signal=self.signal)
        import os

        schema = os.environ.get("IMPORTS_DB_SCHEMA") or None
        return open_store(target, now=self.now, signal=self.signal, schema=schema)

    # -- outbox dispatch ---------------------------------------------------------------------------

    async def _prepare(self, row: OutboxRow) -> None:
        """Work before the send call starts: a failure here means "certainly not sent"."""
        await fault("pipeline.dispatch.prepare", outbox_id=row.outbox_id, job_id=row.job_id)

    async def _send(self, queue_name: str, payload: str) -> str | None:
        return await self.queues.send(queue_name, payload)

    # -- quarantine --------------------------------------------------------------------------------

    async def _quarantine_writer(self, container: str, name: str, data: bytes, metadata: dict[str, str]) -> None:
        await self.blobs.write(container, name, data, content_type="application/octet-stream", metadata=metadata)

    # -- ledger ------------------------------------------------------------------------------------

    def _ledger_url(self) -> str:
        if self.settings.ledger_url:
            return self.settings.ledger_url
        base = self.runtime.services.base_url if self.runtime else "http://localhost:7071"
        return f"{base}/api/ledger/entries"

    def _ledger_transport(self) -> Any:
        """Without LEDGER_URL under a host that serves no socket (the test harness), call this
        app's own ledger endpoint in-process."""
        runtime = self.runtime
        if self.settings.ledger_url or runtime is None:
            return None
        from funchost.triggers.http.server import HttpServer, create_asgi_app

        if runtime.services.find(HttpServer) is not None:
            return None
        import httpx

        from funchost.triggers.http.keys import KeyStore

        keys = runtime.services.keys
        if keys is None:
            keys = runtime.services.keys = KeyStore.load_or_create(runtime.data_dir, runtime.settings,
                                                                   list(runtime.functions))
        return httpx.ASGITransport(app=create_asgi_app(runtime, keys))

    @property
    def book(self) -> LedgerBook:
        if self._book is None:
            import os

            path = os.environ.get("LEDGER_DB") or str(self.data_dir / "ledger.db")
            self._book = LedgerBook(Path(path), self.now)
        return self._book

    # -- helpers -----------------------------------------------------------------------------------

    async def db(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a (blocking) store call off the event loop."""
        return await asyncio.to_thread(fn, *args, **kwargs)

    async def aclose(self) -> None:
        self._unsubscribe()
        await self.dispatcher.idle()
        await self.ledger.aclose()
        if self._book is not None:
            self._book.close()
        self.store.close()


class PipelineHolder:
    """One `Pipeline` per process, created on first use from inside a function."""

    def __init__(self) -> None:
        self._pipeline: Pipeline | None = None
        self._lock = threading.Lock()

    def get(self) -> Pipeline:
        if self._pipeline is None:
            loop = asyncio.get_running_loop()
            with self._lock:
                if self._pipeline is None:
                    self._pipeline = Pipeline(PipelineSettings.from_environment(), loop)
        return self._pipeline

    @property
    def created(self) -> Pipeline | None:
        return self._pipeline

    async def aclose(self) -> None:
        if self._pipeline is not None:
            pipeline, self._pipeline = self._pipeline, None
            await pipeline.aclose()
