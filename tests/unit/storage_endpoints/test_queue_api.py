"""The Queue REST API through the official SDK and raw HTTP."""

from __future__ import annotations

import httpx
import pytest
from azure.core.exceptions import HttpResponseError, ResourceExistsError, ResourceNotFoundError
from azure.storage.queue.aio import QueueClient, QueueServiceClient
from tests.unit.storage_endpoints.signing import signed_headers

from funchost.settings.connections import DEVSTORE_ACCOUNT


@pytest.fixture
async def queue(served):  # type: ignore[no-untyped-def]
    async with QueueClient.from_connection_string(served.connection_string, "tasks") as client:
        await client.create_queue(metadata={"owner": "me"})
        yield client


async def test_put_wakes_listeners_unless_invisible(served, queue):
    await queue.send_message("now")
    await queue.send_message("later", visibility_timeout=30)
    assert served.woken == [(DEVSTORE_ACCOUNT, "tasks")]
    [message] = [m async for m in queue.receive_messages()]
    await queue.update_message(message, visibility_timeout=0)
    assert served.woken == [(DEVSTORE_ACCOUNT, "tasks")] * 2


async def test_message_lifecycle(served, queue, clock):
    sent = await queue.send_message("héllo <xml> & \"quotes\"", time_to_live=-1)
    assert sent.expires_on.year == 9999
    [peeked] = await queue.peek_messages()
    assert (peeked.content, peeked.dequeue_count, peeked.pop_receipt) == (sent.content, 0, None)
    received = await queue.receive_message(visibility_timeout=60)
    assert received.dequeue_count == 1 and received.content == sent.content
    assert await queue.receive_message() is None  # invisible for 60 s
    updated = await queue.update_message(received, visibility_timeout=0, content="v2")
    assert updated.pop_receipt != received.pop_receipt
    with pytest.raises(HttpResponseError):
        await queue.delete_message(received.id, received.pop_receipt)  # the old receipt is stale
    again = await queue.receive_message(visibility_timeout=10)
    assert (again.content, again.dequeue_count) == ("v2", 2)
    await clock.advance(11)  # visibility timeouts really expire (on the store's clock)
    third = await queue.receive_message()
    assert third.id == again.id and third.dequeue_count == 3
    await queue.delete_message(third)
    with pytest.raises(ResourceNotFoundError):
        await queue.delete_message(third)
    assert (await queue.get_queue_properties()).approximate_message_count == 0


async def test_queues_metadata_listing_and_clear(served, queue):
    url = f"{served.url('queue')}/tasks"
    async with httpx.AsyncClient() as client:
        same = await client.put(url, headers=signed_headers("PUT", url, b"", "queue", {"x-ms-meta-owner": "me"}))
        other = await client.put(url, headers=signed_headers("PUT", url, b"", "queue", {"x-ms-meta-owner": "you"}))
    assert (same.status_code, other.status_code, other.headers["x-ms-error-code"]) == (204, 409, "QueueAlreadyExists")
    with pytest.raises(ResourceExistsError):  # the SDK raises for both
        await queue.create_queue(metadata={"owner": "someone else"})
    await queue.set_queue_metadata({"stage": "2"})
    assert (await queue.get_queue_properties()).metadata == {"stage": "2"}
    async with QueueServiceClient.from_connection_string(served.connection_string) as service:
        for name in ("alpha", "beta", "gamma"):
            await service.create_queue(name)
        pages = service.list_queues(include_metadata=True, results_per_page=2).by_page()
        names = [[(q.name, q.metadata) async for q in page] async for page in pages]
    assert names == [[("alpha", {}), ("beta", {})], [("gamma", {}), ("tasks", {"stage": "2"})]]
    for n in range(3):
        await queue.send_message(str(n))
    await queue.clear_messages()
    assert await queue.peek_messages(max_messages=32) == []


async def test_bad_input(served, queue):
    with pytest.raises(HttpResponseError) as info:
        await queue.send_message("x" * (64 * 1024 + 1))
    assert (info.value.status_code, info.value.error_code) == (413, "RequestBodyTooLarge")
    with pytest.raises(HttpResponseError) as info:
        await queue.receive_messages(max_messages=33, messages_per_page=33).__anext__()
    assert (info.value.status_code, info.value.error_code) == (400, "OutOfRangeQueryParameterValue")
    async with QueueClient.from_connection_string(served.connection_string, "Bad_Name") as bad:
        with pytest.raises(HttpResponseError) as info:
            await bad.create_queue()
    assert info.value.error_code == "InvalidResourceName"
    url = f"{served.url('queue')}/tasks/messages"
    async with httpx.AsyncClient() as client:
        for body in (b"<QueueMessage><MessageText>x", b"<Other/>", b"not xml at all"):
            response = await client.post(url, content=body, headers=signed_headers("POST", url, body, "queue"))
            assert (response.status_code, response.headers["x-ms-error-code"]) == (400, "InvalidXmlDocument")
        text_url = url + "?visibilitytimeout=soon"
        body = b"<QueueMessage><MessageText>x</MessageText></QueueMessage>"
        response = await client.post(text_url, content=body, headers=signed_headers("POST", text_url, body, "queue"))
        assert response.headers["x-ms-error-code"] == "InvalidQueryParameterValue"
        acl_url = f"{served.url('queue')}/tasks?comp=acl"
        body = b"<SignedIdentifiers/>"
        response = await client.put(acl_url, content=body, headers=signed_headers("PUT", acl_url, body, "queue"))
        assert (response.status_code, response.headers["x-ms-error-code"]) == (501, "NotImplemented")
    assert await queue.peek_messages() == []  # nothing half-written
