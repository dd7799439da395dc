"""The book behind the ledger stand-in: entries keyed by Idempotency-Key, honestly.

An idempotency key is the caller's own: entries are scoped by the caller's principal (tenant
and user, as a payment API scopes keys by account), so an entry someone else created under the
same key is never answered to this caller. A repeated key answers the entry recorded the first
time only when the body is the same; a different body is refused (`KeyReused`, HTTP 422, as
the IETF draft "The Idempotency-Key HTTP Header Field" asks) instead of passing off another
request's entry as this one's result.

One SQLite connection, opened on first use (never on the event loop) and kept, used under a
lock; other processes sharing the file meet at `BEGIN IMMEDIATE` (busy timeout). The file is
private (0600) like every other store of the data folder.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from funchost.private_files import private_sqlite_file
from funchost.sqlite_open import connect_wal

BUSY_TIMEOUT_SECONDS = 30.0
SCHEMA = ("CREATE TABLE IF NOT EXISTS ledger_entries (tenant_id TEXT NOT NULL, principal TEXT NOT NULL,"
          " idempotency_key TEXT NOT NULL, entry_id TEXT NOT NULL, body_hash TEXT NOT NULL, body TEXT NOT NULL,"
          " seen INTEGER NOT NULL DEFAULT 1, created_at TEXT NOT NULL,"
          " PRIMARY KEY (tenant_id, principal, idempotency_key))")


class KeyReused(Exception):
    """The caller already used this Idempotency-Key with a different body."""


@dataclass(frozen=True)
class Caller:
    """Whose entries: the scope of idempotency keys and of listings."""

    tenant_id: str
    principal: str


class LedgerBook:
    def __init__(self, path: Path, now: Callable[[], datetime] | None = None) -> None:
        self.path = Path(path)
        self._now = now or (lambda: datetime.now(UTC))
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._closed = False

    def _connection(self) -> sqlite3.Connection:
        if self._closed:
            raise RuntimeError("the ledger book is closed")
        if self._db is None:
            private_sqlite_file(self.path, restrict_folder=False)
            self._db = connect_wal(self.path, busy_timeout=BUSY_TIMEOUT_SECONDS,
                                   setup=lambda conn: conn.execute(SCHEMA))
        return self._db

    def record(self, caller: Caller, key: str, body: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """(entry, created). The same key with the same body returns the first entry
        (created=False); with another body it raises `KeyReused`."""
        text = json.dumps(body, sort_keys=True, separators=(",", ":"))
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        scope = (caller.tenant_id, caller.principal, key)
        with self._lock:
            db = self._connection()
            db.execute("BEGIN IMMEDIATE")
            try:
                row = db.execute("SELECT entry_id, body_hash, body, created_at FROM ledger_entries"
                                 " WHERE tenant_id = ? AND principal = ? AND idempotency_key = ?", scope).fetchone()
                if row is not None:
                    if row[1] != digest:
                        raise KeyReused(f"Idempotency-Key {key!r} was used with a different body")
                    db.execute("UPDATE ledger_entries SET seen = seen + 1"
                               " WHERE tenant_id = ? AND principal = ? AND idempotency_key = ?", scope)
                    db.execute("COMMIT")
                    return entry_view(key, row[0], row[2], row[3]), False
                entry_id = "led_" + uuid.uuid4().hex[:16]
                created = self._now().isoformat()
                db.execute("INSERT INTO ledger_entries (tenant_id, principal, idempotency_key, entry_id, body_hash,"
                           " body, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)", (*scope, entry_id, digest, text, created))
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
            return entry_view(key, entry_id, text, created), True

    def entries(self, tenant_id: str) -> list[dict[str, Any]]:
        """The tenant's entries, oldest first."""
        with self._lock:
            rows = self._connection().execute(
                "SELECT idempotency_key, entry_id, body, created_at, seen FROM ledger_entries WHERE tenant_id = ?"
                " ORDER BY created_at, entry_id", (tenant_id,)).fetchall()
        return [{**entry_view(k, e, b, c), "requestsSeen": int(s)} for k, e, b, c, s in rows]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._db is not None:
                self._db.close()
                self._db = None


def entry_view(key: str, entry_id: str, body: str, created: str) -> dict[str, Any]:
    return {"entryId": entry_id, "idempotencyKey": key, "entry": json.loads(body), "createdAt": created}
