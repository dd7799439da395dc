"""Azure Queue storage on PostgreSQL: hosts on several machines share an account's queues.

The embedded store's semantics (`funchost.storage.sqlite.queues`) on the server's tables
(`queue_sql`): message ids whose last group is the row's sequence number (updates and deletes
go by primary key), a pop receipt replaced by every receive and update under the row lock (a
stale holder's delete fails), lazy expiry in every predicate plus a purge at most once a minute.

- A receive is one ``UPDATE ... RETURNING`` over rows chosen ``FOR NO KEY UPDATE SKIP LOCKED``:
  hosts receiving at once take disjoint messages and never wait for each other.
- Deletes issued while one is running are sent together as one ``DELETE ... USING unnest(...)``
  (group commit); each caller still gets its own answer, misses being told apart (404 or a
  receipt mismatch) by one follow-up select.
- Times are the server's (`NOW_SQL`) unless a ManualClock drives them.
- After a put or update that makes a message visible, `notify(account, queue)` is called (the
  backend's cross-host notifier, `postgres.notify`).
- A statement that fails with what passes by itself (a 503: the server restarting, a connection it
  ended) is tried again as the Azure SDKs' default retry policy does for the host's queue client
  (`postgres.retry`). A delete that committed before its answer was lost is then a 404, which the
  queue trigger already takes as a delete someone else made.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from funchost.clock import Clock
from funchost.errors import (
    MessageNotFound,
    PopReceiptMismatch,
    QueueAlreadyExists,
    QueueNotFound,
    StorageError,
)
from funchost.storage.postgres import queue_sql as sql
from funchost.storage.postgres.db import PgDatabase, server_time
from funchost.storage.postgres.retry import retried
from funchost.storage.queue_ids import (
    PURGE_INTERVAL,
    ServiceTime,
    batch_service_time,
    id_prefix,
    random_hex,
    seq_of,
    service_time,
)
from funchost.storage.queue_rules import DEFAULT_TTL, out_of_range
from funchost.storage.queues import QueueMessage, QueueProperties, UpdateReceipt

MAX_GROUP = 512  # deletes per statement
Notify = Callable[[str, str], None]


def _message(row: Any, *, with_receipt: bool = True, times: ServiceTime = service_time) -> QueueMessage:
    seq, prefix, content, inserted, expires, visible, count, receipt = row
    return QueueMessage(f"{prefix}{seq:012x}", content, count, times(inserted), times(expires),  # type: ignore[arg-type]
                        times(visible) if with_receipt else None, receipt if with_receipt else None)


class PostgresQueueService:
    """`QueueService` for one account, its queues in the server's `queues` tables."""

    def __init__(self, database: PgDatabase, account: str, clock: Clock, notify: Notify | None = None) -> None:
        self.account_name = account
        self._database = database
        self._clock = clock
        self._notify = notify
        self._migrated = False
        self._deletes: list[tuple[str, int, str, str, asyncio.Future[None]]] = []
        self._flush: asyncio.Task[None] | None = None
        self._last_purge = float("-inf")

    async def _ready(self) -> None:
        if not self._migrated:  # before any statement: a migration may wait for another host's
            await asyncio.to_thread(self._database.migrate, sql.COMPONENT, sql.MIGRATIONS)
            self._migrated = True

    def _args(self, name: str | list[str], **more: Any) -> dict[str, Any]:
        return {"now": server_time(self._clock), "a": self.account_name, "n": name, **more}

    async def _fetch(self, statement: str, args: dict[str, Any]) -> list[Any]:
        await self._ready()
        return await retried(self._database.rows, statement, args, sleep=self._clock.sleep)

    async def _per_message(self, statement: str, args: dict[str, Any]) -> list[Any]:
        """A statement of the per-message path (put, receive, update, delete and why one missed):
        on the database's hot statements (`postgres.hot`)."""
        await self._ready()
        return await retried(self._database.hot_rows, statement, args, sleep=self._clock.sleep)

    async def _exists(self, name: str) -> bool:
        return bool(await self._fetch(sql.EXISTS, self._args(name)))

    async def _require(self, name: str) -> None:
        if not await self._exists(name):
            raise QueueNotFound(f"queue '{name}' does not exist")

    # -- queues ----------------------------------------------------------------------------------

    async def create_queue(self, name: str, metadata: Mapping[str, str] | None = None) -> bool:
        wanted = _metadata(metadata)
        if await self._fetch(sql.CREATE, self._args(name, m=json.dumps(wanted))):
            return True
        rows = await self._fetch(sql.METADATA, self._args(name))
        if rows and _metadata(rows[0][0]) != wanted:
            raise QueueAlreadyExists(f"queue '{name}' exists with different metadata")
        return False

    async def delete_queue(self, name: str) -> None:
        await self._ready()
        async with self._database.transaction() as conn:
            row = await (await conn.execute(sql.DROP, self._args(name))).fetchone()
            if row is None:
                raise QueueNotFound(f"queue '{name}' does not exist")
            await conn.execute(sql.DROP_MESSAGES, {"q": row[0]})

    async def queue_exists(self, name: str) -> bool:
        return await self._exists(name)

    async def list_queues(self, prefix: str | None = None) -> list[str]:
        return [r[0] for r in await self._fetch(sql.LIST, {"a": self.account_name, "p": prefix or ""})]

    async def get_queue_properties(self, name: str) -> QueueProperties:
        rows = await self._fetch(sql.PROPERTIES, self._args(name))
        if not rows:
            raise QueueNotFound(f"queue '{name}' does not exist")
        return QueueProperties(name, int(rows[0][1]), _metadata(rows[0][0]))

    async def set_queue_metadata(self, name: str, metadata: Mapping[str, str]) -> None:
        await self._ready()
        async with self._database.connection() as conn:
            cursor = await conn.execute(sql.SET_METADATA, self._args(name, m=json.dumps(_metadata(metadata))))
            if cursor.rowcount == 0:
                raise QueueNotFound(f"queue '{name}' does not exist")

    # -- messages --------------------------------------------------------------------------------

    async def put_message(self, name: str, content: str, *, visibility_timeout: int = 0,
                          time_to_live: int | None = None) -> QueueMessage:
        ttl = DEFAULT_TTL if time_to_live is None else time_to_live
        prefix, receipt = id_prefix(), random_hex(8)
        rows = await self._per_message(sql.PUT, self._args(name, p=prefix, c=content, r=receipt, vt=visibility_timeout,
                                                     ttl=None if ttl == -1 else ttl))
        if not rows:
            raise QueueNotFound(f"queue '{name}' does not exist")
        seq, inserted, expires, visible = rows[0]
        if visibility_timeout == 0:
            self._woke(name)
        return QueueMessage(f"{prefix}{seq:012x}", content, 0, service_time(inserted), service_time(expires),  # type: ignore[arg-type]
                            service_time(visible), receipt)

    async def get_messages(self, name: str, *, max_messages: int = 1,
                           visibility_timeout: int = 30) -> list[QueueMessage]:
        await self._purge()
        rows = await self._per_message(sql.RECEIVE, self._args(name, max=max_messages, vt=visibility_timeout,
                                                         nonce=random_hex(6)))
        if not rows:
            await self._require(name)
        times = batch_service_time()
        return [_message(r, times=times) for r in sorted(rows, key=lambda r: r[0])]

    async def _purge(self) -> None:
        now = self._clock.now().timestamp()
        if now - self._last_purge >= PURGE_INTERVAL:
            self._last_purge = now
            await self._fetch(sql.PURGE, {"now": server_time(self._clock)})

    async def peek_messages(self, name: str, *, max_messages: int = 1) -> list[QueueMessage]:
        rows = await self._fetch(sql.PEEK, self._args(name, max=max_messages))
        if not rows:
            await self._require(name)
        return [_message(r, with_receipt=False) for r in rows]

    async def update_message(self, name: str, message_id: str, pop_receipt: str, *, visibility_timeout: int,
                             content: str | None = None) -> UpdateReceipt:
        seq, receipt = seq_of(message_id), random_hex(8)
        if seq is not None:
            rows = await self._per_message(sql.UPDATE, self._args(name, s=seq, p=message_id[:24], r=pop_receipt,
                                                            new=receipt, c=content, vt=visibility_timeout))
            if rows:
                if visibility_timeout == 0:
                    self._woke(name)
                return UpdateReceipt(receipt, service_time(rows[0][0]))  # type: ignore[arg-type]
        error = (await self._classify([(name, seq, message_id, pop_receipt)]))[0]
        raise error or out_of_range("visibilitytimeout", visibility_timeout)

    async def delete_message(self, name: str, message_id: str, pop_receipt: str) -> None:
        seq = seq_of(message_id)
        if seq is None:
            error = (await self._classify([(name, None, message_id, pop_receipt)]))[0]
            raise error or MessageNotFound("the specified message does not exist")
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._deletes.append((name, seq, message_id, pop_receipt, future))
        if self._flush is None or self._flush.done():
            self._flush = asyncio.get_running_loop().create_task(self._drain_deletes(), name="postgres-deletes")
        await future

    async def _drain_deletes(self) -> None:
        while self._deletes:
            batch, self._deletes = self._deletes[:MAX_GROUP], self._deletes[MAX_GROUP:]
            try:
                await self._delete_batch(batch)
            except Exception as exc:  # the statement failed: every caller of the batch gets the error
                error = exc if isinstance(exc, StorageError) else StorageError(str(exc))
                for *_, future in batch:
                    if not future.done():
                        future.set_exception(error)

    async def _delete_batch(self, batch: list[tuple[str, int, str, str, asyncio.Future[None]]]) -> None:
        rows = await self._per_message(sql.DELETE, {"now": server_time(self._clock), "a": self.account_name, "d": json.dumps(
            [{"n": name, "s": seq, "p": message_id[:24], "r": receipt} for name, seq, message_id, receipt, _ in batch])})
        deleted = {(n, s) for n, s in rows}
        missed = []
        for name, seq, message_id, receipt, future in batch:
            if (name, seq) in deleted:
                deleted.discard((name, seq))  # a second delete of the same message in the batch: 404
                if not future.done():
                    future.set_result(None)
            else:
                missed.append((name, seq, message_id, receipt, future))
        if missed:
            errors = await self._classify([m[:4] for m in missed])
            for (*_, future), error in zip(missed, errors, strict=True):
                if not future.done():
                    future.set_exception(error or MessageNotFound("the specified message does not exist"))

    async def _classify(self, misses: list[tuple[str, int | None, str, str]]) -> list[StorageError | None]:
        """Why each (queue, seq, id, receipt) found no row; None: the row matches (a range error)."""
        rows = await self._per_message(sql.CLASSIFY, self._args([m[0] for m in misses], s=[m[1] for m in misses]))
        found: list[StorageError | None] = []
        for (name, _, message_id, receipt), (_, queue, prefix, current, live, _) in zip(misses, rows, strict=True):
            if not queue:
                found.append(QueueNotFound(f"queue '{name}' does not exist"))
            elif prefix is None or prefix != message_id[:24] or not live:
                found.append(MessageNotFound("the specified message does not exist"))
            elif current != receipt:
                found.append(PopReceiptMismatch(
                    "the specified pop receipt did not match the pop receipt for a dequeued message"))
            else:
                found.append(None)
        return found

    async def clear_messages(self, name: str) -> None:
        await self._require(name)
        await self._fetch(sql.CLEAR, self._args(name))

    async def oldest_insertion_time(self, name: str) -> datetime | None:
        rows = await self._fetch(sql.OLDEST, self._args(name))
        return service_time(rows[0][0]) if rows else None

    def _woke(self, name: str) -> None:
        if self._notify is not None:
            self._notify(self.account_name, name)

    async def aclose(self) -> None:
        """Nothing of its own but pending deletes: the backend closes the shared database."""
        if self._flush is not None and not self._flush.done():
            await asyncio.gather(self._flush, return_exceptions=True)


def _metadata(metadata: Mapping[str, str] | None) -> dict[str, str]:
    return {k: str(v) for k, v in sorted(dict(metadata or {}).items())}
