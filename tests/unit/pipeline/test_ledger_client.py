"""Transient vs business outcomes of the downstream call (pipeline.md 3.7)."""

from __future__ import annotations

import httpx
import pytest
from importjobs.ledger import LedgerBook, LedgerClient, LedgerRefused, TransientError
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


def test_the_book_records_one_entry_per_key(tmp_path) -> None:  # type: ignore[no-untyped-def]
    book = LedgerBook(tmp_path / "ledger.db")
    first, created = book.record("k", {"a": 1})
    again, created_again = book.record("k", {"a": 2})
    assert created and not created_again and again["entryId"] == first["entryId"]
    assert [e["requestsSeen"] for e in book.entries()] == [2]


def test_two_books_on_one_file_see_each_others_entries(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Each book keeps one connection open: a key recorded through another connection (another
    host process on the same file) is still seen, so the ledger stays idempotent across hosts."""
    one, two = LedgerBook(tmp_path / "ledger.db"), LedgerBook(tmp_path / "ledger.db")
    try:
        first, _ = one.record("job-1:ledger-post", {"a": 1})
        again, created = two.record("job-1:ledger-post", {"a": 1})
        assert not created and again["entryId"] == first["entryId"]
        assert [e["requestsSeen"] for e in one.entries()] == [2]
    finally:
        one.close()
        two.close()
    with pytest.raises(RuntimeError):
        one.record("k", {})
