"""What every part of a store is written against: a connection for reads, a transaction for writes.

The shared SQL is written once in the dialect SQLite and PostgreSQL both accept (`?` placeholders; the
PostgreSQL connection translates them); `SQLiteStore` and `PostgresStore` provide the two methods here.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

__all__ = ["Connected", "Connection", "Cursor", "document_filter", "placeholders"]


class Cursor(Protocol):
    rowcount: int

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Connection(Protocol):
    """What the shared SQL needs of a connection: rows readable by column name and by position."""

    def execute(self, sql: str, params: Sequence[Any] = ...) -> Any: ...

    def executemany(self, sql: str, params: Iterable[Sequence[Any]]) -> Any: ...


def placeholders(values: Sequence[Any]) -> str:
    return ",".join("?" * len(values))


def document_filter(source_ids: Sequence[int] | None, formats: Sequence[str] | None) -> tuple[str, list[Any]]:
    """` AND …` conditions on documents `d` keeping only these sources and file formats, and their arguments."""
    sql, args = "", list[Any]()
    if source_ids is not None:
        sql += f" AND d.source_id IN ({placeholders(source_ids)})"
        args.extend(source_ids)
    if formats is not None:
        sql += f" AND d.format IN ({placeholders(formats)})"
        args.extend(formats)
    return sql, args


class Connected(ABC):
    """A store's connection and transactions; the change log, the job log and the store proper use them."""

    @abstractmethod
    def _conn(self) -> Connection:
        """This thread's connection, for reads (each statement sees committed data)."""

    @abstractmethod
    def transaction(self) -> AbstractContextManager[Connection]:
        """A write transaction: committed on exit, rolled back on any exception."""
