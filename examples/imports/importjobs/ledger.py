"""The downstream ledger: the client the worker uses, and the small book behind the stand-in API.

Client: `POST <LEDGER_URL>` with `Idempotency-Key: <jobId>:<operation>`. 2xx is success (a
repeated key returns the entry recorded the first time); 408/429/500/502/503/504, timeouts and
disconnects are transient; other 4xx are business refusals.

Book: one row per Idempotency-Key (SQLite), so the stand-in behaves as an idempotent API.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503, 504})


class TransientError(Exception):
    """Worth retrying later: the downstream is busy, down or unreachable."""


class LedgerRefused(Exception):
    """The ledger refused the entry for a business reason (retrying will not help)."""


class LedgerClient:
    def __init__(self, url: str, timeout: float, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.url = url
        self._url = httpx.URL(url)  # parsed once, not per call
        self._client = httpx.AsyncClient(timeout=timeout, transport=transport)

    async def post(self, entry: dict[str, Any], idempotency_key: str) -> dict[str, Any]:
        try:
            response = await self._client.post(self._url, json=entry, headers={"Idempotency-Key": idempotency_key})
        except httpx.TimeoutException as exc:
            raise TransientError(f"ledger timeout ({type(exc).__name__})") from None
        except httpx.TransportError as exc:
            raise TransientError(f"ledger unreachable ({type(exc).__name__})") from None
        if response.status_code in TRANSIENT_STATUS:
            raise TransientError(f"ledger answered {response.status_code}")
        if response.status_code >= 400:
            raise LedgerRefused(f"ledger refused the entry ({response.status_code}): {response.text[:200]}")
        result: dict[str, Any] = response.json()
        return result

    async def aclose(self) -> None:
        await self._client.aclose()


class LedgerBook:
    """Entries keyed by Idempotency-Key. Thread-safe: one connection, opened once (WAL), used
    under a lock; other processes sharing the file meet at `BEGIN IMMEDIATE` (busy timeout)."""

    def __init__(self, path: Path, now: Callable[[], datetime] | None = None) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._now = now or (lambda: datetime.now(UTC))
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = sqlite3.connect(self.path, timeout=30, isolation_level=None,
                                                              check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS entries (idempotency_key TEXT PRIMARY KEY, entry_id TEXT NOT NULL,"
                         " body TEXT NOT NULL, seen INTEGER NOT NULL DEFAULT 1, created_at TEXT NOT NULL)")

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            raise RuntimeError("the ledger book is closed")
        return self._db

    def record(self, key: str, body: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """(entry, created): a repeated key returns the first entry and created=False."""
        with self._lock:
            db = self._connection()
            db.execute("BEGIN IMMEDIATE")
            try:
                row = db.execute("SELECT entry_id, body, created_at FROM entries WHERE idempotency_key = ?",
                                 (key,)).fetchone()
                if row is not None:
                    db.execute("UPDATE entries SET seen = seen + 1 WHERE idempotency_key = ?", (key,))
                    db.execute("COMMIT")
                    return _entry(key, *row), False
                entry_id = "led_" + uuid.uuid4().hex[:16]
                created = self._now().isoformat()
                text = json.dumps(body, sort_keys=True)
                db.execute("INSERT INTO entries (idempotency_key, entry_id, body, created_at) VALUES (?, ?, ?, ?)",
                           (key, entry_id, text, created))
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
            return _entry(key, entry_id, text, created), True

    def entries(self) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._connection().execute("SELECT idempotency_key, entry_id, body, created_at, seen FROM entries"
                                              " ORDER BY created_at, entry_id").fetchall()
        return [{**_entry(k, e, b, c), "requestsSeen": int(s)} for k, e, b, c, s in rows]

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


def _entry(key: str, entry_id: str, body: str, created: str) -> dict[str, Any]:
    return {"entryId": entry_id, "idempotencyKey": key, "entry": json.loads(body), "createdAt": created}
