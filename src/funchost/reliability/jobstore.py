"""`JobStore`: one jobs database and the repositories that work on it.

The same repository code runs on SQLite (default: one file, WAL) and PostgreSQL (several
hosts). The API is synchronous, because Azure Functions apps may be sync or async; async
callers use `AsyncJobStore`, which runs each call on a worker thread.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from funchost.clock import SystemClock
from funchost.reliability.effects import EffectLog, RowSink
from funchost.reliability.idempotency import IntakeRepository
from funchost.reliability.jobs import JobRepository
from funchost.reliability.lease import LeaseRepository
from funchost.reliability.outbox import CommitSignal, OutboxRepository, after_commit
from funchost.reliability.store.db import Database
from funchost.reliability.store.schema import migrate

Now = Callable[[], datetime]


class JobStore:
    """Repositories over one database. Thread-safe; close() when done."""

    def __init__(self, db: Database, *, now: Now | None = None, signal: CommitSignal | None = None) -> None:
        self.db = db
        self.now: Now = now or SystemClock().now
        self.signal = signal if signal is not None else after_commit
        self.schema_version = migrate(db)
        self.jobs = JobRepository(db)
        self.intake = IntakeRepository(db, self.now, self.signal)
        self.leases = LeaseRepository(db, self.now)
        self.outbox = OutboxRepository(db, self.now, self.signal)
        self.effects = EffectLog(db, self.now)
        self.rows = RowSink(db, self.now)

    @property
    def dialect(self) -> str:
        return self.db.name

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> JobStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_sqlite(path: str | Path, **kwargs: Any) -> JobStore:
    from funchost.reliability.store.sqlite import SqliteDatabase

    return JobStore(SqliteDatabase(path), **kwargs)


def open_postgres(dsn: str, *, schema: str | None = None, **kwargs: Any) -> JobStore:
    from funchost.reliability.store.postgres import PostgresDatabase

    return JobStore(PostgresDatabase(dsn, schema=schema), **kwargs)


def open_store(target: str | Path, **kwargs: Any) -> JobStore:
    """`postgresql://...` / `postgres://...` opens PostgreSQL; anything else is a SQLite path
    (a `sqlite:///` prefix is accepted)."""
    text = str(target)
    if text.startswith(("postgresql://", "postgres://")):
        return open_postgres(text, **kwargs)
    if text.startswith("sqlite:///"):
        text = text[len("sqlite:///"):]
    return open_sqlite(text, **kwargs)


class _AsyncProxy:
    def __init__(self, target: Any) -> None:
        self._target = target

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if not callable(attr):
            return attr

        @functools.wraps(attr)
        async def call(*args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(attr, *args, **kwargs)

        return call


class AsyncJobStore:
    """The same repositories, each method awaited on a worker thread:
    `await astore.leases.acquire(job_id)`."""

    def __init__(self, store: JobStore) -> None:
        self.store = store
        self.jobs = _AsyncProxy(store.jobs)
        self.intake = _AsyncProxy(store.intake)
        self.leases = _AsyncProxy(store.leases)
        self.outbox = _AsyncProxy(store.outbox)
        self.effects = _AsyncProxy(store.effects)
        self.rows = _AsyncProxy(store.rows)

    async def aclose(self) -> None:
        await asyncio.to_thread(self.store.close)
