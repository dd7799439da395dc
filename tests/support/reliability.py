"""Helpers shared by the reliability tests: a steppable `now()` and store factories."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

from funchost.reliability.jobstore import JobStore, open_postgres, open_sqlite
from funchost.reliability.outbox import CommitSignal

START = datetime(2026, 6, 19, 10, 0, 0, tzinfo=UTC)


class SteppingNow:
    """A manual wall clock for synchronous store code: `now()` and `advance(seconds)`."""

    def __init__(self, start: datetime = START) -> None:
        self._t = start
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            return self._t

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._t += timedelta(seconds=seconds)


def make_store(kind: str, *, tmp_path: Path, now: SteppingNow, dsn: str | None = None,
               schema: str | None = None, signal: CommitSignal | None = None) -> JobStore:
    signal = signal or CommitSignal()
    if kind == "sqlite":
        return open_sqlite(tmp_path / "jobs.db", now=now, signal=signal)
    if kind == "postgres":
        if dsn is None:
            raise ValueError("postgres store needs a DSN")
        return open_postgres(dsn, schema=schema, now=now, signal=signal)
    raise ValueError(kind)
