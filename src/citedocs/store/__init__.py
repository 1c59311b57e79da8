"""Storage behind a narrow interface: one SQLite file, or PostgreSQL with pgvector for a shared index."""

from __future__ import annotations

from citedocs.store.base import Store
from citedocs.store.records import ChunkRecord, DocumentRecord, Job, Source, StoredChunk
from citedocs.store.sqlite import SQLiteStore, connect

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres(db: str) -> bool:
    return db.startswith(POSTGRES_SCHEMES)


def open_store(db: str, *, create: bool = True) -> Store:
    """The store named by the `db` setting: a `postgresql://` URL, else a SQLite file path. Without `create`
    a SQLite index must exist at this version already (read-only commands; a server's database is its own)."""
    if is_postgres(db):
        from citedocs.store.postgres import PostgresStore

        return PostgresStore(db)
    from pathlib import Path

    return SQLiteStore(Path(db).expanduser(), create=create)


__all__ = [
    "ChunkRecord",
    "DocumentRecord",
    "Job",
    "SQLiteStore",
    "Source",
    "Store",
    "StoredChunk",
    "connect",
    "is_postgres",
    "open_store",
]
