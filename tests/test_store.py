from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from citedocs.errors import StoreError
from citedocs.store import ChunkRecord, DocumentRecord, SQLiteStore
from citedocs.store.migrate import migrations


def _chunk(i: int, text: str) -> ChunkRecord:
    return ChunkRecord(f"id{i}", i, "H", None, None, i, i, text, f"sha{i}", 3, "h", text)


def _doc(path: str, sha: str = "x") -> DocumentRecord:
    return DocumentRecord(path, path, "markdown", 10, 1, sha, "indexed")


def test_schema_comes_from_numbered_migrations(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "i.db")
    version = store._conn().execute("PRAGMA user_version").fetchone()[0]
    assert version == migrations()[-1][0] >= 1
    assert store._conn().execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_replace_document_swaps_chunks_and_fts_rows(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "i.db")
    src = store.add_source("folder", "/f", "/f")
    store.replace_document(src.id, _doc("/f/a.md"), [_chunk(1, "alpha beta"), _chunk(2, "gamma")])
    assert [r for r, _ in store.keyword_search('"gamma"', 5)]
    store.replace_document(src.id, _doc("/f/a.md", "y"), [_chunk(3, "delta")])
    assert store.keyword_search('"gamma"', 5) == []
    assert len(store.keyword_search('"delta"', 5)) == 1
    conn = store._conn()
    assert conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0] == 1
    assert conn.execute("SELECT COUNT(*) FROM chunks_fts").fetchone()[0] == 1


def test_removing_a_source_purges_documents_chunks_and_keyword_rows(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "i.db")
    src = store.add_source("folder", "/f", "/f")
    store.replace_document(src.id, _doc("/f/a.md"), [_chunk(1, "alpha")])
    store.remove_source(src.id)
    conn = store._conn()
    for table in ("documents", "chunks", "chunks_fts"):
        assert conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == 0


def test_duplicate_source_is_a_clear_error(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "i.db")
    store.add_source("folder", "/f", "/f")
    with pytest.raises(StoreError, match="already registered"):
        store.add_source("folder", "/f", "/f")


def test_a_file_that_is_not_a_database_is_refused_clearly(tmp_path: Path) -> None:
    bad = tmp_path / "not.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="--db"):
        SQLiteStore(bad)


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "i.db"
    SQLiteStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 999")
    conn.close()
    with pytest.raises(StoreError, match="newer citedocs"):
        SQLiteStore(path)


def test_generation_changes_on_writes_for_cache_invalidation(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "i.db")
    src = store.add_source("folder", "/f", "/f")
    _, gen = store.changed_since(store.generation)
    store.replace_document(src.id, _doc("/f/a.md"), [_chunk(1, "alpha")])
    other = SQLiteStore(tmp_path / "i.db")  # another process's view
    assert other.changed_since(gen)[0]
