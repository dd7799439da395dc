"""PostgreSQL `text` cannot hold the NUL character, which SQLite stores: a statement given one
would fail in the driver, and the backend edge would answer ServerBusy (503), which clients retry
for ever. `NulFreeText` puts a store's database behind a check that refuses such a value first,
with the store's own 400 error (an item id, a database name, a filter's key value)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from funchost.errors import StorageError
from funchost.storage.sqlconn import Conn, Cursor, StoreDatabase

T = TypeVar("T")


class NulFreeText:
    """`StoreDatabase` whose statements refuse a string parameter with a NUL (`refuse(value)`)."""

    def __init__(self, inner: StoreDatabase, refuse: Callable[[str], StorageError]) -> None:
        self._inner = inner
        self._refuse = refuse

    async def read(self, fn: Callable[[Conn], T], /) -> T:
        return await self._inner.read(lambda conn: fn(_Checked(conn, self._refuse)))

    async def write(self, fn: Callable[[Conn], T], /) -> T:
        return await self._inner.write(lambda conn: fn(_Checked(conn, self._refuse)))

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Checked:
    def __init__(self, conn: Conn, refuse: Callable[[str], StorageError]) -> None:
        self._conn = conn
        self._refuse = refuse

    def _check(self, parameters: Sequence[Any]) -> None:
        for value in parameters:
            if isinstance(value, str) and "\x00" in value:
                raise self._refuse(value)

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Cursor:
        self._check(parameters)
        return self._conn.execute(sql, parameters)

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Cursor:
        rows = [tuple(p) for p in parameters]
        for row in rows:
            self._check(row)
        return self._conn.executemany(sql, rows)
