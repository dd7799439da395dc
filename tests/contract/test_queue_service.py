"""Queue service rules every backend must follow (Azure Queue storage REST semantics)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import pytest

from funchost.errors import (
    InvalidInput,
    MessageNotFound,
    PopReceiptMismatch,
    QueueAlreadyExists,
    QueueNotFound,
    RequestBodyTooLarge,
)

SLACK = timedelta(seconds=2)  # the service reports times with second precision


def qname(prefix: str = "q") -> str:
    return f"{prefix}{uuid.uuid4().hex[:12]}"


# -- queues ---------------------------------------------------------------------------------------


async def test_create_is_idempotent_with_same_metadata(queue_service):
    name = qname()
    assert await queue_service.create_queue(name, {"team": "a"}) is True
    assert await queue_service.create_queue(name, {"team": "a"}) is False
    assert await queue_service.queue_exists(name)


async def test_create_with_different_metadata_conflicts(queue_service):
    name = qname()
    await queue_service.create_queue(name, {"team": "a"})
    with pytest.raises(QueueAlreadyExists) as info:
        await queue_service.create_queue(name, {"team": "b"})
    assert info.value.status == 409


@pytest.mark.parametrize("bad", ["ab", "a" * 64, "Upper", "has_underscore", "-start", "end-", "dou--ble", "sp ace"])
async def test_invalid_queue_names_are_rejected(queue_service, bad):
    with pytest.raises(InvalidInput) as info:
        await queue_service.create_queue(bad)
    assert info.value.status == 400
    expected = "OutOfRangeInput" if not 3 <= len(bad) <= 63 else "InvalidResourceName"
    assert info.value.code == expected


@pytest.mark.parametrize("good", ["abc", "a" * 63, "a-b-c", "0queue9"])
async def test_valid_queue_names_are_accepted(queue_service, good):
    assert await queue_service.create_queue(good) in (True, False)
    await queue_service.delete_queue(good)


@pytest.mark.parametrize("bad", ["1abc", "has-dash", "sp ace"])
async def test_invalid_metadata_names_are_rejected(queue_service, bad):
    name = qname()
    with pytest.raises(InvalidInput) as info:
        await queue_service.create_queue(name, {bad: "x"})
    assert info.value.status == 400
    assert not await queue_service.queue_exists(name)
    await queue_service.create_queue(name)
    with pytest.raises(InvalidInput):
        await queue_service.set_queue_metadata(name, {bad: "x"})


async def test_delete_queue_and_missing_queue(queue_service):
    name = qname()
    await queue_service.create_queue(name)
    await queue_service.put_message(name, "x")
    await queue_service.delete_queue(name)
    assert not await queue_service.queue_exists(name)
    with pytest.raises(QueueNotFound):
        await queue_service.delete_queue(name)
    with pytest.raises(QueueNotFound):
        await queue_service.put_message(name, "x")
    with pytest.raises(QueueNotFound):
        await queue_service.get_messages(name)
    with pytest.raises(QueueNotFound):
        await queue_service.get_queue_properties(name)


async def test_list_queues_by_prefix(queue_service):
    prefix = qname("lst")
    names = [f"{prefix}-{i}" for i in range(3)]
    for name in names:
        await queue_service.create_queue(name)
    await queue_service.create_queue(qname("other"))
    assert sorted(await queue_service.list_queues(prefix)) == names


async def test_properties_count_and_metadata(queue_service):
    name = qname()
    await queue_service.create_queue(name, {"owner": "me"})
    for i in range(3):
        await queue_service.put_message(name, f"m{i}")
    props = await queue_service.get_queue_properties(name)
    assert props.approximate_message_count == 3
    assert dict(props.metadata) == {"owner": "me"}
    await queue_service.set_queue_metadata(name, {"owner": "you"})
    assert dict((await queue_service.get_queue_properties(name)).metadata) == {"owner": "you"}


# -- put ------------------------------------------------------------------------------------------


async def test_put_returns_message_with_receipt_and_times(queue_service):
    name = qname()
    await queue_service.create_queue(name)
    msg = await queue_service.put_message(name, "hello")
    assert msg.id and msg.pop_receipt and msg.dequeue_count == 0
    ttl = msg.expiration_time - msg.insertion_time
    assert abs(ttl - timedelta(days=7)) <= SLACK


async def test_message_size_limit_is_on_utf8_bytes(queue_service):
    name = qname()
    await queue_service.create_queue(name)
    await queue_service.put_message(name, "a" * 65536)
    with pytest.raises(RequestBodyTooLarge):
        await queue_service.put_message(name, "a" * 65537)
    with pytest.raises(RequestBodyTooLarge):
        await queue_service.put_message(name, "é" * 32769)  # 65538 bytes, 32769 characters


async def test_put_with_visibility_delay_is_invisible(queue_service):
    name = qname()
    await queue_service.create_queue(name)
    msg = await queue_service.put_message(name, "later", visibility_timeout=60)
    assert abs(msg.next_visible_time - msg.insertion_time - timedelta(seconds=60)) <= SLACK
    assert await queue_service.get_messages(name) == []
    assert await queue_service.peek_messages(name) == []


@pytest.mark.parametrize("kwargs", [
    {"visibility_timeout": -1},
    {"visibility_timeout": 7 * 24 * 3600 + 1},
    {"time_to_live": 0},
    {"time_to_live": 10, "visibility_timeout": 10},
    {"time_to_live": 10, "visibility_timeout": 20},
])
async def test_put_out_of_range_arguments(queue_service, kwargs):
    name = qname()
    await queue_service.create_queue(name)
    with pytest.raises(InvalidInput) as info:
        await queue_service.put_message(name, "x", **kwargs)
    assert info.value.status == 400


async def test_ttl_minus_one_never_expires(queue_service):
    name = qname()
    await queue_service.create_queue(name)
    msg = await queue_service.put_message(name, "forever", time_to_live=-1)
    assert msg.expiration_time is None or msg.expiration_time.year >= 9999
    got = await queue_service.get_messages(name)
    assert got[0].expiration_time is None or got[0].expiration_time.year >= 9999


# -- get / peek -----------------------------------------------------------------------------------


async def test_get_increments_dequeue_count_and_hides(queue_service):
    name = qname()
    await queue_service.create_queue(name)
    put = await queue_service.put_message(name, "body")
    [got] = await queue_service.get_messages(name, visibility_timeout=30)
    assert got.id == put.id and got.content == "body" and got.dequeue_count == 1
    assert got.pop_receipt and got.pop_receipt != put.pop_receipt
    assert abs(got.next_visible_time - got.insertion_time - timedelta(seconds=30)) <= SLACK + (
        got.next_visible_time - got.next_visible_time)  # inserted just now
    assert await queue_service.get_messages(name) == []
    props = await queue_service.get_queue_properties(name)
    assert props.approximate_message_count == 1  # invisible messages still count


async def test_get_batch_limits(queue_service):
    name = qname()
    await queue_service.create_queue(name)
    for i in range(40):
        await queue_service.put_message(name, str(i))
    batch = await queue_service.get_messages(name, max_messages=32)
    assert len(batch) == 32
    assert len({m.id for m in batch}) == 32
    with pytest.raises(InvalidInput):
        await queue_service.get_messages(name, max_messages=33)
    with pytest.raises(InvalidInput):
        await queue_service.get_messages(name, max_messages=0)
    for bad in (0, 7 * 24 * 3600 + 1):
        with pytest.raises(InvalidInput):
            await queue_service.get_messages(name, visibility_timeout=bad)


async def test_concurrent_gets_never_share_a_message(queue_service):
    name = qname()
    await queue_service.create_queue(name)
    for i in range(50):
        await queue_service.put_message(name, str(i))
    batches = await asyncio.gather(*(queue_service.get_messages(name, max_messages=8) for _ in range(10)))
    ids = [m.id for batch in batches for m in batch]
    assert len(ids) == 50 and len(set(ids)) == 50


async def test_peek_does_not_change_the_message(queue_service):
    name = qname()
    await queue_service.create_queue(name)
    await queue_service.put_message(name, "peeked")
    [first] = await queue_service.peek_messages(name)
    [second] = await queue_service.peek_messages(name, max_messages=32)
    assert first.content == "peeked" and first.dequeue_count == 0 and first.pop_receipt is None
    assert second.id == first.id and second.dequeue_count == 0
    [got] = await queue_service.get_messages(name)
    assert got.dequeue_count == 1


# -- update / delete ------------------------------------------------------------------------------


async def test_update_changes_receipt_visibility_and_content(queue_service):
    name = qname()
    await queue_service.create_queue(name)
    await queue_service.put_message(name, "v1")
    [got] = await queue_service.get_messages(name, visibility_timeout=60)
    receipt = await queue_service.update_message(name, got.id, got.pop_receipt, visibility_timeout=0, content="v2")
    assert receipt.pop_receipt != got.pop_receipt
    with pytest.raises(PopReceiptMismatch) as info:
        await queue_service.delete_message(name, got.id, got.pop_receipt)
    assert info.value.status == 400
    [again] = await queue_service.get_messages(name)
    assert again.id == got.id and again.content == "v2" and again.dequeue_count == 2


async def test_update_keeps_message_invisible_for_the_new_timeout(queue_service):
    name = qname()
    await queue_service.create_queue(name)
    await queue_service.put_message(name, "x")
    [got] = await queue_service.get_messages(name, visibility_timeout=1)
    receipt = await queue_service.update_message(name, got.id, got.pop_receipt, visibility_timeout=120)
    assert receipt.next_visible_time - got.next_visible_time >= timedelta(seconds=110)
    assert await queue_service.get_messages(name) == []


async def test_delete_checks_pop_receipt_and_existence(queue_service):
    name = qname()
    await queue_service.create_queue(name)
    await queue_service.put_message(name, "x")
    [got] = await queue_service.get_messages(name)
    with pytest.raises(PopReceiptMismatch):
        await queue_service.delete_message(name, got.id, "not-the-receipt")
    await queue_service.delete_message(name, got.id, got.pop_receipt)
    with pytest.raises(MessageNotFound) as info:
        await queue_service.delete_message(name, got.id, got.pop_receipt)
    assert info.value.status == 404
    with pytest.raises(MessageNotFound):
        await queue_service.update_message(name, got.id, got.pop_receipt, visibility_timeout=0)
    assert (await queue_service.get_queue_properties(name)).approximate_message_count == 0


async def test_deletes_sent_together_are_answered_one_by_one(queue_service):
    name, other = qname(), qname()
    await queue_service.create_queue(name)
    for text in ("a", "b", "c"):
        await queue_service.put_message(name, text)
    a, b, c = sorted(await queue_service.get_messages(name, max_messages=3), key=lambda m: m.content)
    answers = await asyncio.gather(
        queue_service.delete_message(name, a.id, a.pop_receipt),
        queue_service.delete_message(name, b.id, "not-the-receipt"),
        queue_service.delete_message(name, a.id, a.pop_receipt),  # the same message again
        queue_service.delete_message(other, c.id, c.pop_receipt),  # no such queue
        queue_service.delete_message(name, c.id, c.pop_receipt),
        return_exceptions=True)
    twice = sorted((answers[0], answers[2]), key=lambda answer: answer is not None)  # in either order
    assert twice[0] is None and isinstance(twice[1], MessageNotFound)
    assert isinstance(answers[1], PopReceiptMismatch)
    assert isinstance(answers[3], QueueNotFound)
    assert answers[4] is None
    assert (await queue_service.get_queue_properties(name)).approximate_message_count == 1  # b


async def test_delete_with_put_receipt(queue_service):
    name = qname()
    await queue_service.create_queue(name)
    put = await queue_service.put_message(name, "x")
    await queue_service.delete_message(name, put.id, put.pop_receipt)
    assert await queue_service.peek_messages(name) == []


async def test_second_receiver_invalidates_first_receipt(queue_service):
    name = qname()
    await queue_service.create_queue(name)
    await queue_service.put_message(name, "x")
    [first] = await queue_service.get_messages(name, visibility_timeout=1)
    second: list = []
    for _ in range(40):  # wait (bounded) for the 1 s visibility to lapse
        second = await queue_service.get_messages(name)
        if second:
            break
        await asyncio.sleep(0.1)
    assert second and second[0].id == first.id and second[0].dequeue_count == 2
    with pytest.raises(PopReceiptMismatch):
        await queue_service.delete_message(name, first.id, first.pop_receipt)
    await queue_service.delete_message(name, second[0].id, second[0].pop_receipt)


async def test_clear_messages(queue_service):
    name = qname()
    await queue_service.create_queue(name)
    for i in range(5):
        await queue_service.put_message(name, str(i))
    await queue_service.get_messages(name)
    await queue_service.clear_messages(name)
    assert (await queue_service.get_queue_properties(name)).approximate_message_count == 0
    assert await queue_service.peek_messages(name) == []


async def test_oldest_insertion_time(queue_service):
    name = qname()
    await queue_service.create_queue(name)
    assert await queue_service.oldest_insertion_time(name) is None
    first = await queue_service.put_message(name, "first")
    await asyncio.sleep(1.1)  # insertion times have second precision on the service
    second = await queue_service.put_message(name, "second")
    assert second.insertion_time > first.insertion_time
    assert await queue_service.oldest_insertion_time(name) == first.insertion_time
