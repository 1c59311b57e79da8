"""Storage behind a narrow interface: SQLite today, PostgreSQL later."""

from __future__ import annotations

from citedocs.store.records import ChunkRecord, DocumentRecord, Job, Source, StoredChunk
from citedocs.store.sqlite import SQLiteStore, connect

Store = SQLiteStore

__all__ = ["ChunkRecord", "DocumentRecord", "Job", "SQLiteStore", "Source", "Store", "StoredChunk", "connect"]
