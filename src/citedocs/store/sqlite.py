"""The SQLite store: one file, WAL, one connection per thread, FTS5 BM25, vectors as BLOBs.

Vectors are ranked in memory (search/hybrid.py keeps them as one numpy matrix): at the sizes one SQLite file
serves, an exact matrix product is faster than keeping an approximate index fresh (docs/decisions/keyword-search.md).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from citedocs.errors import CitedocsError, NoIndexError, StoreError
from citedocs.store.base import Connection, Store, document_filter, placeholders
from citedocs.store.leases import Lease, file_lease_held, try_file_lease
from citedocs.store.migrate import latest_version, migrate, schema_version
from citedocs.store.records import ChunkRecord
from citedocs.text.analyzer import fts_match
from citedocs.text.fts5 import fts5_tokens


def connect(path: Path | str, *, create: bool = True) -> sqlite3.Connection:
    """The one connection factory: WAL, foreign keys, a busy timeout for concurrent writers. Without `create`
    the file must exist already (nothing, not even its folder, is made)."""
    if not create and str(path) != ":memory:" and not Path(path).is_file():
        raise NoIndexError(f"There is no index at {path}.", CREATE_HINT)
    try:
        if create and str(path) != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file where a folder should be, no permission, a read-only disk
        raise StoreError(
            f"Cannot create the folder for the index at {path}: {exc.strerror or exc}.",
            "Pass --db (or set CITEDOCS_DB) to a file in a folder you can write to.",
        ) from exc
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


CREATE_HINT = (
    "Read-only commands (search, ask, read, status, list) create no index: run `citedocs add FOLDER` (or "
    "`citedocs add-site NAME URL`) to create it, or pass --db (CITEDOCS_DB) with the index you meant."
)


def _not_usable(path: str, version: int) -> CitedocsError:
    """Why a read-only command cannot use the file at `path` as it is."""
    if version == 0:
        return NoIndexError(f"{path} is not a citedocs index.", CREATE_HINT)
    if version > latest_version():
        return StoreError(
            f"The index at {path} was written by a newer citedocs (schema {version}).",
            "Upgrade citedocs, or point --db at another file.",
        )
    return StoreError(
        f"The index at {path} was written by an older citedocs (schema {version}, this one needs "
        f"{latest_version()}).",
        "Run `citedocs reindex` once to upgrade it (read-only commands do not change an index).",
    )


def _check_usable(path: str) -> None:
    if not Path(path).is_file():
        raise NoIndexError(f"There is no index at {path}.", CREATE_HINT)
    probe = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
    try:
        version = schema_version(probe)
    finally:
        probe.close()
    if version != latest_version():
        raise _not_usable(path, version)


class SQLiteStore(Store):
    def __init__(self, path: Path | str, *, create: bool = True) -> None:
        """Open (and create or migrate) the index at `path`; without `create`, only an existing index of this
        version is opened, as read-only commands need (an index they cannot use is an error saying why)."""
        self.path = str(path)
        self._local = threading.local()
        self._write_lock = threading.RLock()
        self._create = create
        try:
            if (
                not create
            ):  # looked at read-only first: a file that is no index of this version is left untouched
                _check_usable(self.path)
            conn = self._conn()
            if create:
                migrate(conn)
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"{self.path} is not a citedocs index ({exc}).", "Pass --db to use another file."
            ) from exc
        self.generation = self._generation_now()

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self.path, create=self._create)
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
                self._local.keyword_rows = []
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def _lease_base(self) -> str:
        return self.path if self.path != ":memory:" else f":memory:{id(self)}"

    def try_watch_lease(self, source_id: int) -> Lease | None:
        return try_file_lease(self._lease_base(), f"watch-{source_id}")

    def watch_lease_held(self, source_id: int) -> bool:
        return file_lease_held(self._lease_base(), f"watch-{source_id}")

    def _insert_chunks(self, conn: Connection, doc_id: int, chunks: Sequence[ChunkRecord]) -> None:
        """Chunk rows now, their FTS5 rows at `_flush_keyword_rows`, all together: a chunk row written between
        two FTS5 inserts (its foreign key and indexes give the statement a savepoint) made FTS5 write out its
        pending terms as a segment per chunk; merging those was half the store's CPU on SciFact."""
        pending: list[tuple[int, str, str]] = self._keyword_rows()
        for chunk in chunks:
            rowid = conn.execute(
                "INSERT INTO chunks (chunk_id, document_id, ord, heading, page_start, page_end, line_start, "
                "line_end, text, sha256, tokens) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (
                    chunk.chunk_id,
                    doc_id,
                    chunk.ord,
                    chunk.heading,
                    chunk.page_start,
                    chunk.page_end,
                    chunk.line_start,
                    chunk.line_end,
                    chunk.text,
                    chunk.sha256,
                    chunk.tokens,
                ),
            ).fetchone()[0]
            pending.append((rowid, chunk.heading_terms, chunk.body_terms))

    def _keyword_rows(self) -> list[tuple[int, str, str]]:
        rows: list[tuple[int, str, str]] | None = getattr(self._local, "keyword_rows", None)
        if rows is None:
            rows = self._local.keyword_rows = []
        return rows

    def _flush_keyword_rows(self, conn: Connection) -> None:
        rows = self._keyword_rows()
        if rows:
            conn.executemany("INSERT INTO chunks_fts (rowid, heading, body) VALUES (?, ?, ?)", rows)
            rows.clear()

    # -- keyword ----------------------------------------------------------------------------------
    def keyword_search(
        self,
        terms: Sequence[str],
        k: int,
        *,
        source_ids: Sequence[int] | None = None,
        formats: Sequence[str] | None = None,
        heading_weight: float = 2.0,
    ) -> list[tuple[int, float]]:
        if not terms:
            return []
        sql = f"SELECT f.rowid, -bm25(chunks_fts, {float(heading_weight)}, 1.0) AS score FROM chunks_fts f"
        where, args = document_filter(source_ids, formats)
        if where:
            sql += " JOIN chunks c ON c.id = f.rowid JOIN documents d ON d.id = c.document_id"
        sql += " WHERE chunks_fts MATCH ?" + where + " ORDER BY bm25(chunks_fts, ?, 1.0), f.rowid LIMIT ?"
        try:
            rows = self._conn().execute(sql, (fts_match(list(terms)), *args, heading_weight, k)).fetchall()
        except sqlite3.OperationalError as exc:
            raise StoreError(f"Keyword search failed: {exc}.", "Report this query as a bug.") from exc
        return [(int(r[0]), float(r[1])) for r in rows]

    def keyword_terms(self, text: str) -> list[str]:
        return fts5_tokens(text)

    def _keyword_rows_sql(self, every: bool = False) -> str:
        # FTS5's content table holds the indexed strings; reading it directly skips the virtual table.
        return (
            "SELECT c.id, d.source_id, d.format, f.c0, f.c1 FROM chunks c "
            "JOIN documents d ON d.id = c.document_id JOIN chunks_fts_content f ON f.id = c.id"
        )

    def holds_cjk_text(self) -> bool:
        # GLOB ranges compare code points: hiragana to katakana, CJK ideographs (with ext. A), Hangul.
        row = (
            self._conn()
            .execute(
                "SELECT 1 FROM chunks WHERE text GLOB '*[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]*' LIMIT 1"
            )
            .fetchone()
        )
        return row is not None

    def term_document_counts(self, terms: Sequence[str]) -> dict[str, int]:
        if not terms:
            return {}
        rows = (
            self._conn()
            .execute(
                f"SELECT term, doc FROM chunks_vocab WHERE term IN ({placeholders(terms)})", tuple(terms)
            )
            .fetchall()
        )
        found = {str(r[0]): int(r[1]) for r in rows}
        return {t: found.get(t, 0) for t in terms}

    # -- vectors ----------------------------------------------------------------------------------
    def put_vectors(self, items: Sequence[tuple[str, bytes]]) -> None:
        with self.transaction() as conn:
            conn.executemany(
                "INSERT INTO embeddings (sha256, vec) VALUES (?, ?) "
                "ON CONFLICT (sha256) DO UPDATE SET vec = excluded.vec",
                items,
            )
            self._bump(conn)

    def all_vectors(self) -> tuple[list[int], list[bytes]]:
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
                "SELECT e.vec FROM chunks c JOIN embeddings e ON e.sha256 = c.sha256 "
                f"WHERE c.id IN ({placeholders(rowids)})",
                tuple(rowids),
            )
            .fetchall()
        )
        return [bytes(r[0]) for r in rows]

    def clear_vectors(self) -> None:
        with self.transaction() as conn:
            conn.execute("DELETE FROM embeddings")
            conn.execute("DELETE FROM meta WHERE key = 'embed_fingerprint'")
            self._bump(conn)
