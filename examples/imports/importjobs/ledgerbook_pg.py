"""The ledger stand-in's book on PostgreSQL, beside the jobs: hosts on several machines answer
from one book, so a re-sent entry is recognised whichever host receives it.

Same contract as the SQLite book (`importjobs.ledgerbook`): entries keyed by the caller's scope
and Idempotency-Key, a repeated key with the same body answers the first entry (`seen` counts
the repeats), another body raises `KeyReused`. One transaction per call: ``INSERT ... ON
CONFLICT DO NOTHING``, and when the key was there, an ``UPDATE ... RETURNING`` that only
matches the same body (the row lock serialises two hosts recording the same key). One
connection, used under a lock and opened again after the server went away (a call during the
outage raises, the ledger API answers 500, and the caller's retry finds the book again).
"""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg import sql

from importjobs.ledgerbook import Caller, KeyReused, entry_view

_LOCK_KEY = 0x6C656467  # "ledg": creating the table once when hosts start together
_TABLE = ("CREATE TABLE IF NOT EXISTS ledger_entries (tenant_id text NOT NULL, principal text NOT NULL,"
          " idempotency_key text NOT NULL, entry_id text NOT NULL, body_hash text NOT NULL, body text NOT NULL,"
          " seen integer NOT NULL DEFAULT 1, created_at text NOT NULL,"
          " PRIMARY KEY (tenant_id, principal, idempotency_key))")
_INSERT = ("INSERT INTO ledger_entries (tenant_id, principal, idempotency_key, entry_id, body_hash, body, created_at)"
           " VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING")
_SEEN_AGAIN = ("UPDATE ledger_entries SET seen = seen + 1 WHERE tenant_id = %s AND principal = %s"
               " AND idempotency_key = %s AND body_hash = %s RETURNING entry_id, body, created_at")
_LIST = ("SELECT idempotency_key, entry_id, body, created_at, seen FROM ledger_entries WHERE tenant_id = %s"
         " ORDER BY created_at, entry_id")


class PostgresLedgerBook:
    def __init__(self, dsn: str, schema: str | None, now: Callable[[], datetime] | None = None) -> None:
        self.dsn, self.schema = dsn, schema
        self._now = now or (lambda: datetime.now(UTC))
        self._lock = threading.Lock()
        self._db: psycopg.Connection[Any] | None = None
        self._closed = False

    def _connection(self) -> psycopg.Connection[Any]:
        if self._closed:
            raise RuntimeError("the ledger book is closed")
        if self._db is not None and not self._db.closed and not self._db.broken:
            return self._db
        db = psycopg.connect(self.dsn, autocommit=True, connect_timeout=10)
        with db.transaction():
            db.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
            if self.schema:
                ident = sql.Identifier(self.schema)
                db.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(ident))
                db.execute(sql.SQL("SET search_path TO {}").format(ident))
            db.execute(_TABLE)
        self._db = db
        return db

    def record(self, caller: Caller, key: str, body: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """(entry, created). The same key with the same body returns the first entry
        (created=False); with another body it raises `KeyReused`."""
        text = json.dumps(body, sort_keys=True, separators=(",", ":"))
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        scope = (caller.tenant_id, caller.principal, key)
        entry_id, created = "led_" + uuid.uuid4().hex[:16], self._now().isoformat()
        with self._lock:
            db = self._connection()
            with db.transaction():
                if db.execute(_INSERT, (*scope, entry_id, digest, text, created)).rowcount:
                    return entry_view(key, entry_id, text, created), True
                row = db.execute(_SEEN_AGAIN, (*scope, digest)).fetchone()
        if row is None:
            raise KeyReused(f"Idempotency-Key {key!r} was used with a different body")
        return entry_view(key, row[0], row[1], row[2]), False

    def entries(self, tenant_id: str) -> list[dict[str, Any]]:
        """The tenant's entries, oldest first."""
        with self._lock:
            rows = self._connection().execute(_LIST, (tenant_id,)).fetchall()
        return [{**entry_view(k, e, b, c), "requestsSeen": int(s)} for k, e, b, c, s in rows]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._db is not None:
                self._db.close()
                self._db = None
