"""Activity completions sent to the server together (group commit).

A fan-out finishes many activities at once; one statement per completion would queue them on
the pool and pay a round trip and a transaction each. Completions made while a statement is
running wait for it and go together in the next one (at most MAX_GROUP), so a lone completion
goes at once and a burst costs a few statements. Each caller still learns whether its own lease
held (the server function returns the ids it delivered) and gets the instance its claim took.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from funchost.storage.durable import ActivityItem, Delivered, InstanceClaim, Outbound

MAX_GROUP = 256
NOT_DELIVERED = Delivered(False)


@dataclass(frozen=True)
class Completion:
    item: ActivityItem
    result: Outbound
    now: float
    claim: InstanceClaim | None = None


Deliver = Callable[[Sequence[Completion]], Awaitable[dict[int, Delivered]]]  # by activity id


class CompletionGroup:
    def __init__(self, deliver: Deliver) -> None:
        self._deliver = deliver
        self._pending: list[tuple[Completion, asyncio.Future[Delivered]]] = []
        self._draining: asyncio.Task[None] | None = None

    async def complete(self, completion: Completion) -> Delivered:
        future: asyncio.Future[Delivered] = asyncio.get_running_loop().create_future()
        self._pending.append((completion, future))
        if self._draining is None or self._draining.done():
            self._draining = asyncio.get_running_loop().create_task(self._drain(), name="durable-completions")
        return await future

    async def _drain(self) -> None:
        while self._pending:
            batch, self._pending = self._pending[:MAX_GROUP], self._pending[MAX_GROUP:]
            try:
                done = await self._deliver([completion for completion, _ in batch])
            except BaseException as exc:  # every caller of the batch gets the statement's error
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                if isinstance(exc, asyncio.CancelledError):
                    raise
                continue
            for completion, future in batch:
                if not future.done():
                    future.set_result(done.get(completion.item.id, NOT_DELIVERED))

    async def aclose(self) -> None:
        if self._draining is not None and not self._draining.done():
            await asyncio.gather(self._draining, return_exceptions=True)
