"""The store's interface and the SQL both backends share: sources, documents, chunks, meta.

Everything here is written once in the SQL that SQLite and PostgreSQL both accept (`?` placeholders; the
PostgreSQL connection translates them). What differs, keyword ranking, vectors, how a connection and a
transaction are made, is left to `SQLiteStore` and `PostgresStore`. The change counters (`changes.py`) and the
job log (`jobs.py`) are parts of every store too.

Each document is replaced in one transaction (old chunks out, new chunks and their keyword rows in, the
document row updated), so a process killed at any moment leaves either the old or the new document, never a
mix; the next run sees the stale hash and redoes only that file.
"""

from __future__ import annotations

import json
import time
from abc import abstractmethod
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np

from citedocs.errors import NotFoundError, StoreError
from citedocs.store.changes import ChangeLog, GenerationCached
from citedocs.store.connection import Connection, document_filter, placeholders
from citedocs.store.jobs import JobLog
from citedocs.store.leases import Lease
from citedocs.store.records import ChunkRecord, DocumentRecord, Source, SourceKind, StoredChunk

__all__ = [
    "Connection",
    "GenerationCached",
    "Store",
    "document_filter",
    "placeholders",
]

# In StoredChunk's field order: rows become chunks by position (by name, 5 chunks took 43 us beside 29 for
# the query).
CHUNK_COLUMNS = """
    c.id AS rowid, c.chunk_id, c.heading, c.page_start, c.page_end, c.line_start, c.line_end, c.text,
    c.sha256, c.document_id, d.path, d.rel_path, d.format, d.source_id, s.name AS source_name,
    s.kind AS source_kind
"""
_CHUNK_FROM = "FROM chunks c JOIN documents d ON d.id = c.document_id JOIN sources s ON s.id = d.source_id"


class Store(ChangeLog, JobLog):
    """Narrow storage interface: sources, documents, chunks, keyword and vector ranking, jobs, meta."""

    path: str
    generation: int

    # -- what each backend provides ----------------------------------------------------------------
    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def _insert_chunks(self, conn: Connection, doc_id: int, chunks: Sequence[ChunkRecord]) -> None:
        """Insert a document's chunks and their keyword rows (the document's old ones are gone); a backend
        may hold the keyword rows back until `_flush_keyword_rows`, in the same transaction."""

    def _flush_keyword_rows(self, conn: Connection) -> None:
        """Write the keyword rows `_insert_chunks` held back: before a chunk is deleted, and last."""

    @abstractmethod
    def keyword_search(
        self,
        terms: Sequence[str],
        k: int,
        *,
        source_ids: Sequence[int] | None = None,
        formats: Sequence[str] | None = None,
        heading_weight: float = 2.0,
    ) -> list[tuple[int, float]]:
        """(chunk rowid, BM25 score, higher is better) for chunks holding any of the analysed `terms`."""

    @abstractmethod
    def term_document_counts(self, terms: Sequence[str]) -> dict[str, int]:
        """How many chunks contain each analysed term (0 for unknown terms)."""

    @abstractmethod
    def put_vectors(self, items: Sequence[tuple[str, bytes]]) -> None:
        """Store (embedding-input sha256, float32 little-endian vector) pairs, replacing old ones."""

    @abstractmethod
    def vectors_for_rowids(self, rowids: Sequence[int]) -> list[bytes]: ...

    def index_vectors(self, dim: int) -> None:
        """Build the backend's vector index once an embedding pass is done (none for in-memory search)."""
        return None

    @abstractmethod
    def clear_vectors(self) -> None:
        """Forget every vector and the model fingerprint (the model changed)."""

    @property
    def native_vector_search(self) -> bool:
        """True when the backend ranks vectors itself (`nearest`); else search keeps a matrix in memory."""
        return False

    def all_vectors(self) -> tuple[list[int], list[bytes]]:
        """(chunk rowids, vector blobs) for every chunk that has a vector (in-memory search only)."""
        raise NotImplementedError

    def nearest(
        self,
        query: np.ndarray,
        k: int,
        *,
        source_ids: Sequence[int] | None = None,
        formats: Sequence[str] | None = None,
    ) -> list[tuple[int, float]]:
        """(chunk rowid, cosine) best first, when `native_vector_search`."""
        raise NotImplementedError

    def source_lock(
        self, source_id: int, *, wait: float = 0.0, on_wait: Callable[[], object] | None = None
    ) -> AbstractContextManager[None]:
        """Held while one process indexes a source; a second indexer waits up to `wait` seconds for it (calling
        `on_wait` once, when it starts waiting), then is refused with a clear error."""
        return _NoLock()

    @abstractmethod
    def try_watch_lease(self, source_id: int) -> Lease | None:
        """The right to watch a source's folder, held by one process at a time (None while another has it);
        released by `release()` or when the process exits."""

    @abstractmethod
    def watch_lease_held(self, source_id: int) -> bool:
        """Whether any process (this one included) watches the source's folder now."""

    def holds_cjk_text(self) -> bool:
        """Whether any chunk holds Chinese, Japanese or Korean text (an index migration asks)."""
        raise NotImplementedError

    def get_meta(self, key: str) -> str | None:
        row = self._conn().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    # -- sources ----------------------------------------------------------------------------------
    def add_source(
        self, kind: SourceKind, name: str, uri: str, options: dict[str, Any] | None = None
    ) -> Source:
        with self.transaction() as conn:
            row = conn.execute(
                "INSERT INTO sources (kind, name, uri, options, created) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (name) DO NOTHING RETURNING id",
                (kind, name, uri, json.dumps(options or {}), time.time()),
            ).fetchone()
        if row is None:  # the name is taken: ON CONFLICT DO NOTHING inserted nothing
            raise StoreError(
                f"{name} is already registered.", "Use `citedocs reindex` to refresh it instead."
            )
        return self.source_by_id(int(row[0]))

    def source_by_id(self, source_id: int) -> Source:
        row = self._conn().execute("SELECT * FROM sources WHERE id = ?", (source_id,)).fetchone()
        if row is None:
            raise NotFoundError(
                f"No source with id {source_id}.", "Run `citedocs list` to see what is registered."
            )
        return Source.from_row(row)

    def find_source(self, name: str) -> Source | None:
        row = self._conn().execute("SELECT * FROM sources WHERE name = ?", (name,)).fetchone()
        return None if row is None else Source.from_row(row)

    def list_sources(self, kind: SourceKind | None = None) -> list[Source]:
        if kind is None:
            rows = self._conn().execute("SELECT * FROM sources ORDER BY kind, name").fetchall()
        else:
            rows = (
                self._conn().execute("SELECT * FROM sources WHERE kind = ? ORDER BY name", (kind,)).fetchall()
            )
        return [Source.from_row(r) for r in rows]

    def update_source(self, source_id: int, **fields: Any) -> None:
        allowed = {"status", "last_error", "last_indexed", "options", "uri"}
        if not fields or not set(fields) <= allowed:
            raise ValueError(f"bad source fields: {sorted(fields)}")
        if "options" in fields:
            fields["options"] = json.dumps(fields["options"])
        assignments = ", ".join(f"{key} = ?" for key in fields)
        with self.transaction() as conn:
            conn.execute(f"UPDATE sources SET {assignments} WHERE id = ?", (*fields.values(), source_id))

    def remove_source(self, source_id: int) -> None:
        with self.transaction() as conn:
            conn.execute("DELETE FROM sources WHERE id = ?", (source_id,))
            self._bump(conn)

    # -- documents --------------------------------------------------------------------------------
    def documents(self, source_id: int) -> dict[str, DocumentRecord]:
        rows = self._conn().execute("SELECT * FROM documents WHERE source_id = ?", (source_id,)).fetchall()
        return {r["path"]: _document(r) for r in rows}

    def document_by_path(self, path: str) -> tuple[DocumentRecord, int] | None:
        row = self._conn().execute("SELECT * FROM documents WHERE path = ? LIMIT 1", (path,)).fetchone()
        return None if row is None else (_document(row), int(row["source_id"]))

    def replace_document(self, source_id: int, doc: DocumentRecord, chunks: Sequence[ChunkRecord]) -> int:
        """Atomically swap a document's chunks (and keyword rows) for new ones."""
        return self.replace_documents(source_id, [(doc, chunks)])[0]

    def replace_documents(
        self, source_id: int, items: Sequence[tuple[DocumentRecord, Sequence[ChunkRecord]]]
    ) -> list[int]:
        """Several documents in one transaction (bulk loads: one commit instead of one per document)."""
        with self.transaction() as conn:
            ids = [self._replace(conn, source_id, doc, chunks) for doc, chunks in items]
            self._flush_keyword_rows(conn)
            self._bump(conn)
        return ids

    def _replace(
        self, conn: Connection, source_id: int, doc: DocumentRecord, chunks: Sequence[ChunkRecord]
    ) -> int:
        values = (
            doc.rel_path,
            doc.format,
            doc.size,
            doc.mtime_ns,
            doc.sha256,
            doc.status,
            doc.reason,
            doc.title,
            doc.pages,
            time.time(),
        )
        row = conn.execute(
            "SELECT id FROM documents WHERE source_id = ? AND path = ?", (source_id, doc.path)
        ).fetchone()
        if row is None:
            doc_id = int(
                conn.execute(
                    "INSERT INTO documents (rel_path, format, size, mtime_ns, sha256, status, reason, title, "
                    "pages, indexed_at, source_id, path) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                    "RETURNING id",
                    (*values, source_id, doc.path),
                ).fetchone()[0]
            )
        else:
            doc_id = int(row["id"])
            self._flush_keyword_rows(conn)  # a chunk this transaction added may go now: its keyword row first
            conn.execute("DELETE FROM chunks WHERE document_id = ?", (doc_id,))
            conn.execute(
                "UPDATE documents SET rel_path = ?, format = ?, size = ?, mtime_ns = ?, sha256 = ?, "
                "status = ?, reason = ?, title = ?, pages = ?, indexed_at = ? WHERE id = ?",
                (*values, doc_id),
            )
        if chunks:
            self._insert_chunks(conn, doc_id, chunks)
        return doc_id

    def documents_within(
        self, source_id: int, paths: Sequence[str], folders: Sequence[str] = ()
    ) -> dict[str, DocumentRecord]:
        """The source's documents at `paths`, and at or below `folders` (a folder's files), by path."""
        out: dict[str, DocumentRecord] = {}
        conn = self._conn()
        exact = [*paths, *folders]
        for start in range(0, len(exact), 500):
            part = exact[start : start + 500]
            rows = conn.execute(
                f"SELECT * FROM documents WHERE source_id = ? AND path IN ({placeholders(part)})",
                (source_id, *part),
            ).fetchall()
            out.update({r["path"]: _document(r) for r in rows})
        for start in range(0, len(folders), 100):
            chunk = folders[start : start + 100]
            where = " OR ".join(["substr(path, 1, ?) = ?"] * len(chunk))
            args = [value for p in chunk for value in (len(p) + 1, p + "/")]
            rows = conn.execute(
                f"SELECT * FROM documents WHERE source_id = ? AND ({where})", (source_id, *args)
            ).fetchall()
            out.update({r["path"]: _document(r) for r in rows})
        return out

    def touch_document(self, doc_id: int, mtime_ns: int, size: int) -> None:
        """Same content under a new mtime: remember the new stat so the next run skips hashing."""
        with self.transaction() as conn:
            conn.execute("UPDATE documents SET mtime_ns = ?, size = ? WHERE id = ?", (mtime_ns, size, doc_id))

    def delete_documents(self, doc_ids: Iterable[int]) -> int:
        ids = list(doc_ids)
        if not ids:
            return 0
        with self.transaction() as conn:
            conn.executemany("DELETE FROM documents WHERE id = ?", [(i,) for i in ids])
            self._bump(conn)
        return len(ids)

    def failed_documents(self, source_id: int | None = None, limit: int = 50) -> list[tuple[str, str]]:
        sql = "SELECT path, reason FROM documents WHERE status = 'failed'"
        args: tuple[Any, ...] = ()
        if source_id is not None:
            sql += " AND source_id = ?"
            args = (source_id,)
        rows = self._conn().execute(sql + " ORDER BY path LIMIT ?", (*args, limit)).fetchall()
        return [(r["path"], r["reason"] or "") for r in rows]

    def counts(self, source_id: int | None = None) -> dict[str, int]:
        """Documents by status and their chunks; a site's unfetched pages (link documents) count apart."""
        where, args = ("AND d.source_id = ?", (source_id,)) if source_id is not None else ("", ())
        row = (
            self._conn()
            .execute(
                f"""SELECT COUNT(*) AS documents,
                   SUM(CASE WHEN d.status = 'indexed' THEN 1 ELSE 0 END) AS indexed,
                   SUM(CASE WHEN d.status = 'failed' THEN 1 ELSE 0 END) AS failed,
                   SUM(CASE WHEN d.status = 'empty' THEN 1 ELSE 0 END) AS empty,
                   (SELECT COUNT(*) FROM chunks c JOIN documents d2 ON d2.id = c.document_id
                    WHERE d2.format IS DISTINCT FROM 'link' {where.replace("d.", "d2.")}) AS chunks,
                   (SELECT COUNT(*) FROM documents d3 WHERE d3.format = 'link' {where.replace("d.", "d3.")})
                   AS links
                FROM documents d WHERE d.format IS DISTINCT FROM 'link' {where}""",
                args * 3,
            )
            .fetchone()
        )
        keys = ("documents", "indexed", "failed", "empty", "chunks", "links")
        return {key: int(row[key] or 0) for key in keys}

    def format_counts(self) -> dict[str, int]:
        """Indexed documents per format (markdown, pdf, ...): the file types a search can be limited to."""
        rows = (
            self._conn()
            .execute(
                "SELECT format, COUNT(*) AS n FROM documents WHERE status = 'indexed' AND format IS NOT NULL "
                "GROUP BY format ORDER BY format"
            )
            .fetchall()
        )
        return {str(r["format"]): int(r["n"]) for r in rows}

    def frequent_headings(
        self, limit: int = 40, source_ids: Sequence[int] | None = None
    ) -> list[tuple[str, int]]:
        """The headings most chunks sit under, with their chunk counts: what the documents are about (of the
        sources `source_ids` only, when given)."""
        where, args = "", ()  # type: tuple[str, tuple[Any, ...]]
        if source_ids is not None:
            marks = ", ".join("?" for _ in source_ids) or "NULL"
            where = f" AND document_id IN (SELECT id FROM documents WHERE source_id IN ({marks}))"
            args = tuple(source_ids)
        rows = (
            self._conn()
            .execute(
                f"SELECT heading, COUNT(*) AS n FROM chunks WHERE heading <> ''{where} GROUP BY heading "
                "ORDER BY n DESC, heading LIMIT ?",
                (*args, limit),
            )
            .fetchall()
        )
        return [(str(r["heading"]), int(r["n"])) for r in rows]

    # -- chunks -----------------------------------------------------------------------------------
    def chunks_by_rowid(self, rowids: Sequence[int]) -> dict[int, StoredChunk]:
        if not rowids:
            return {}
        out: dict[int, StoredChunk] = {}
        conn = self._conn()
        for start in range(0, len(rowids), 500):
            part = list(rowids[start : start + 500])
            rows = conn.execute(
                f"SELECT {CHUNK_COLUMNS} {_CHUNK_FROM} WHERE c.id IN ({placeholders(part)})", part
            ).fetchall()
            out.update({int(r[0]): StoredChunk(*r) for r in rows})
        return out

    def chunk_by_id(self, chunk_id: str) -> StoredChunk | None:
        row = (
            self._conn()
            .execute(f"SELECT {CHUNK_COLUMNS} {_CHUNK_FROM} WHERE c.chunk_id = ? LIMIT 1", (chunk_id,))
            .fetchone()
        )
        return None if row is None else StoredChunk(*row)

    def chunks_of_document(self, document_id: int) -> list[StoredChunk]:
        rows = (
            self._conn()
            .execute(
                f"SELECT {CHUNK_COLUMNS} {_CHUNK_FROM} WHERE c.document_id = ? ORDER BY c.ord", (document_id,)
            )
            .fetchall()
        )
        return [StoredChunk(*r) for r in rows]

    def rowids_matching(self, source_ids: Sequence[int] | None, formats: Sequence[str] | None) -> list[int]:
        where, args = document_filter(source_ids, formats)
        sql = "SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id WHERE 1 = 1" + where
        return [int(r[0]) for r in self._conn().execute(sql, args).fetchall()]

    def document_rowids(self, document_id: int) -> list[int]:
        rows = self._conn().execute("SELECT id FROM chunks WHERE document_id = ?", (document_id,)).fetchall()
        return [int(r[0]) for r in rows]

    # -- embeddings -------------------------------------------------------------------------------
    def chunks_without_vectors(self, limit: int) -> list[tuple[str, str, str]]:
        """(sha256, heading, text) of chunks whose embedding input has no vector yet."""
        rows = (
            self._conn()
            .execute(
                "SELECT c.sha256, MIN(c.heading), MIN(c.text) FROM chunks c WHERE NOT EXISTS "
                "(SELECT 1 FROM embeddings e WHERE e.sha256 = c.sha256) GROUP BY c.sha256 LIMIT ?",
                (limit,),
            )
            .fetchall()
        )
        return [(r[0], r[1], r[2]) for r in rows]

    def vector_counts(self) -> tuple[int, int]:
        """(chunks with a vector, all chunks)."""
        row = (
            self._conn()
            .execute(
                "SELECT (SELECT COUNT(*) FROM chunks c WHERE EXISTS (SELECT 1 FROM embeddings e WHERE e.sha256 = c.sha256)),"
                " (SELECT COUNT(*) FROM chunks)"
            )
            .fetchone()
        )
        return int(row[0]), int(row[1])

    def purge_orphan_vectors(self) -> int:
        with self.transaction() as conn:
            cur = conn.execute("DELETE FROM embeddings WHERE sha256 NOT IN (SELECT sha256 FROM chunks)")
            count = int(cur.rowcount)
        return count


class _NoLock(AbstractContextManager[None]):
    def __exit__(self, *exc: object) -> None:
        return None


def _document(row: Any) -> DocumentRecord:
    return DocumentRecord(
        id=row["id"],
        path=row["path"],
        rel_path=row["rel_path"],
        format=row["format"],
        size=row["size"],
        mtime_ns=row["mtime_ns"],
        sha256=row["sha256"],
        status=row["status"],
        reason=row["reason"],
        title=row["title"],
        pages=row["pages"],
    )
