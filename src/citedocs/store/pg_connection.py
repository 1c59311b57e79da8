"""psycopg made to speak the stores' shared SQL: `?` placeholders, rows readable by name and position, and a
dropped connection as a StoreError that says what to do, never a driver traceback."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from citedocs.errors import StoreError

try:
    import psycopg
except ImportError:  # pragma: no cover - exercised only where the extra is missing
    psycopg = None  # type: ignore[assignment]

__all__ = [
    "LOCK_NAMESPACE",
    "MIGRATION_LOCK",
    "PgConnection",
    "lost_connection",
    "psycopg",
    "redact_dsn",
    "row_factory",
]

LOCK_NAMESPACE = 0x63697465  # "cite": first key of our advisory locks ("citl" 0x6369746C: the change log)
MIGRATION_LOCK = 0


def redact_dsn(dsn: str) -> str:
    """The URL without its password, for status output and error messages."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", dsn)


class _Row(tuple[Any, ...]):
    """A row readable by position and by column name, like sqlite3.Row."""

    _names: dict[str, int]

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return tuple.__getitem__(self, self._names[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._names)


def row_factory(cursor: Any) -> Any:
    names = {col.name: i for i, col in enumerate(cursor.description or [])}
    row_type = type("Row", (_Row,), {"_names": names})
    return lambda values: row_type(values)


def _sql(statement: str, placeholder: str = "%s") -> str:
    """The shared SQL's `?` placeholders as psycopg's (no `?` or `%` appears in our SQL literals)."""
    return statement.replace("%", "%%").replace("?", placeholder)


def lost_connection(where: str, exc: Exception) -> StoreError:
    return StoreError(
        f"Lost the connection to PostgreSQL at {where}: {str(exc).strip().splitlines()[0] if str(exc) else exc!r}",
        "Check that the server is up; citedocs reconnects on the next request.",
    )


class PgConnection:
    """A psycopg connection that speaks the shared SQL; a dropped connection is a StoreError, not a crash."""

    def __init__(self, raw: Any, where: str) -> None:
        self.raw = raw
        self.where = where
        self.ef_search = 0  # hnsw.ef_search as last set on this session (0: the server's default)

    def execute(self, sql: str, params: Sequence[Any] = (), *, binary: bool = False) -> Any:
        """`binary` sends the parameters in binary form (big arrays: no per-element text escaping)."""
        try:
            return self.raw.execute(_sql(sql, "%b" if binary else "%s"), params)
        except psycopg.OperationalError as exc:
            raise lost_connection(self.where, exc) from None

    def executemany(self, sql: str, params: Iterable[Sequence[Any]]) -> Any:
        try:
            with self.raw.cursor() as cur:
                cur.executemany(_sql(sql), params)
                return cur
        except psycopg.OperationalError as exc:
            raise lost_connection(self.where, exc) from None
