"""`Pipeline`: the app's long-lived objects (jobs store, storage adapters, dispatcher, ledger
client), created once per host process on the first function call.

Where the jobs database lives: `IMPORTS_DB` (a file path, or a `postgresql://` DSN for several
hosts); else, when the host runs with `--storage postgres`, the host's PostgreSQL server in the
schema `<funchost schema>_imports` (`IMPORTS_DB_SCHEMA` names another), so hosts on several
machines share their jobs as they share queues and blobs; else `imports.db` in the funchost data
folder, else `<app dir>/.funchost/imports.db`. The ledger stand-in's book lives beside the jobs:
in the same PostgreSQL schema when the jobs are there, else `ledger.db` in the data folder
(`LEDGER_DB` names another file).
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
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
    open_postgres,
    open_store,
)
from funchost.reliability.store.postgres import PostgresDatabase
from importjobs.identity import VerifiedTokens
from importjobs.ledger import LedgerClient, LedgerCredentials
from importjobs.ledgerbook import LedgerBook
from importjobs.ledgerbook_pg import PostgresLedgerBook
from importjobs.settings import PipelineSettings
from importjobs.storage import BlobStore, QueueSender, _runtime, fault, open_storage

T = TypeVar("T")
INTAKE_THREADS = 4  # HTTP store calls at once; each waits at most intake_wait_seconds for a lock
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
        self._intake_threads = ThreadPoolExecutor(max_workers=INTAKE_THREADS, thread_name_prefix="importjobs-intake")
        self.queues: QueueSender
        self.blobs: BlobStore
        self.queues, self.blobs = open_storage(settings.storage_connection)
        self.account = settings.storage_account or self.blobs.account
        self.policy = BlobPolicy.of(settings.allowed_containers, account=self.account)
        self.tokens = VerifiedTokens()  # bearer tokens verified before (exp / nbf re-checked per use)
        self.dispatcher = OutboxDispatcher(
            self.store, self._send, prepare=self._prepare, metrics=self.metrics,
            options=DispatcherOptions(interval_seconds=settings.dispatch_interval,
                                      lease_seconds=settings.dispatch_lease_seconds))
        # An intake commit in this process dispatches at once (the toolkit's own wake-up path;
        # under funchost it counts as host activity); the timer is the safety net.
        self._unsubscribe = self.dispatcher.attach(self.signal, loop)
        self.quarantine = Quarantine(self.store, self._quarantine_writer, container=settings.quarantine_container,
                                     function_version=settings.function_version, metrics=self.metrics)
        credentials = LedgerCredentials(self._ledger_function_key, settings.jwt_secret,
                                        audience=settings.jwt_audience, issuer=settings.jwt_issuer)
        self.ledger = LedgerClient(self._ledger_url(), settings.ledger_timeout, self._ledger_transport(),
                                   credentials)
        self._book: LedgerBook | PostgresLedgerBook | None = None

    def _open_store(self) -> JobStore:
        schema = os.environ.get("IMPORTS_DB_SCHEMA") or None
        server = self._host_server()
        if self.settings.database is None and server is not None:
            conninfo, host_schema = server
            return open_postgres(conninfo, schema=schema or f"{host_schema}_imports", now=self.now,
                                 signal=self.signal)
        target = self.settings.database or str(self.data_dir / "imports.db")
        if not str(target).startswith(("postgres://", "postgresql://")):
            Path(target).parent.mkdir(parents=True, exist_ok=True)
            return open_store(target, now=self.now, signal=self.signal)
        return open_store(target, now=self.now, signal=self.signal, schema=schema)

    def _host_server(self) -> tuple[str, str] | None:
        """The host's PostgreSQL server and schema when it runs with `--storage postgres`."""
        storage = self.runtime.storage if self.runtime else None
        if storage is None or storage.kind != "postgres":
            return None
        config = storage.backend.config
        return str(config.conninfo), str(config.schema)

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

    def _ledger_function_key(self) -> str | None:
        """`LEDGER_FUNCTION_KEY`, else (the stand-in of this app) `ledger_post`'s own key."""
        if self.settings.ledger_function_key or self.settings.ledger_url:
            return self.settings.ledger_function_key
        keys = self._own_keys()
        return keys.ensure_function("ledger_post").get("default") if keys is not None else None

    def _own_keys(self) -> Any:
        """The host's key store; under a host that serves no HTTP (the test harness), the same
        key files loaded here."""
        runtime = self.runtime
        if runtime is None:
            return None
        if runtime.services.keys is None:
            from funchost.triggers.http.keys import KeyStore

            runtime.services.keys = KeyStore.load_or_create(runtime.data_dir, runtime.settings,
                                                            list(runtime.functions))
        return runtime.services.keys

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

        return httpx.ASGITransport(app=create_asgi_app(runtime, self._own_keys()))

    @property
    def book(self) -> LedgerBook | PostgresLedgerBook:
        if self._book is None:
            database = self.store.db
            if isinstance(database, PostgresDatabase) and not os.environ.get("LEDGER_DB"):
                self._book = PostgresLedgerBook(database.dsn, database.schema, self.now)
            else:
                path = os.environ.get("LEDGER_DB") or str(self.data_dir / "ledger.db")
                self._book = LedgerBook(Path(path), self.now)
        return self._book

    # -- helpers -----------------------------------------------------------------------------------

    async def db(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a (blocking) store call of background work off the event loop."""
        return await asyncio.to_thread(fn, *args, **kwargs)

    async def intake(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a store call of an HTTP request on the intake's own threads, its write waiting at
        most `intake_wait_seconds` for the lock: background work stuck behind a lock another
        host holds (frozen, paused in a debugger) never takes these threads, and a request
        that cannot get the lock gets `StoreUnavailable` (a 503) instead of a 30 s wait."""
        wait = self.settings.intake_wait_seconds

        def call() -> T:
            with self.store.db.bounded_wait(wait):
                return fn(*args, **kwargs)

        context = contextvars.copy_context()
        return await asyncio.get_running_loop().run_in_executor(self._intake_threads, context.run, call)

    async def aclose(self) -> None:
        self._unsubscribe()
        await self.dispatcher.idle()
        await self.ledger.aclose()
        if self._book is not None:
            self._book.close()
        self._intake_threads.shutdown(wait=False, cancel_futures=True)
        self.store.close()


class PipelineHolder:
    """One `Pipeline` per process, created on first use from inside a function."""

    def __init__(self, settings: PipelineSettings | None = None) -> None:
        self._settings = settings
        self._pipeline: Pipeline | None = None
        self._lock = threading.Lock()

    def get(self) -> Pipeline:
        if self._pipeline is None:
            loop = asyncio.get_running_loop()
            with self._lock:
                if self._pipeline is None:
                    self._pipeline = Pipeline(self._settings or PipelineSettings.from_environment(), loop)
        return self._pipeline

    @property
    def created(self) -> Pipeline | None:
        return self._pipeline

    async def aclose(self) -> None:
        if self._pipeline is not None:
            pipeline, self._pipeline = self._pipeline, None
            await pipeline.aclose()
