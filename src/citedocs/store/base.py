"""The store's interface and the SQL both backends share.

Everything here is written once in the SQL that SQLite and PostgreSQL both accept (`?` placeholders; the
PostgreSQL connection translates them). What differs, keyword ranking, vectors, how a connection and a
transaction are made, is left to `SQLiteStore` and `PostgresStore`.

Each document is replaced in one transaction (old chunks out, new chunks and their keyword rows in, the
document row updated), so a process killed at any moment leaves either the old or the new document, never a
mix; the next run sees the stale hash and redoes only that file.
"""

from __future__ import annotations

import json
import os
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

from citedocs.errors import NotFoundError, StoreError
from citedocs.store.leases import Lease
from citedocs.store.records import (
    ChunkRecord,
    DocumentRecord,
    Job,
    KeywordRow,
    Source,
    SourceKind,
    StoredChunk,
)

CHUNK_COLUMNS = """
    c.id AS rowid, c.chunk_id, c.heading, c.page_start, c.page_end, c.line_start, c.line_end, c.text,
    c.sha256, c.document_id, d.path, d.rel_path, d.format, d.source_id, s.name AS source_name,
    s.kind AS source_kind
"""
_CHUNK_FROM = "FROM chunks c JOIN documents d ON d.id = c.document_id JOIN sources s ON s.id = d.source_id"
CHANGE_LOG_KEEP = 200_000  # chunk_changes rows kept: a reader further behind rebuilds its index instead
_PRUNED_KEY = "chunk_changes_pruned"


@dataclass(slots=True)
class KeywordChanges:
    """Chunks added and removed after a change-log position, read in one snapshot."""

    seq: int
    removed: list[int]
    added: list[KeywordRow]


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


class Store(ABC):
    """Narrow storage interface: sources, documents, chunks, keyword and vector ranking, jobs, meta."""

    path: str
    generation: int

    # -- what each backend provides ----------------------------------------------------------------
    @abstractmethod
    def _conn(self) -> Connection:
        """This thread's connection, for reads (each statement sees committed data)."""

    @abstractmethod
    def transaction(self) -> AbstractContextManager[Connection]:
        """A write transaction: committed on exit, rolled back on any exception."""

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def _insert_chunks(self, conn: Connection, doc_id: int, chunks: Sequence[ChunkRecord]) -> None:
        """Insert a document's chunks and their keyword rows (the document's old ones are gone)."""

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

    def source_lock(self, source_id: int) -> AbstractContextManager[None]:
        """Held while one process indexes a source; a second indexer is refused with a clear error."""
        return _NoLock()

    @abstractmethod
    def try_watch_lease(self, source_id: int) -> Lease | None:
        """The right to watch a source's folder, held by one process at a time (None while another has it);
        released by `release()` or when the process exits."""

    @abstractmethod
    def watch_lease_held(self, source_id: int) -> bool:
        """Whether any process (this one included) watches the source's folder now."""

    # -- generation (cache invalidation across processes) ------------------------------------------
    def _generation_now(self) -> int:
        row = self._conn().execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return int(row[0]) if row else 0

    def _bump(self, conn: Connection) -> None:
        """Count a change to searchable data; run it last in a transaction so the row lock is brief.

        It also trims the chunk change log to its newest CHANGE_LOG_KEEP rows (a range delete on the key)."""
        bound = (
            int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM chunk_changes").fetchone()[0])
            - CHANGE_LOG_KEEP
        )
        if (
            bound > 0
            and conn.execute("SELECT 1 FROM chunk_changes WHERE seq <= ? LIMIT 1", (bound,)).fetchone()
        ):
            conn.execute("DELETE FROM chunk_changes WHERE seq <= ?", (bound,))
            conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (_PRUNED_KEY, str(bound)),
            )
        conn.execute(
            "INSERT INTO meta (key, value) VALUES ('generation', '1') ON CONFLICT (key) "
            "DO UPDATE SET value = CAST(CAST(meta.value AS BIGINT) + 1 AS TEXT)"
        )

    def changed_since(self, generation: int) -> tuple[bool, int]:
        """Whether any process changed the index since `generation` (for in-memory caches)."""
        now = self._generation_now()
        return now != generation, now

    # -- the chunk change log, for in-memory keyword indexes ----------------------------------------
    @abstractmethod
    def keyword_terms(self, text: str) -> list[str]:
        """The keyword index's own terms for a stored string of analysed terms (what BM25 counts)."""

    @abstractmethod
    def _keyword_rows_sql(self, every: bool = False) -> str:
        """SELECT of KeywordRow columns for chunks `c` (joined with documents `d`), before any WHERE;
        `every`: for all chunks at once (a backend may read them another way then)."""

    @contextmanager
    def _read_snapshot(self) -> Iterator[Connection]:
        """One consistent read of committed data (several statements, one snapshot)."""
        conn = self._conn()
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    def _change_seq(self, conn: Connection) -> int:
        return int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM chunk_changes").fetchone()[0])

    @contextmanager
    def keyword_snapshot(self) -> Iterator[tuple[int, Iterable[KeywordRow]]]:
        """(change-log position, every chunk's KeywordRow in rowid order), both from one snapshot."""
        with self._read_snapshot() as conn:
            seq = self._change_seq(conn)
            yield seq, self._stream(conn, self._keyword_rows_sql(every=True) + " ORDER BY c.id")

    def _stream(self, conn: Connection, sql: str) -> Iterable[KeywordRow]:
        return (tuple(row) for row in conn.execute(sql))

    def keyword_changes(self, after: int) -> KeywordChanges | None:
        """What changed after change-log position `after`; None when the log no longer reaches back that far."""
        with self._read_snapshot() as conn:
            pruned = conn.execute("SELECT value FROM meta WHERE key = ?", (_PRUNED_KEY,)).fetchone()
            if pruned is not None and int(pruned[0]) > after:
                return None
            rows = conn.execute(
                "SELECT seq, chunk, added FROM chunk_changes WHERE seq > ? ORDER BY seq", (after,)
            ).fetchall()
            if not rows:
                return KeywordChanges(after, [], [])
            last: dict[int, int] = {}
            removed: dict[int, None] = {}
            for _, chunk, added in rows:
                last[int(chunk)] = int(added)
                if not added:
                    removed.setdefault(int(chunk), None)
            wanted = sorted(chunk for chunk, added in last.items() if added)
            found: list[KeywordRow] = []
            for start in range(0, len(wanted), 500):
                part = wanted[start : start + 500]
                sql = self._keyword_rows_sql() + f" WHERE c.id IN ({placeholders(part)}) ORDER BY c.id"
                found.extend(tuple(r) for r in conn.execute(sql, part).fetchall())
            return KeywordChanges(int(rows[-1][0]), list(removed), found)

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
            self._bump(conn)
        return ids

    def _replace(
        self, conn: Connection, source_id: int, doc: DocumentRecord, chunks: Sequence[ChunkRecord]
    ) -> int:
        values = (
            doc.rel_path, doc.format, doc.size, doc.mtime_ns, doc.sha256, doc.status, doc.reason,
            doc.title, doc.pages, time.time(),
        )  # fmt: skip
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
            out.update({int(r["rowid"]): StoredChunk(**dict(r)) for r in rows})
        return out

    def chunk_by_id(self, chunk_id: str) -> StoredChunk | None:
        row = (
            self._conn()
            .execute(f"SELECT {CHUNK_COLUMNS} {_CHUNK_FROM} WHERE c.chunk_id = ? LIMIT 1", (chunk_id,))
            .fetchone()
        )
        return None if row is None else StoredChunk(**dict(row))

    def chunks_of_document(self, document_id: int) -> list[StoredChunk]:
        rows = (
            self._conn()
            .execute(
                f"SELECT {CHUNK_COLUMNS} {_CHUNK_FROM} WHERE c.document_id = ? ORDER BY c.ord", (document_id,)
            )
            .fetchall()
        )
        return [StoredChunk(**dict(r)) for r in rows]

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

    # -- jobs -------------------------------------------------------------------------------------
    def start_job(self, source_id: int | None, kind: str, total: int = 0) -> int:
        same_source = "source_id IS NULL" if source_id is None else "source_id = ?"
        with self.transaction() as conn:
            conn.execute(
                f"UPDATE jobs SET state = 'interrupted', finished = ? WHERE state = 'running' "
                f"AND {same_source} AND kind = ?",
                (time.time(), *([] if source_id is None else [source_id]), kind),
            )
            row = conn.execute(
                "INSERT INTO jobs (source_id, kind, state, pid, total, started) "
                "VALUES (?, ?, 'running', ?, ?, ?) RETURNING id",
                (source_id, kind, os.getpid(), total, time.time()),
            ).fetchone()
        return int(row[0])

    def update_job(self, job_id: int, **fields: Any) -> None:
        allowed = {"total", "done", "failed", "current", "message", "state", "finished"}
        if not fields or not set(fields) <= allowed:
            raise ValueError(f"bad job fields: {sorted(fields)}")
        assignments = ", ".join(f"{key} = ?" for key in fields)
        with self.transaction() as conn:
            conn.execute(f"UPDATE jobs SET {assignments} WHERE id = ?", (*fields.values(), job_id))

    def job_alive(self, job: Job) -> bool:
        """Whether a job marked running still has a process behind it (this machine's pid table)."""
        return job.pid is None or pid_alive(job.pid)

    def recent_jobs(self, limit: int = 10) -> list[Job]:
        rows = self._conn().execute("SELECT * FROM jobs ORDER BY id DESC LIMIT ?", (limit,)).fetchall()
        return [Job(**dict(r)) for r in rows]


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


def pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


T = TypeVar("T")


class GenerationCached(Generic[T]):
    """A value derived from the index, recomputed when any process changes it (the store's generation).
    While a large index is being written (`large(value)`), at most every `max_age_s`: recounting 500k chunks
    costs more than the query that needs the count."""

    def __init__(
        self, store: Store, compute: Callable[[], T], large: Callable[[T], bool], max_age_s: float = 5.0
    ) -> None:
        self._store = store
        self._compute = compute
        self._large = large
        self._max_age_s = max_age_s
        self._lock = threading.Lock()
        self._seen: tuple[int, float, T] | None = None  # (generation, monotonic time, value)

    def get(self) -> T:
        with self._lock:
            now = time.monotonic()
            seen = self._seen
            changed, generation = self._store.changed_since(seen[0] if seen else -1)
            if seen is None or (changed and (not self._large(seen[2]) or now - seen[1] > self._max_age_s)):
                seen = (generation, now, self._compute())
                self._seen = seen
            return seen[2]
