"""Write operations submitted close together run in one transaction of a store (`StoreDatabase`):
the embedded queues and Service Bus on SQLite, the Service Bus on PostgreSQL. Under load this
turns many small transactions (each a BEGIN IMMEDIATE, or a store lock on the server) into few."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from funchost.errors import StorageError
from funchost.runtime.activity import busy

T = TypeVar("T")
C = TypeVar("C")
C_co = TypeVar("C_co", covariant=True)

MAX_GROUP = 512  # operations per grouped transaction


class Writer(Protocol[C_co]):
    """Where the grouped transaction runs: `SqliteDatabase`, `PgScopedDatabase`."""

    async def write(self, fn: Callable[[C_co], T], /) -> T: ...


class WriteGroup(Generic[C]):
    """Runs write operations submitted close together in one transaction, answering each alone.

    Each operation must validate before it writes: a StorageError it raises is that
    operation's answer and must leave no partial change behind.
    """

    def __init__(self, db: Writer[C], max_group: int = MAX_GROUP) -> None:
        self._db = db
        self._max_group = max_group
        self._pending: list[tuple[Callable[[C], Any], asyncio.Future[Any]]] = []
        self._task: asyncio.Task[None] | None = None

    async def run(self, op: Callable[[C], T]) -> T:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._pending.append((op, future))
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._drain_after_a_turn(), name="store-writes")
        # In flight until the caller resumes, as a statement awaited on a thread is: the test
        # harness's idleness must not fall between the request and a write run on the loop.
        with busy():
            return await future

    async def _drain_after_a_turn(self) -> None:
        """The group's transaction waits one turn of the loop, so that what the submitting turn
        woke joins it. A queue drain's functions return together (their thread's outcomes are
        settled at once): their tasks submit the deletes, and the last of them wakes the listener,
        whose next receive comes a turn later. Without the wait that receive had a transaction of
        its own, one per 16 messages; with it, 16 deletes and the receive commit together
        (benchmarks/README.md, "Twelfth pass")."""
        await asyncio.sleep(0)
        await self._drain()

    async def _drain(self) -> None:
        while self._pending:
            batch, self._pending = self._pending[:self._max_group], self._pending[self._max_group:]

            def apply(conn: C, batch: list[Any] = batch) -> list[tuple[bool, Any]]:
                outcomes: list[tuple[bool, Any]] = []
                for op, _ in batch:
                    try:
                        outcomes.append((True, op(conn)))
                    except StorageError as exc:
                        outcomes.append((False, exc))
                return outcomes

            try:
                outcomes = await self._db.write(apply)
            except Exception as exc:  # the whole transaction failed: every caller gets the error
                error = exc if isinstance(exc, StorageError) else StorageError(str(exc))
                for _, future in batch:
                    if not future.done():
                        future.set_exception(error)
                continue
            for (_, future), (ok, value) in zip(batch, outcomes, strict=True):
                if future.done():
                    continue
                if ok:
                    future.set_result(value)
                else:
                    future.set_exception(value)
