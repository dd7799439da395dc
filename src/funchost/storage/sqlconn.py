"""The connection a store's shared SQL runs on: a `sqlite3.Connection` in the embedded store,
`postgres.sqlconn.PgConn` on PostgreSQL (the same statements, written in the SQL both accept:
`?` placeholders, `INSERT ... ON CONFLICT`, rows read by column name). The blob store
(`storage/blobsql/`) is written this way; any store whose rules should run on both backends can be."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Row(Protocol):
    def __getitem__(self, key: Any, /) -> Any: ...

    def keys(self) -> list[str]: ...


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Conn(Protocol):
    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Cursor: ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Cursor: ...


class StoreDatabase(Protocol):
    """Where a store's transactions run: `SqliteDatabase` (BEGIN IMMEDIATE writes) or
    `postgres.scoped.PgScopedDatabase` (writes serialized per store by a lock)."""

    async def read(self, fn: Callable[[Conn], T], /) -> T: ...

    async def write(self, fn: Callable[[Conn], T], /) -> T: ...

    async def aclose(self) -> None: ...
