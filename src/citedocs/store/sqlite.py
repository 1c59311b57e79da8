"""The SQLite store: one file, WAL, one connection per thread, every write a transaction.

Each document is replaced in one transaction (old chunks out, new chunks and their FTS rows in, the
document row updated), so a process killed at any moment leaves either the old or the new document,
never a mix; the next run sees the stale hash and redoes only that file.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from citedocs.errors import NotFoundError, StoreError
from citedocs.store.migrate import migrate
from citedocs.store.records import ChunkRecord, DocumentRecord, Job, Source, SourceKind, StoredChunk

_CHUNK_COLUMNS = """
    c.id AS rowid, c.chunk_id, c.heading, c.page_start, c.page_end, c.line_start, c.line_end, c.text,
    c.sha256, c.document_id, d.path, d.rel_path, d.format, d.source_id, s.name AS source_name,
    s.kind AS source_kind
"""


def connect(path: Path | str) -> sqlite3.Connection:
    """The one connection factory: WAL, foreign keys, a busy timeout for concurrent writers."""
    if str(path) != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(str(path), timeout=30.0, isolation_level=None, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA busy_timeout = 30000")
    except sqlite3.DatabaseError as exc:
        raise StoreError(
            f"Cannot open the index at {path}: {exc}.", "Check the path, or pass --db to use another file."
        ) from exc
    return conn


class SQLiteStore:
    """Narrow storage interface; a PostgreSQL backend implements the same methods."""

    def __init__(self, path: Path | str) -> None:
        self.path = str(path)
        self._local = threading.local()
        self._write_lock = threading.RLock()
        conn = self._conn()
        try:
            migrate(conn)
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"{self.path} is not a citedocs index ({exc}).", "Pass --db to use another file."
            ) from exc
        self.generation = self._data_version()

    # -- plumbing ---------------------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self.path)
            self._local.conn = conn
        return conn

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn()
        with self._write_lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _data_version(self) -> int:
        row = self._conn().execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return int(row[0]) if row else 0

    def _bump(self, conn: sqlite3.Connection) -> None:
        conn.execute(
            "INSERT INTO meta (key, value) VALUES ('generation', '1') "
            "ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
        )

    def changed_since(self, generation: int) -> tuple[bool, int]:
        """Whether any process changed the index since `generation` (for in-memory caches)."""
        now = self._data_version()
        return now != generation, now

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

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
            try:
                cur = conn.execute(
                    "INSERT INTO sources (kind, name, uri, options, created) VALUES (?, ?, ?, ?, ?)",
                    (kind, name, uri, json.dumps(options or {}), time.time()),
                )
            except sqlite3.IntegrityError as exc:
                raise StoreError(
                    f"{name} is already registered.", "Use `citedocs reindex` to refresh it instead."
                ) from exc
            rowid = cur.lastrowid
        assert rowid is not None
        return self.source_by_id(rowid)

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
        with self.transaction() as conn:
            row = conn.execute(
                "SELECT id FROM documents WHERE source_id = ? AND path = ?", (source_id, doc.path)
            ).fetchone()
            values = (
                doc.rel_path, doc.format, doc.size, doc.mtime_ns, doc.sha256, doc.status, doc.reason,
                doc.title, doc.pages, time.time(),
            )  # fmt: skip
            if row is None:
                cur = conn.execute(
                    "INSERT INTO documents (rel_path, format, size, mtime_ns, sha256, status, reason, title, "
                    "pages, indexed_at, source_id, path) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (*values, source_id, doc.path),
                )
                doc_id = cur.lastrowid
                assert doc_id is not None
            else:
                doc_id = int(row["id"])
                conn.execute("DELETE FROM chunks WHERE document_id = ?", (doc_id,))
                conn.execute(
                    "UPDATE documents SET rel_path = ?, format = ?, size = ?, mtime_ns = ?, sha256 = ?, "
                    "status = ?, reason = ?, title = ?, pages = ?, indexed_at = ? WHERE id = ?",
                    (*values, doc_id),
                )
            for chunk in chunks:
                cur = conn.execute(
                    "INSERT INTO chunks (chunk_id, document_id, ord, heading, page_start, page_end, line_start, "
                    "line_end, text, sha256, tokens) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        chunk.chunk_id, doc_id, chunk.ord, chunk.heading, chunk.page_start, chunk.page_end,
                        chunk.line_start, chunk.line_end, chunk.text, chunk.sha256, chunk.tokens,
                    ),
                )  # fmt: skip
                conn.execute(
                    "INSERT INTO chunks_fts (rowid, heading, body) VALUES (?, ?, ?)",
                    (cur.lastrowid, chunk.heading_terms, chunk.body_terms),
                )
            self._bump(conn)
        return doc_id

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
        where, args = ("WHERE d.source_id = ?", (source_id,)) if source_id is not None else ("", ())
        row = (
            self._conn()
            .execute(
                f"""SELECT COUNT(*) AS documents,
                   SUM(d.status = 'indexed') AS indexed, SUM(d.status = 'failed') AS failed,
                   SUM(d.status = 'empty') AS empty,
                   (SELECT COUNT(*) FROM chunks c JOIN documents d2 ON d2.id = c.document_id
                    {where.replace("d.", "d2.")}) AS chunks
                FROM documents d {where}""",
                args * 2,
            )
            .fetchone()
        )
        return {key: int(row[key] or 0) for key in ("documents", "indexed", "failed", "empty", "chunks")}

    # -- chunks and keyword search ----------------------------------------------------------------
    def keyword_search(
        self,
        match: str,
        k: int,
        *,
        source_ids: Sequence[int] | None = None,
        formats: Sequence[str] | None = None,
        heading_weight: float = 2.0,
    ) -> list[tuple[int, float]]:
        """(chunk rowid, BM25 score, higher is better) for an FTS5 MATCH expression."""
        if not match:
            return []
        sql = f"SELECT f.rowid, -bm25(chunks_fts, {float(heading_weight)}, 1.0) AS score FROM chunks_fts f"
        args: list[Any] = []
        filters = []
        if source_ids is not None or formats is not None:
            sql += " JOIN chunks c ON c.id = f.rowid JOIN documents d ON d.id = c.document_id"
            if source_ids is not None:
                filters.append(f"d.source_id IN ({','.join('?' * len(source_ids))})")
                args.extend(source_ids)
            if formats is not None:
                filters.append(f"d.format IN ({','.join('?' * len(formats))})")
                args.extend(formats)
        sql += " WHERE chunks_fts MATCH ?" + "".join(f" AND {f}" for f in filters)
        sql += " ORDER BY bm25(chunks_fts, ?, 1.0) LIMIT ?"
        try:
            rows = self._conn().execute(sql, (match, *args, heading_weight, k)).fetchall()
        except sqlite3.OperationalError as exc:
            raise StoreError(f"Keyword search failed: {exc}.", "Report this query as a bug.") from exc
        return [(int(r[0]), float(r[1])) for r in rows]

    def term_document_counts(self, terms: Sequence[str]) -> dict[str, int]:
        """How many chunks contain each term (0 for unknown terms)."""
        if not terms:
            return {}
        rows = (
            self._conn()
            .execute(
                f"SELECT term, doc FROM chunks_vocab WHERE term IN ({','.join('?' * len(terms))})",
                tuple(terms),
            )
            .fetchall()
        )
        found = {str(r[0]): int(r[1]) for r in rows}
        return {t: found.get(t, 0) for t in terms}

    def chunks_by_rowid(self, rowids: Sequence[int]) -> dict[int, StoredChunk]:
        if not rowids:
            return {}
        out: dict[int, StoredChunk] = {}
        conn = self._conn()
        for start in range(0, len(rowids), 500):
            part = rowids[start : start + 500]
            rows = conn.execute(
                f"SELECT {_CHUNK_COLUMNS} FROM chunks c JOIN documents d ON d.id = c.document_id "
                f"JOIN sources s ON s.id = d.source_id WHERE c.id IN ({','.join('?' * len(part))})",
                tuple(part),
            ).fetchall()
            out.update({int(r["rowid"]): StoredChunk(**dict(r)) for r in rows})
        return out

    def chunk_by_id(self, chunk_id: str) -> StoredChunk | None:
        row = (
            self._conn()
            .execute(
                f"SELECT {_CHUNK_COLUMNS} FROM chunks c JOIN documents d ON d.id = c.document_id "
                "JOIN sources s ON s.id = d.source_id WHERE c.chunk_id = ? LIMIT 1",
                (chunk_id,),
            )
            .fetchone()
        )
        return None if row is None else StoredChunk(**dict(row))

    def chunks_of_document(self, document_id: int) -> list[StoredChunk]:
        rows = (
            self._conn()
            .execute(
                f"SELECT {_CHUNK_COLUMNS} FROM chunks c JOIN documents d ON d.id = c.document_id "
                "JOIN sources s ON s.id = d.source_id WHERE c.document_id = ? ORDER BY c.ord",
                (document_id,),
            )
            .fetchall()
        )
        return [StoredChunk(**dict(r)) for r in rows]

    # -- embeddings -------------------------------------------------------------------------------
    def chunks_without_vectors(self, limit: int) -> list[tuple[str, str, str]]:
        """(sha256, heading, text) of chunks whose embedding input has no vector yet."""
        rows = (
            self._conn()
            .execute(
                "SELECT c.sha256, c.heading, c.text FROM chunks c WHERE NOT EXISTS "
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

    def put_vectors(self, items: Sequence[tuple[str, bytes]]) -> None:
        with self.transaction() as conn:
            conn.executemany("INSERT OR REPLACE INTO embeddings (sha256, vec) VALUES (?, ?)", items)
            self._bump(conn)

    def all_vectors(self) -> tuple[list[int], list[bytes]]:
        """(chunk rowids, vector blobs) for every chunk that has a vector."""
        rows = (
            self._conn()
            .execute(
                "SELECT c.id, e.vec FROM chunks c JOIN embeddings e ON e.sha256 = c.sha256 ORDER BY c.id"
            )
            .fetchall()
        )
        return [int(r[0]) for r in rows], [bytes(r[1]) for r in rows]

    def vectors_for_rowids(self, rowids: Sequence[int]) -> list[bytes]:
        if not rowids:
            return []
        rows = (
            self._conn()
            .execute(
                f"SELECT e.vec FROM chunks c JOIN embeddings e ON e.sha256 = c.sha256 WHERE c.id IN "
                f"({','.join('?' * len(rowids))})",
                tuple(rowids),
            )
            .fetchall()
        )
        return [bytes(r[0]) for r in rows]

    def purge_orphan_vectors(self) -> int:
        with self.transaction() as conn:
            cur = conn.execute("DELETE FROM embeddings WHERE sha256 NOT IN (SELECT sha256 FROM chunks)")
        return cur.rowcount

    def clear_vectors(self) -> None:
        with self.transaction() as conn:
            conn.execute("DELETE FROM embeddings")
            conn.execute("DELETE FROM meta WHERE key = 'embed_fingerprint'")
            self._bump(conn)

    def rowids_matching(self, source_ids: Sequence[int] | None, formats: Sequence[str] | None) -> list[int]:
        sql = "SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id WHERE 1 = 1"
        args: list[Any] = []
        if source_ids is not None:
            sql += f" AND d.source_id IN ({','.join('?' * len(source_ids))})"
            args.extend(source_ids)
        if formats is not None:
            sql += f" AND d.format IN ({','.join('?' * len(formats))})"
            args.extend(formats)
        return [int(r[0]) for r in self._conn().execute(sql, args).fetchall()]

    def document_rowids(self, document_id: int) -> list[int]:
        rows = self._conn().execute("SELECT id FROM chunks WHERE document_id = ?", (document_id,)).fetchall()
        return [int(r[0]) for r in rows]

    # -- jobs -------------------------------------------------------------------------------------
    def start_job(self, source_id: int | None, kind: str, total: int = 0) -> int:
        with self.transaction() as conn:
            conn.execute(
                "UPDATE jobs SET state = 'interrupted', finished = ? WHERE state = 'running' "
                "AND source_id IS ? AND kind = ?",
                (time.time(), source_id, kind),
            )
            cur = conn.execute(
                "INSERT INTO jobs (source_id, kind, state, pid, total, started) VALUES (?, ?, 'running', ?, ?, ?)",
                (source_id, kind, os.getpid(), total, time.time()),
            )
        assert cur.lastrowid is not None
        return cur.lastrowid

    def update_job(self, job_id: int, **fields: Any) -> None:
        allowed = {"total", "done", "failed", "current", "message", "state", "finished"}
        if not fields or not set(fields) <= allowed:
            raise ValueError(f"bad job fields: {sorted(fields)}")
        assignments = ", ".join(f"{key} = ?" for key in fields)
        with self.transaction() as conn:
            conn.execute(f"UPDATE jobs SET {assignments} WHERE id = ?", (*fields.values(), job_id))

    def recent_jobs(self, limit: int = 10) -> list[Job]:
        rows = self._conn().execute("SELECT * FROM jobs ORDER BY id DESC LIMIT ?", (limit,)).fetchall()
        return [Job(**dict(r)) for r in rows]


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
