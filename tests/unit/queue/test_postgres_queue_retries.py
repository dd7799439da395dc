"""The PostgreSQL queue service tries a statement again after a failure that passes by itself,
as the Azure SDKs' default retry policy does for the host's queue client: a server restart in the
middle of a drain does not fail the deletes of messages whose functions completed (those would
run again once their visibility lapsed). Without a server: the database is faked."""

from __future__ import annotations

from typing import Any

import pytest

from funchost.clock import ManualClock
from funchost.errors import MessageNotFound, StorageError
from funchost.storage.postgres import queue_sql
from funchost.storage.postgres.queues import PostgresQueueService
from funchost.storage.postgres.retry import RETRY_DELAYS

RESTARTING = StorageError("cannot reach PostgreSQL at db:5432: the database system is shutting down",
                          code="ServerBusy", status=503)


class _FailingDatabase:
    """Each statement fails with `failures` in turn, then deletes what it was asked to."""

    def __init__(self, failures: list[StorageError]) -> None:
        self.failures = failures
        self.statements: list[str] = []

    def migrate(self, component: str, migrations: object) -> None:
        pass

    async def hot_rows(self, statement: str, args: dict[str, Any]) -> list[Any]:
        self.statements.append(statement)
        if self.failures:
            raise self.failures.pop(0)
        assert statement == queue_sql.DELETE
        return [("q", 1)]


class _RecordingClock(ManualClock):
    def __init__(self) -> None:
        super().__init__()
        self.slept: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


MESSAGE_ID = "0123456789abcdef01234567000000000001"


async def test_a_delete_during_a_restart_is_tried_again_and_succeeds() -> None:
    database, clock = _FailingDatabase([RESTARTING, RESTARTING, RESTARTING]), _RecordingClock()
    queues = PostgresQueueService(database, "devstoreaccount1", clock)  # type: ignore[arg-type]
    await queues.delete_message("q", MESSAGE_ID, "receipt")
    assert database.statements == [queue_sql.DELETE] * 4
    assert len(clock.slept) == 3
    for slept, delay in zip(clock.slept, RETRY_DELAYS, strict=True):
        assert delay * 0.8 <= slept <= delay * 1.2  # exponential from 0.8 s, with jitter


async def test_the_fourth_failure_reaches_the_caller() -> None:
    database, clock = _FailingDatabase([RESTARTING] * 4), _RecordingClock()
    queues = PostgresQueueService(database, "devstoreaccount1", clock)  # type: ignore[arg-type]
    with pytest.raises(StorageError) as caught:
        await queues.delete_message("q", MESSAGE_ID, "receipt")
    assert caught.value.status == 503 and len(database.statements) == 4


@pytest.mark.parametrize("failure", [StorageError("PostgreSQL: syntax error", code="InternalError", status=500),
                                     MessageNotFound("the specified message does not exist")])
async def test_what_does_not_pass_by_itself_is_not_tried_again(failure: StorageError) -> None:
    database, clock = _FailingDatabase([failure]), _RecordingClock()
    queues = PostgresQueueService(database, "devstoreaccount1", clock)  # type: ignore[arg-type]
    with pytest.raises(type(failure)):
        await queues.delete_message("q", MESSAGE_ID, "receipt")
    assert database.statements == [queue_sql.DELETE] and clock.slept == []
