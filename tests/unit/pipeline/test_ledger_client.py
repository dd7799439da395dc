"""Transient vs business outcomes of the downstream call (pipeline.md 3.7)."""

from __future__ import annotations

import httpx
import pytest
from importjobs.ledger import LedgerClient, LedgerRefused, TransientError
from importjobs.ledgerbook import Caller, KeyReused, LedgerBook
from tests.support import pipeline as _support  # noqa: F401  (puts the app on sys.path)


def client(handler) -> LedgerClient:  # type: ignore[no-untyped-def]
    return LedgerClient("http://ledger.test/entries", 5, httpx.MockTransport(handler))


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504])
async def test_busy_or_failing_downstream_is_transient(status: int) -> None:
    with pytest.raises(TransientError):
        await client(lambda request: httpx.Response(status)).post({}, "job:op")


@pytest.mark.parametrize("error", [httpx.ReadTimeout("slow"), httpx.ConnectError("refused"),
                                   httpx.RemoteProtocolError("server disconnected")])
async def test_timeouts_and_disconnects_are_transient(error: Exception) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise error

    with pytest.raises(TransientError):
        await client(handler).post({}, "job:op")


async def test_a_refusal_is_a_business_error_and_the_key_is_sent() -> None:
    seen = {}

    def handler(request: httpx.Request) -> httpx.Response:
        seen["key"] = request.headers["Idempotency-Key"]
        return httpx.Response(422, text="unknown customer")

    with pytest.raises(LedgerRefused):
        await client(handler).post({}, "imp_1:ledger-post")
    assert seen["key"] == "imp_1:ledger-post"


WORKER = Caller("tenant-a", "importjobs-worker")


async def test_an_answer_for_another_key_or_body_is_refused_not_taken_as_the_result() -> None:
    """A ledger answering 200 with someone else's entry for this key (a forged pre-created
    entry) must not become the job's result."""
    forged = {"entryId": "led_x", "idempotencyKey": "imp_1:ledger-post", "entry": {"total": "0"}}
    with pytest.raises(LedgerRefused, match="not this job's"):
        await client(lambda request: httpx.Response(200, json=forged)).post({"total": "10"}, "imp_1:ledger-post")
    other_key = {"entryId": "led_y", "idempotencyKey": "imp_2:ledger-post", "entry": {"total": "10"}}
    with pytest.raises(LedgerRefused):
        await client(lambda request: httpx.Response(200, json=other_key)).post({"total": "10"}, "imp_1:ledger-post")
    mine = {"entryId": "led_z", "idempotencyKey": "imp_1:ledger-post", "entry": {"total": "10"}}
    assert await client(lambda request: httpx.Response(201, json=mine)).post({"total": "10"}, "imp_1:ledger-post") \
        == mine


def test_the_book_records_one_entry_per_key_and_body(tmp_path) -> None:  # type: ignore[no-untyped-def]
    book = LedgerBook(tmp_path / "ledger.db")
    first, created = book.record(WORKER, "k", {"a": 1})
    again, created_again = book.record(WORKER, "k", {"a": 1})
    assert created and not created_again and again == first
    with pytest.raises(KeyReused):  # the same key with another body is not answered with the first entry
        book.record(WORKER, "k", {"a": 2})
    assert [e["requestsSeen"] for e in book.entries("tenant-a")] == [2]
    book.close()


def test_keys_are_scoped_by_the_caller(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """An entry someone else pre-created under the job's predictable key is not the job's."""
    book = LedgerBook(tmp_path / "ledger.db")
    forged, _ = book.record(Caller("tenant-a", "mallory"), "imp_1:ledger-post", {"total": "0"})
    real, created = book.record(WORKER, "imp_1:ledger-post", {"total": "10"})
    assert created and real["entryId"] != forged["entryId"] and real["entry"] == {"total": "10"}
    other_tenant, created = book.record(Caller("tenant-b", "importjobs-worker"), "imp_1:ledger-post", {"t": 1})
    assert created
    assert [e["entryId"] for e in book.entries("tenant-b")] == [other_tenant["entryId"]]
    assert len(book.entries("tenant-a")) == 2
    book.close()


def test_two_books_on_one_file_see_each_others_entries(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Each book keeps one connection open: a key recorded through another connection (another
    host process on the same file) is still seen, so the ledger stays idempotent across hosts."""
    one, two = LedgerBook(tmp_path / "ledger.db"), LedgerBook(tmp_path / "ledger.db")
    try:
        first, _ = one.record(WORKER, "job-1:ledger-post", {"a": 1})
        again, created = two.record(WORKER, "job-1:ledger-post", {"a": 1})
        assert not created and again["entryId"] == first["entryId"]
        assert [e["requestsSeen"] for e in one.entries("tenant-a")] == [2]
    finally:
        one.close()
        two.close()
    with pytest.raises(RuntimeError):
        one.record(WORKER, "k", {})
