"""A store's shared SQL (`storage/sqlconn.py`) on a psycopg connection: `?` placeholders become `%s`, rows are read by
column name or position (as `sqlite3.Row`), `executemany` is the connection's."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any


class PgRow:
    __slots__ = ("_index", "_values")

    def __init__(self, values: Sequence[Any], index: dict[str, int]) -> None:
        self._values = values
        self._index = index

    def __getitem__(self, key: Any, /) -> Any:
        return self._values[self._index[key] if isinstance(key, str) else key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def keys(self) -> list[str]:
        return list(self._index)


def _row_factory(cursor: Any) -> Callable[[Sequence[Any]], PgRow]:
    index = {column.name: i for i, column in enumerate(cursor.description or ())}
    return lambda values: PgRow(values, index)


def _portable(sql: str) -> str:
    return sql.replace("%", "%%").replace("?", "%s")


class PgConn:
    """A sync psycopg connection inside one transaction, spoken to as the shared stores speak."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Any:
        cursor = self._conn.cursor(row_factory=_row_factory)
        return cursor.execute(_portable(sql), tuple(parameters))

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Any:
        cursor = self._conn.cursor(row_factory=_row_factory)
        cursor.executemany(_portable(sql), [tuple(p) for p in parameters])
        return cursor
