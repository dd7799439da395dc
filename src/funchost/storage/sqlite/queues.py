"""Embedded Azure Queue storage on one SQLite file per account (``<account_dir>/queues.db``).

Semantics follow the Queue service REST API (azure-semantics 1.7): pop receipts, dequeue counts,
lazy expiry. Argument rules (names, 64 KiB message text, visibility and TTL ranges) are checked
before a call gets here, by `funchost.storage.validation`.

Throughput notes:
- Receiving is one ``UPDATE ... RETURNING`` over the ``(queue, visible_at)`` index inside
  ``BEGIN IMMEDIATE``, so two processes on the same file can never receive the same visible
  message, and a 1,000,000-message backlog costs the same per receive as a small one.
- Message ids are GUID-shaped strings whose last group is the row id, so deletes and updates
  find their row by primary key without a second index on a random key.
- Writes issued while a transaction is running are grouped into the next transaction
  ("group commit"). Every operation is still checked and answered on its own (its own
  PopReceiptMismatch, MessageNotFound...), so callers see per-message semantics.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Coroutine, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from funchost.clock import Clock
from funchost.errors import (
    MessageNotFound,
    PopReceiptMismatch,
    QueueAlreadyExists,
    QueueNotFound,
)
from funchost.storage.queue_ids import (
    PURGE_INTERVAL,
    ServiceTime,
    batch_service_time,
    message_id,
    random_hex,
    seq_of,
    service_time,
)
from funchost.storage.queue_rules import DEFAULT_TTL, out_of_range
from funchost.storage.queues import QueueMessage, QueueProperties, UpdateReceipt
from funchost.storage.sqlite.db import SqliteDatabase
from funchost.storage.write_group import WriteGroup

T = TypeVar("T")

SCHEMA = """
CREATE TABLE IF NOT EXISTS queues (
    name TEXT PRIMARY KEY,
    metadata TEXT NOT NULL DEFAULT '{}',
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    queue TEXT NOT NULL,
    id TEXT NOT NULL,
    content TEXT NOT NULL,
    inserted_at REAL NOT NULL,
    expires_at REAL,
    visible_at REAL NOT NULL,
    dequeue_count INTEGER NOT NULL DEFAULT 0,
    pop_receipt TEXT
);
CREATE INDEX IF NOT EXISTS messages_visible ON messages(queue, visible_at);
CREATE INDEX IF NOT EXISTS messages_expiry ON messages(expires_at) WHERE expires_at IS NOT NULL
"""


# The columns a message is read from, in the order `_row_message` reads them by position (a name
# looked up in a row scans its columns: three times as slow, and a receive reads 16 rows).
MESSAGE_COLUMNS = "seq, id, content, inserted_at, expires_at, visible_at, dequeue_count, pop_receipt"


def _row_message(row: sqlite3.Row, *, with_receipt: bool = True, times: ServiceTime = service_time) -> QueueMessage:
    """A row of MESSAGE_COLUMNS as the message."""
    return QueueMessage(
        row[1], row[2], row[6], times(row[3]), times(row[4]),  # type: ignore[arg-type]
        # Peek Messages returns neither a next-visible time nor a pop receipt.
        times(row[5]) if with_receipt else None,
        row[7] if with_receipt else None,
    )


def _first(row: sqlite3.Row) -> int:
    return row[0]  # type: ignore[no-any-return]


QUICK_GROUP = 64  # operations per transaction on the loop's connection (a few hundred µs)


class SqliteQueueService:
    """`QueueService` on embedded SQLite; safe for several processes sharing the file."""

    def __init__(self, account_dir: Path, account: str, clock: Clock) -> None:
        self.account_name = account
        self._clock = clock
        self._db = SqliteDatabase(Path(account_dir) / "queues.db", SCHEMA, name=f"queues-{account}")
        self._writes = WriteGroup(self._db)
        # A message's own steps are bounded (at most 32 rows): on the loop's connection (db.py),
        # in groups small enough not to hold the loop for long.
        self._quick_writes = WriteGroup(self._db.quick, max_group=QUICK_GROUP)
        self._last_purge = float("-inf")

    def _now(self) -> float:
        return self._clock.now().timestamp()

    # -- queues ----------------------------------------------------------------------------------

    async def create_queue(self, name: str, metadata: Mapping[str, str] | None = None) -> bool:
        wanted = _metadata_json(metadata)
        now = self._now()

        def op(conn: sqlite3.Connection) -> bool:
            row = conn.execute("SELECT metadata FROM queues WHERE name=?", (name,)).fetchone()
            if row is None:
                conn.execute("INSERT INTO queues(name, metadata, created_at) VALUES (?,?,?)", (name, wanted, now))
                return True
            if json.loads(row["metadata"]) != json.loads(wanted):
                raise QueueAlreadyExists(f"queue '{name}' exists with different metadata")
            return False

        return await self._writes.run(op)

    async def delete_queue(self, name: str) -> None:

        def op(conn: sqlite3.Connection) -> None:
            if conn.execute("DELETE FROM queues WHERE name=?", (name,)).rowcount == 0:
                raise QueueNotFound(f"queue '{name}' does not exist")
            conn.execute("DELETE FROM messages WHERE queue=?", (name,))

        await self._writes.run(op)

    async def queue_exists(self, name: str) -> bool:
        row = await self._db.quick.read(lambda c: c.execute("SELECT 1 FROM queues WHERE name=?", (name,)).fetchone())
        return row is not None

    async def list_queues(self, prefix: str | None = None) -> list[str]:
        def op(conn: sqlite3.Connection) -> list[str]:
            if prefix:
                rows = conn.execute("SELECT name FROM queues WHERE substr(name, 1, ?) = ? ORDER BY name",
                                    (len(prefix), prefix)).fetchall()
            else:
                rows = conn.execute("SELECT name FROM queues ORDER BY name").fetchall()
            return [r["name"] for r in rows]

        return await self._db.read(op)

    async def get_queue_properties(self, name: str) -> QueueProperties:
        now = self._now()

        def op(conn: sqlite3.Connection) -> QueueProperties:
            row = conn.execute("SELECT metadata FROM queues WHERE name=?", (name,)).fetchone()
            if row is None:
                raise QueueNotFound(f"queue '{name}' does not exist")
            count = conn.execute(
                "SELECT count(*) FROM messages WHERE queue=? AND (expires_at IS NULL OR expires_at > ?)",
                (name, now)).fetchone()[0]
            return QueueProperties(name, int(count), json.loads(row["metadata"]))

        return await self._db.read(op)

    async def set_queue_metadata(self, name: str, metadata: Mapping[str, str]) -> None:
        wanted = _metadata_json(metadata)

        def op(conn: sqlite3.Connection) -> None:
            if conn.execute("UPDATE queues SET metadata=? WHERE name=?", (wanted, name)).rowcount == 0:
                raise QueueNotFound(f"queue '{name}' does not exist")

        await self._writes.run(op)

    # -- messages --------------------------------------------------------------------------------

    async def put_message(
        self,
        name: str,
        content: str,
        *,
        visibility_timeout: int = 0,
        time_to_live: int | None = None,
    ) -> QueueMessage:
        ttl = DEFAULT_TTL if time_to_live is None else time_to_live
        now = self._now()
        expires = None if ttl == -1 else now + ttl
        visible = now + visibility_timeout
        receipt = random_hex(8)

        def op(conn: sqlite3.Connection) -> QueueMessage:
            if conn.execute("SELECT 1 FROM queues WHERE name=?", (name,)).fetchone() is None:
                raise QueueNotFound(f"queue '{name}' does not exist")
            row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name='messages'").fetchone()
            seq = (row[0] if row else 0) + 1
            new_id = message_id(seq)
            conn.execute(
                "INSERT INTO messages(seq, queue, id, content, inserted_at, expires_at, visible_at,"
                " dequeue_count, pop_receipt) VALUES (?,?,?,?,?,?,?,0,?)",
                (seq, name, new_id, content, now, expires, visible, receipt))
            return QueueMessage(new_id, content, 0, service_time(now), service_time(expires),  # type: ignore[arg-type]
                                service_time(visible), receipt)

        return await self._quick_writes.run(op)

    async def get_messages(
        self, name: str, *, max_messages: int = 1, visibility_timeout: int = 30
    ) -> list[QueueMessage]:
        now = self._now()
        purge = now - self._last_purge >= PURGE_INTERVAL
        if purge:
            self._last_purge = now
        nonce = random_hex(6)

        def op(conn: sqlite3.Connection) -> list[QueueMessage]:
            if conn.execute("SELECT 1 FROM queues WHERE name=?", (name,)).fetchone() is None:
                raise QueueNotFound(f"queue '{name}' does not exist")
            if purge:
                conn.execute("DELETE FROM messages WHERE expires_at <= ?", (now,))
            rows = conn.execute(
                "UPDATE messages SET visible_at = ?, dequeue_count = dequeue_count + 1,"
                " pop_receipt = ? || printf('%x', dequeue_count + 1)"
                " WHERE seq IN (SELECT seq FROM messages WHERE queue = ? AND visible_at <= ?"
                "   AND (expires_at IS NULL OR expires_at > ?) ORDER BY visible_at, seq LIMIT ?)"
                f" RETURNING {MESSAGE_COLUMNS}",
                (now + visibility_timeout, nonce, name, now, now, max_messages)).fetchall()
            rows.sort(key=_first)
            times = batch_service_time()
            return [_row_message(r, times=times) for r in rows]

        # A purge deletes every expired message: unbounded, so on the file's thread.
        return await (self._writes if purge else self._quick_writes).run(op)

    async def peek_messages(self, name: str, *, max_messages: int = 1) -> list[QueueMessage]:
        now = self._now()

        def op(conn: sqlite3.Connection) -> list[QueueMessage]:
            if conn.execute("SELECT 1 FROM queues WHERE name=?", (name,)).fetchone() is None:
                raise QueueNotFound(f"queue '{name}' does not exist")
            rows = conn.execute(
                f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE queue = ? AND visible_at <= ?"
                " AND (expires_at IS NULL OR expires_at > ?) ORDER BY visible_at, seq LIMIT ?",
                (name, now, now, max_messages)).fetchall()
            return [_row_message(r, with_receipt=False) for r in rows]

        return await self._db.quick.read(op)

    async def update_message(
        self,
        name: str,
        message_id: str,
        pop_receipt: str,
        *,
        visibility_timeout: int,
        content: str | None = None,
    ) -> UpdateReceipt:
        now = self._now()
        visible = now + visibility_timeout
        receipt = random_hex(8)
        seq = seq_of(message_id)

        def op(conn: sqlite3.Connection) -> UpdateReceipt:
            row = self._find(conn, name, message_id, seq, pop_receipt, now)
            if row["expires_at"] is not None and visible > row["expires_at"]:
                raise out_of_range("visibilitytimeout", visibility_timeout)
            if content is None:
                conn.execute("UPDATE messages SET visible_at=?, pop_receipt=? WHERE seq=?", (visible, receipt, seq))
            else:
                conn.execute("UPDATE messages SET visible_at=?, pop_receipt=?, content=? WHERE seq=?",
                             (visible, receipt, content, seq))
            return UpdateReceipt(receipt, service_time(visible))  # type: ignore[arg-type]

        return await self._quick_writes.run(op)

    def delete_message(self, name: str, message_id: str, pop_receipt: str) -> Coroutine[Any, Any, None]:
        """The write group's call itself, as the wrappers around this service return it (one
        coroutine less per message)."""
        now = self._now()
        seq = seq_of(message_id)

        def op(conn: sqlite3.Connection) -> None:
            # One statement with every condition of `_find`; only a miss reads the row to say why.
            if seq is not None and conn.execute(
                    "DELETE FROM messages WHERE seq=? AND id=? AND queue=? AND pop_receipt=?"
                    " AND (expires_at IS NULL OR expires_at > ?)",
                    (seq, message_id, name, pop_receipt, now)).rowcount:
                return
            self._find(conn, name, message_id, seq, pop_receipt, now)
            conn.execute("DELETE FROM messages WHERE seq=?", (seq,))

        return self._quick_writes.run(op)

    async def clear_messages(self, name: str) -> None:

        def op(conn: sqlite3.Connection) -> None:
            if conn.execute("SELECT 1 FROM queues WHERE name=?", (name,)).fetchone() is None:
                raise QueueNotFound(f"queue '{name}' does not exist")
            conn.execute("DELETE FROM messages WHERE queue=?", (name,))

        await self._writes.run(op)

    async def aclose(self) -> None:
        await self._db.aclose()

    async def oldest_insertion_time(self, name: str) -> datetime | None:
        row = await self._db.read(lambda c: c.execute(
            "SELECT min(inserted_at) FROM messages WHERE queue=?", (name,)).fetchone())
        return service_time(row[0]) if row and row[0] is not None else None

    @staticmethod
    def _find(conn: sqlite3.Connection, name: str, message_id: str, seq: int | None,
              pop_receipt: str, now: float) -> sqlite3.Row:
        row = None
        if seq is not None:
            row = conn.execute("SELECT id, queue, pop_receipt, expires_at FROM messages WHERE seq=?",
                               (seq,)).fetchone()
        if row is None or row["id"] != message_id or row["queue"] != name:
            if conn.execute("SELECT 1 FROM queues WHERE name=?", (name,)).fetchone() is None:
                raise QueueNotFound(f"queue '{name}' does not exist")
            raise MessageNotFound("the specified message does not exist")
        if row["expires_at"] is not None and row["expires_at"] <= now:
            raise MessageNotFound("the specified message does not exist")
        if row["pop_receipt"] != pop_receipt:
            raise PopReceiptMismatch("the specified pop receipt did not match the pop receipt for a dequeued message")
        return row  # type: ignore[no-any-return]


def _metadata_json(metadata: Mapping[str, str] | None) -> str:
    return json.dumps({k: str(v) for k, v in sorted(dict(metadata or {}).items())})
