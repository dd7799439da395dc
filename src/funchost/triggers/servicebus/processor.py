"""Per-message rules of the Service Bus trigger: lock renewal while the function runs, then
settlement as the extension and the SDK processor do it (shared spec §1.3):

| function result | autoComplete true | autoComplete false                        |
|-----------------|-------------------|-------------------------------------------|
| success         | Complete          | nothing: the lock expires, redelivery     |
| failure         | Abandon (at once) | Abandon (at once)                         |

Abandon increments DeliveryCount; the broker dead-letters once MaxDeliveryCount is reached.
A lost lock (MessageLockLost / SessionLockLost) at settlement is logged, not raised: the message
comes back and is delivered again, as on Azure.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from funchost.clock import Clock
from funchost.errors import StorageError
from funchost.indexing.spec import FunctionSpec
from funchost.invocation.contracts import InvocationRequest, InvocationResult
from funchost.runtime.contracts import Runtime
from funchost.storage.servicebus import (
    MessageLockLost,
    ReceivedMessage,
    ServiceBusBroker,
    SessionLockLost,
)

log = logging.getLogger("funchost.servicebus")

MAX_RENEW_BUFFER = 10.0  # seconds before expiry the SDK renews at the latest
LOST = (MessageLockLost, SessionLockLost)


def renew_delay(remaining: float) -> float:
    """SDK ReceiverManager.CalculateRenewDelay: renew min(remaining/2, 10 s) before expiry."""
    if remaining < 0.4:
        return 0.0
    return remaining - min(remaining / 2, MAX_RENEW_BUFFER)


class LockRenewal:
    """Renews one message's lock until stopped or `max_duration` (maxAutoLockRenewalDuration) passes."""

    def __init__(self, broker: ServiceBusBroker, path: str, message: ReceivedMessage, clock: Clock,
                 max_duration: float | None) -> None:
        self._broker = broker
        self._path = path
        self._token = message.lock_token or ""
        self._locked_until = message.locked_until
        self._clock = clock
        self._max = max_duration
        self.renewals = 0
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"sb-renew:{path}")

    async def _run(self) -> None:
        started = self._clock.monotonic()
        while self._locked_until is not None:
            remaining = (self._locked_until - self._clock.now()).total_seconds()
            delay = renew_delay(remaining)
            if self._max is not None and self._clock.monotonic() + delay - started >= self._max:
                return  # renewing beyond maxAutoLockRenewalDuration is not allowed
            await self._clock.sleep(delay)
            try:
                self._locked_until = await self._broker.renew_lock(self._path, self._token)
            except LOST:
                return
            except StorageError as exc:  # the broker's, or its store's (a PostgreSQL restart's 503)
                log.warning("Lock renewal on '%s' failed: %s", self._path, exc.code)
                await self._clock.sleep(1.0)
                continue
            self.renewals += 1

    async def stop(self) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)


class Settler:
    """Invokes the function for a message or batch and settles the outcome."""

    def __init__(self, function: FunctionSpec, runtime: Runtime, broker: ServiceBusBroker, path: str,
                 endpoint: str, auto_complete: bool) -> None:
        self.function = function
        self.runtime = runtime
        self.broker = broker
        self.path = path
        self.endpoint = endpoint
        self.auto_complete = auto_complete
        self.completed = 0
        self.abandoned = 0

    async def invoke(self, request: InvocationRequest) -> InvocationResult:
        return await self.runtime.invoker.invoke(request)

    async def settle(self, messages: Sequence[ReceivedMessage], result: InvocationResult) -> None:
        if not result.succeeded:
            log.error("Message processing error (Action=ProcessMessageCallback, EntityPath=%s, Endpoint=%s)",
                      self.path, self.endpoint,
                      extra={"event": "ServiceBusProcessingError", "function": self.function.name,
                             "error": result.error_message})
            await asyncio.gather(*(self._settle_one("abandon", m) for m in messages))
        elif self.auto_complete:
            await asyncio.gather(*(self._settle_one("complete", m) for m in messages))

    async def _settle_one(self, action: str, message: ReceivedMessage) -> None:
        token = message.lock_token or ""
        try:
            if action == "complete":
                await self.broker.complete(self.path, token)
                self.completed += 1
            else:
                await self.broker.abandon(self.path, token)
                self.abandoned += 1
        except LOST as exc:
            log.warning("Message processing error (Action=%s, EntityPath=%s, Endpoint=%s): %s; message %s will "
                        "be delivered again", action.capitalize(), self.path, self.endpoint, exc.code,
                        message.message_id)
        except StorageError as exc:  # the SDK's retries spent: its processor hands this to the error handler
            log.error("Message processing error (Action=%s, EntityPath=%s, Endpoint=%s): %s; message %s will "
                      "be delivered again once its lock lapses", action.capitalize(), self.path, self.endpoint,
                      exc, message.message_id)
