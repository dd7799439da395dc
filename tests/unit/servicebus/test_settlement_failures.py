"""A settlement or lock renewal whose store call fails for good (the SDK's retries spent: on
PostgreSQL, a restart longer than the retries) is logged as the SDK's processor reports it to the
error handler; the message is delivered again once its lock lapses. It never escapes as an
exception nobody retrieves, and a failed renewal does not end the renewals."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from types import SimpleNamespace

import pytest

from funchost.clock import ManualClock
from funchost.errors import StorageError
from funchost.invocation.contracts import InvocationResult
from funchost.storage.servicebus import ReceivedMessage
from funchost.triggers.servicebus.processor import LockRenewal, Settler

RESTARTING = StorageError("cannot reach PostgreSQL at db:5432: the database system is shutting down",
                          code="ServerBusy", status=503)


class _Broker:
    def __init__(self, clock: ManualClock, failures: int) -> None:
        self.clock, self.failures, self.renewed = clock, failures, 0

    async def complete(self, path: str, token: str) -> None:
        raise RESTARTING

    async def abandon(self, path: str, token: str) -> None:
        raise RESTARTING

    async def renew_lock(self, path: str, token: str):  # type: ignore[no-untyped-def]
        if self.failures:
            self.failures -= 1
            raise RESTARTING
        self.renewed += 1
        return self.clock.now() + timedelta(seconds=30)


def _message(clock: ManualClock) -> ReceivedMessage:
    return ReceivedMessage(body=b"x", message_id="m1", sequence_number=1, enqueued_time=clock.now(),
                           expires_at=None, delivery_count=1, lock_token="t1",
                           locked_until=clock.now() + timedelta(seconds=30), state="active")


@pytest.mark.parametrize("succeeded", [True, False])
async def test_a_failed_settlement_is_logged_and_does_not_raise(succeeded: bool, caplog: pytest.LogCaptureFixture) -> None:
    clock = ManualClock()
    settler = Settler(SimpleNamespace(name="work"), None, _Broker(clock, 0), "work", "localhost", auto_complete=True)  # type: ignore[arg-type]
    result = InvocationResult("i1", "work", succeeded, error=None if succeeded else RuntimeError("boom"))
    with caplog.at_level(logging.ERROR, logger="funchost.servicebus"):
        await settler.settle([_message(clock)], result)
    action = "Complete" if succeeded else "Abandon"
    [line] = [r.getMessage() for r in caplog.records if f"Action={action}" in r.getMessage()]
    assert "ServerBusy" in line and "delivered again once its lock lapses" in line
    assert (settler.completed, settler.abandoned) == (0, 0)


async def test_a_renewal_that_fails_on_the_store_is_tried_again() -> None:
    clock = ManualClock()
    broker = _Broker(clock, failures=1)
    renewal = LockRenewal(broker, "work", _message(clock), clock, max_duration=None)  # type: ignore[arg-type]
    for _ in range(4):
        await asyncio.sleep(0)
        deadlines = clock.pending_deadlines()
        if deadlines:
            await clock.advance(deadlines[0])
        if broker.renewed:
            break
    assert broker.renewed == 1  # the renewal after the failure went on
    await renewal.stop()
