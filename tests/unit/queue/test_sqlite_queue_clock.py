"""SqliteQueueService rules that need the clock under control (visibility, expiry)."""

from __future__ import annotations

import pytest

from funchost.clock import ManualClock
from funchost.errors import InvalidInput
from funchost.storage.sqlite.queues import SqliteQueueService


@pytest.fixture
async def service(tmp_path):
    clock = ManualClock()
    svc = SqliteQueueService(tmp_path / "acct", "acct", clock)
    await svc.create_queue("qq1")
    svc.clock = clock
    yield svc
    await svc.aclose()


async def test_visibility_lapses_exactly(service):
    await service.put_message("qq1", "x")
    [got] = await service.get_messages("qq1", visibility_timeout=30)
    await service.clock.advance(29.9)
    assert await service.get_messages("qq1") == []
    await service.clock.advance(0.1)
    [again] = await service.get_messages("qq1")
    assert again.dequeue_count == 2


async def test_put_visibility_delay(service):
    await service.put_message("qq1", "later", visibility_timeout=100)
    await service.clock.advance(99)
    assert await service.peek_messages("qq1") == []
    await service.clock.advance(1)
    assert [m.content for m in await service.peek_messages("qq1")] == ["later"]


async def test_expired_messages_disappear_and_are_purged(service):
    await service.put_message("qq1", "short", time_to_live=10)
    await service.put_message("qq1", "long", time_to_live=-1)
    await service.clock.advance(10)
    assert [m.content for m in await service.peek_messages("qq1", max_messages=32)] == ["long"]
    assert (await service.get_queue_properties("qq1")).approximate_message_count == 1
    [got] = await service.get_messages("qq1", max_messages=32)
    assert got.content == "long"
    rows = service._db.call(lambda c: c.execute("SELECT count(*) FROM messages").fetchone()[0])
    assert rows == 1  # the expired row was purged by the receive


async def test_update_cannot_outlive_expiry(service):
    await service.put_message("qq1", "x", time_to_live=60)
    [got] = await service.get_messages("qq1", visibility_timeout=5)
    with pytest.raises(InvalidInput):
        await service.update_message("qq1", got.id, got.pop_receipt, visibility_timeout=120)


async def test_receive_order_follows_visibility(service):
    await service.put_message("qq1", "first")
    await service.put_message("qq1", "second")
    [a] = await service.get_messages("qq1", visibility_timeout=5)
    assert a.content == "first"
    await service.clock.advance(5)
    batch = await service.get_messages("qq1", max_messages=2)
    assert sorted(m.content for m in batch) == ["first", "second"]


async def test_get_uses_the_visibility_index(service):
    plan = service._db.call(lambda c: c.execute(
        "EXPLAIN QUERY PLAN SELECT seq FROM messages WHERE queue = ? AND visible_at <= ?"
        " AND (expires_at IS NULL OR expires_at > ?) ORDER BY visible_at, seq LIMIT 32", ("qq1", 0, 0)).fetchall())
    text = " ".join(str(tuple(r)) for r in plan)
    assert "messages_visible" in text and "SCAN messages" not in text
