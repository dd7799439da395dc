"""The queue's per-message statements on asyncpg (`storage.postgres.hot`) on a real server: they
answer exactly as the same statements on psycopg (where asyncpg is not used), and a connection the
server ended is a retryable error once, then replaced (the queue service's retry passes it)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import psycopg
import pytest
from tests.support.postgres_hosts import host

from funchost.clock import ManualClock
from funchost.errors import StorageError
from funchost.storage.postgres import queue_sql
from funchost.storage.postgres.hot import HotStatements

pytestmark = pytest.mark.postgres


async def _transcript(queues: Any, clock: ManualClock) -> list[Any]:
    """Every per-message statement and the misses it tells apart, as what a caller sees."""
    seen: list[Any] = []

    async def outcome(call: Any) -> Any:
        try:
            return await call
        except StorageError as exc:
            return (type(exc).__name__, exc.status)

    await queues.create_queue("q")
    for i in range(20):
        await queues.put_message("q", f"m{i}", time_to_live=600 if i % 2 else None)
    put = await queues.put_message("q", "later", visibility_timeout=30)
    seen.append((put.dequeue_count, put.next_visible_time - put.insertion_time))
    first = await queues.get_messages("q", max_messages=8, visibility_timeout=60)
    seen.append([(m.content, m.dequeue_count, m.expiration_time - m.insertion_time) for m in first])
    receipt = await queues.update_message("q", first[0].id, first[0].pop_receipt or "", visibility_timeout=0)
    seen.append(receipt.next_visible_time == clock.now().replace(microsecond=0))
    seen.append(await outcome(queues.update_message("q", first[1].id, "stale", visibility_timeout=5)))
    deletes = [queues.delete_message("q", m.id, m.pop_receipt or "") for m in first[2:]]
    deletes.append(queues.delete_message("q", first[1].id, "stale"))
    deletes.append(queues.delete_message("q", first[2].id, first[2].pop_receipt or ""))  # the same one twice
    deletes.append(queues.delete_message("q", first[1].id[:-1] + "f", first[1].pop_receipt or ""))
    deletes.append(queues.delete_message("nosuchqueue", first[1].id, first[1].pop_receipt or ""))
    seen.append(sorted(map(repr, await asyncio.gather(*(outcome(d) for d in deletes)))))
    await clock.advance(31)
    again = await queues.get_messages("q", max_messages=32, visibility_timeout=60)
    seen.append(sorted((m.content, m.dequeue_count) for m in again))
    await clock.advance(700)  # the messages with a ten-minute time to live are gone
    seen.append(sorted(m.content for m in await queues.get_messages("q", max_messages=32)))
    seen.append(await outcome(queues.get_messages("nosuchqueue")))
    seen.append(await outcome(queues.put_message("nosuchqueue", "x")))
    return seen


async def test_the_per_message_statements_answer_on_asyncpg_as_on_psycopg(
        tmp_path: Path, postgres_dsn: str, postgres_schema: str, monkeypatch: pytest.MonkeyPatch) -> None:
    hot_clock, plain_clock = ManualClock(), ManualClock()
    hot_host = host(tmp_path, "hot", postgres_dsn, postgres_schema + "_hot", hot_clock)
    assert hot_host.database._hot is not None  # made (lazily) before asyncpg is turned off below
    monkeypatch.setattr(HotStatements, "for_config", classmethod(lambda cls, config, role: None))
    plain_host = host(tmp_path, "plain", postgres_dsn, postgres_schema + "_plain", plain_clock)
    try:
        hot_queues, plain_queues = hot_host.queues(), plain_host.queues()
        on_asyncpg = await _transcript(hot_queues, hot_clock)
        on_psycopg = await _transcript(plain_queues, plain_clock)
        assert on_asyncpg == on_psycopg
        assert {"('MessageNotFound', 404)", "('PopReceiptMismatch', 400)", "('QueueNotFound', 404)"} \
            <= set(on_asyncpg[4])  # the misses were told apart
        database = hot_host.database
        assert database._hot is not None and database._hot._open  # the statements did go through asyncpg
        assert plain_host.database._hot is None
    finally:
        await hot_host.aclose()
        await plain_host.aclose()


async def test_a_connection_the_server_ended_fails_one_statement_and_is_replaced(
        tmp_path: Path, postgres_dsn: str, postgres_schema: str) -> None:
    a = host(tmp_path, "a", postgres_dsn, postgres_schema)
    try:
        queues = a.queues()
        await queues.create_queue("q")
        await queues.put_message("q", "one")
        hot = a.database._hot
        assert hot is not None and len(hot._idle) == 1
        [ended] = hot._idle
        _terminate(postgres_dsn, ended)
        with pytest.raises(StorageError) as caught:
            await hot.rows(queue_sql.EXISTS, {"a": queues.account_name, "n": "q"})
        assert caught.value.status == 503  # retryable: the queue service tries it again
        assert ended not in hot._idle and ended not in hot._open
        replaced = await hot._connect()
        hot._idle.append(replaced)
        _terminate(postgres_dsn, replaced)
        await queues.put_message("q", "two")  # failed once on the ended connection, then retried on a new one
        assert replaced not in hot._open
        assert sorted(m.content for m in await queues.get_messages("q", max_messages=8)) == ["one", "two"]
    finally:
        await a.aclose()


def _terminate(dsn: str, conn: Any) -> None:
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (conn.get_server_pid(),))


async def test_a_statement_cancelled_mid_way_drops_its_connection_and_the_next_one_runs(
        tmp_path: Path, postgres_dsn: str, postgres_schema: str) -> None:
    a = host(tmp_path, "a", postgres_dsn, postgres_schema)
    try:
        hot = a.database._hot
        assert hot is not None
        sleeping = asyncio.ensure_future(hot.rows("SELECT pg_sleep(%(s)s)", {"s": 5}))
        await asyncio.sleep(0.3)
        [busy] = hot._open
        sleeping.cancel()  # the host stopping, a function timeout: the statement is left mid-way
        with pytest.raises(asyncio.CancelledError):
            await sleeping
        assert busy not in hot._open and busy not in hot._idle and busy.is_closed()
        assert [tuple(r) for r in await hot.rows("SELECT %(x)s::int + 1", {"x": 41})] == [(42,)]
    finally:
        await a.aclose()
