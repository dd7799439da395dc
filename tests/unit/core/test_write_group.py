"""`WriteGroup`: writes submitted close together share one transaction, each answered alone."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from funchost.errors import StorageError
from funchost.storage.write_group import WriteGroup

T = TypeVar("T")


class RecordingWriter:
    """A transaction is `fn(conn)`; the names of the operations in each are kept."""

    def __init__(self) -> None:
        self.transactions: list[list[str]] = []

    async def write(self, fn: Callable[[list[str]], T], /) -> T:
        names: list[str] = []
        self.transactions.append(names)
        return fn(names)


def op(name: str) -> Callable[[list[str]], str]:
    def run(names: list[str]) -> str:
        names.append(name)
        return name
    return run


def failing(names: list[str]) -> None:
    raise StorageError("refused", code="MessageNotFound", status=404)


async def test_what_the_submitting_turn_wakes_joins_the_same_transaction() -> None:
    """As in a queue drain: a message's task submits its delete and wakes the listener, whose
    receive is submitted on the next turn; both commit together."""
    writer = RecordingWriter()
    group: WriteGroup[list[str]] = WriteGroup(writer)
    loop = asyncio.get_running_loop()
    answers: list[Any] = []

    def woken() -> None:  # runs on the turn after the delete was submitted
        answers.append(loop.create_task(group.run(op("receive"))))

    delete = loop.create_task(group.run(op("delete")))
    loop.call_soon(woken)
    assert await delete == "delete"
    assert await answers[0] == "receive"
    assert writer.transactions == [["delete", "receive"]]


async def test_each_operation_gets_its_own_answer_and_later_ones_a_new_transaction() -> None:
    writer = RecordingWriter()
    group: WriteGroup[list[str]] = WriteGroup(writer)
    first, refused = group.run(op("a")), group.run(failing)
    results = await asyncio.gather(first, refused, return_exceptions=True)
    assert results[0] == "a"
    assert isinstance(results[1], StorageError) and results[1].status == 404
    assert await group.run(op("b")) == "b"
    assert writer.transactions == [["a"], ["b"]]
