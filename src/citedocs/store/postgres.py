"""The PostgreSQL store: a shared index for several processes, with exact BM25 and pgvector HNSW.

Keyword ranking is FTS5's BM25 (k1 1.2, b 0.75, heading terms weighted), computed in SQL from a postings
table: a query reads only its own terms' rows, and every term's document frequency comes from those same
rows, so scores equal SQLite's (measured on SciFact: bench/bench_postgres.py). PostgreSQL's own `ts_rank`
was not used: it has no IDF and no length normalisation of BM25's kind. A tsvector with a GIN index was
measured too and was 10× slower here, because ranking had to unnest every matching row's whole tsvector.

Readers never wait for writers (MVCC); a document is still replaced in one transaction; one indexer per
source at a time is enforced with an advisory lock (`source_lock`).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from importlib import resources
from typing import Any

from citedocs.errors import StoreError
from citedocs.store.base import Connection, GenerationCached, Store, document_filter
from citedocs.store.leases import Lease
from citedocs.store.pg_connection import (
    LOCK_NAMESPACE,
    MIGRATION_LOCK,
    PgConnection,
    lost_connection,
    psycopg,
    redact_dsn,
    row_factory,
)
from citedocs.store.pg_vectors import PgVectors
from citedocs.store.records import ChunkRecord, Job, KeywordRow

LOCK_POLL = 0.2  # seconds between tries while another process indexes a source
WATCH_NAMESPACE = 0x77617463  # "watc": (namespace, source id) is held by the one process watching a folder
MAX_TERM_CHARS = 200  # a btree entry must stay under ~2.7 kB; longer "terms" are base64 and such
_K1, _B = 1.2, 0.75  # FTS5's bm25() constants


class PostgresStore(PgVectors, Store):
    def __init__(self, dsn: str) -> None:
        if psycopg is None:
            raise StoreError(
                "CITEDOCS_DB is a PostgreSQL URL but the PostgreSQL driver is not installed.",
                "Install it with `pip install 'citedocs[postgres]'`.",
            )
        self.dsn = dsn
        self.path = redact_dsn(dsn)
        self._local = threading.local()
        self._all: list[Any] = []
        self._all_lock = threading.Lock()
        self._stats = GenerationCached(self, self._collection_stats, large=lambda stats: stats[0] >= 10_000)
        self._hnsw_dims: set[int] = set()
        self._migrate()
        self.generation = self._generation_now()

    # -- plumbing ---------------------------------------------------------------------------------
    def _connect(self) -> Any:
        try:
            raw = psycopg.connect(self.dsn, autocommit=True, row_factory=row_factory, connect_timeout=10)
        except psycopg.OperationalError as exc:
            raise StoreError(
                f"Cannot connect to PostgreSQL at {self.path}: {str(exc).strip().splitlines()[0]}",
                "Check CITEDOCS_DB (postgresql://user:password@host:port/database) and that the server is up.",
            ) from None
        # The durability of SQLite's WAL with synchronous=NORMAL: a crash may lose the last commits, never
        # consistency, and the indexer redoes a lost document on its next run (its hash was not stored).
        # Measured: an fsync per document made indexing ~2x slower here.
        raw.execute("SET synchronous_commit = off")
        with self._all_lock:
            self._all.append(raw)
        return raw

    def _conn(self) -> PgConnection:
        conn: PgConnection | None = getattr(self._local, "conn", None)
        if conn is None or conn.raw.closed or conn.raw.broken:
            conn = PgConnection(self._connect(), self.path)
            self._local.conn = conn
        return conn

    @contextmanager
    def transaction(self) -> Iterator[PgConnection]:
        conn = self._conn()
        try:
            with conn.raw.transaction():
                yield conn
        except psycopg.OperationalError as exc:  # the commit or rollback of a dropped connection
            raise lost_connection(self.path, exc) from None

    def close(self) -> None:
        with self._all_lock:
            for raw in self._all:
                raw.close()
            self._all.clear()

    def _migrate(self) -> None:
        steps = sorted(
            (int(entry.name[:3]), entry.read_text(encoding="utf-8"))
            for entry in resources.files("citedocs.store").joinpath("pg_migrations").iterdir()
            if entry.name.endswith(".sql") and entry.name[:3].isdigit()
        )
        latest = steps[-1][0]
        try:
            with self.transaction() as conn:
                conn.execute("SELECT pg_advisory_xact_lock(?, ?)", (LOCK_NAMESPACE, MIGRATION_LOCK))
                conn.execute("CREATE TABLE IF NOT EXISTS citedocs_schema (version INTEGER NOT NULL)")
                row = conn.execute("SELECT MAX(version) FROM citedocs_schema").fetchone()
                current = int(row[0] or 0)
                if current > latest:
                    raise StoreError(
                        f"The index was written by a newer citedocs (schema {current}, this one knows {latest}).",
                        "Upgrade citedocs, or point CITEDOCS_DB at another database.",
                    )
                for number, sql in steps:
                    if number > current:
                        conn.raw.execute(sql)
                        conn.execute("INSERT INTO citedocs_schema (version) VALUES (?)", (number,))
        except psycopg.errors.FeatureNotSupported as exc:
            raise StoreError(
                f"PostgreSQL at {self.path} lacks the pgvector extension ({exc}).",
                "Install pgvector on the server (the pgvector/pgvector image has it), then retry.",
            ) from None
        except psycopg.errors.InsufficientPrivilege as exc:
            raise StoreError(
                f"The user in CITEDOCS_DB may not create citedocs' tables or extension ({exc}).",
                "Have an administrator run `CREATE EXTENSION vector` and grant CREATE on the database.",
            ) from None

    @contextmanager
    def source_lock(
        self, source_id: int, *, wait: float = 0.0, on_wait: Callable[[], object] | None = None
    ) -> Iterator[None]:
        raw = self._connect()  # a session of its own: the lock lives exactly as long as it
        try:
            # Polled rather than pg_advisory_lock: a wait stays bounded and a Ctrl-C stops it at once.
            deadline = time.monotonic() + wait
            while not raw.execute(
                "SELECT pg_try_advisory_lock(%s, %s)", (LOCK_NAMESPACE, source_id)
            ).fetchone()[0]:
                if on_wait is not None:
                    on_wait()
                    on_wait = None
                if time.monotonic() >= deadline:
                    raise StoreError(
                        f"Another process is indexing source {source_id} in this database right now.",
                        "Wait for it to finish (`citedocs status` shows its progress), then run this again.",
                    )
                time.sleep(LOCK_POLL)
            try:
                yield
            finally:
                # Unlock before closing: a closed session's locks go only when its backend has exited,
                # which another session can observe (pg_locks) a moment later.
                with suppress(Exception):
                    raw.execute("SELECT pg_advisory_unlock(%s, %s)", (LOCK_NAMESPACE, source_id))
        finally:
            raw.close()
            with self._all_lock:
                if raw in self._all:
                    self._all.remove(raw)

    def try_watch_lease(self, source_id: int) -> Lease | None:
        raw = self._connect()  # a session of its own, kept while the lease is held
        got = raw.execute("SELECT pg_try_advisory_lock(%s, %s)", (WATCH_NAMESPACE, source_id)).fetchone()[0]
        lease = _SessionLease(self, raw, source_id)
        if not got:
            lease.release()
            return None
        return lease

    def watch_lease_held(self, source_id: int) -> bool:
        row = (
            self._conn()
            .execute(
                "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = ? AND objid = ? AND granted "
                "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                (WATCH_NAMESPACE, source_id),
            )
            .fetchone()
        )
        return row is not None

    def _forget(self, raw: Any) -> None:
        raw.close()
        with self._all_lock:
            if raw in self._all:
                self._all.remove(raw)

    def job_alive(self, job: Job) -> bool:
        """Indexers may run on other machines, so a pid says nothing: an index job lives as long as its
        source's advisory lock is held; other jobs are trusted."""
        if job.kind != "index" or job.source_id is None:
            return True
        row = (
            self._conn()
            .execute(
                "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = ? AND objid = ? AND granted "
                "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                (LOCK_NAMESPACE, job.source_id),
            )
            .fetchone()
        )
        return row is not None

    # -- keyword ----------------------------------------------------------------------------------
    def _insert_chunks(self, conn: Any, doc_id: int, chunks: Sequence[ChunkRecord]) -> None:
        """Chunks and their postings in one statement (one round trip): measured 2× faster per document
        than two COPYs, whose start and finish cost more than a document's few hundred rows."""
        if len({c.ord for c in chunks}) != len(chunks):
            raise ValueError("chunk ords must be unique within a document")
        terms: list[str] = []
        ords: list[int] = []
        heading_counts: list[int] = []
        body_counts: list[int] = []
        lengths: list[int] = []
        chunk_lengths = []
        for chunk in chunks:
            postings, length = _postings(chunk)
            chunk_lengths.append(length)
            for term, (heading, body) in postings.items():
                terms.append(term)
                ords.append(chunk.ord)
                heading_counts.append(heading)
                body_counts.append(body)
                lengths.append(length)
        conn.execute(
            """WITH new_chunks AS (
                INSERT INTO chunks (chunk_id, document_id, ord, heading, page_start, page_end, line_start,
                                    line_end, text, sha256, tokens, terms)
                SELECT u.chunk_id, ?, u.ord, u.heading, u.page_start, u.page_end, u.line_start, u.line_end,
                       u.text, u.sha256, u.tokens, u.terms
                FROM unnest(CAST(? AS text[]), CAST(? AS int[]), CAST(? AS text[]), CAST(? AS int[]),
                            CAST(? AS int[]), CAST(? AS int[]), CAST(? AS int[]), CAST(? AS text[]),
                            CAST(? AS text[]), CAST(? AS int[]), CAST(? AS int[]))
                     AS u(chunk_id, ord, heading, page_start, page_end, line_start, line_end, text, sha256,
                          tokens, terms)
                RETURNING id, ord
            )
            INSERT INTO postings (term, chunk_id, in_heading, in_body, length)
            SELECT p.term, c.id, p.in_heading, p.in_body, p.length
            FROM unnest(CAST(? AS text[]), CAST(? AS int[]), CAST(? AS smallint[]), CAST(? AS smallint[]),
                        CAST(? AS int[])) AS p(term, ord, in_heading, in_body, length)
            JOIN new_chunks c ON c.ord = p.ord""",
            (
                doc_id,
                [c.chunk_id for c in chunks],
                [c.ord for c in chunks],
                [c.heading for c in chunks],
                [c.page_start for c in chunks],
                [c.page_end for c in chunks],
                [c.line_start for c in chunks],
                [c.line_end for c in chunks],
                [c.text for c in chunks],
                [c.sha256 for c in chunks],
                [c.tokens for c in chunks],
                chunk_lengths,
                terms,
                ords,
                heading_counts,
                body_counts,
                lengths,
            ),
            binary=True,  # text arrays are escaped element by element: measured 1.8 ms of 6 per document
        )

    def _collection_stats(self) -> tuple[int, float]:
        """(chunks, their average length in terms), as FTS5 keeps them."""
        row = self._conn().execute("SELECT COUNT(*), AVG(terms) FROM chunks").fetchone()
        return int(row[0]), float(row[1] or 0.0)

    def keyword_search(
        self,
        terms: Sequence[str],
        k: int,
        *,
        source_ids: Sequence[int] | None = None,
        formats: Sequence[str] | None = None,
        heading_weight: float = 2.0,
    ) -> list[tuple[int, float]]:
        wanted = sorted({t[:MAX_TERM_CHARS] for t in terms if t})
        if not wanted:
            return []
        total, avg_length = self._stats.get()
        if total == 0:
            return []
        sql = f"""
            WITH p AS (
                SELECT term, chunk_id, in_heading * ? + in_body AS f, length FROM postings WHERE term = ANY(?)
            ), df AS (SELECT term, COUNT(*) AS n FROM p GROUP BY term),
            scored AS (
                SELECT p.chunk_id, SUM(
                    GREATEST(LN((GREATEST(?, df.n) - df.n + 0.5) / (df.n + 0.5)), 1e-6)
                    * p.f * {_K1 + 1} / (p.f + {_K1} * ({1 - _B} + {_B} * p.length / ?))
                ) AS score
                FROM p JOIN df USING (term) GROUP BY p.chunk_id
            )
            SELECT s.chunk_id, s.score FROM scored s"""
        where, filter_args = document_filter(source_ids, formats)
        if where:
            sql += " JOIN chunks c ON c.id = s.chunk_id JOIN documents d ON d.id = c.document_id WHERE 1 = 1"
        sql += where + " ORDER BY s.score DESC, s.chunk_id LIMIT ?"
        args = [float(heading_weight), wanted, total, max(avg_length, 1e-9), *filter_args, k]
        rows = self._conn().execute(sql, args).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows]

    def keyword_terms(self, text: str) -> list[str]:
        return [t[:MAX_TERM_CHARS] for t in text.split()]

    def _keyword_rows_sql(self, every: bool = False) -> str:
        # The postings hold each term's count per column; a term repeated that many times gives BM25 the
        # same frequencies and length as the chunk's own term string. For every chunk, one aggregation over
        # the postings (measured: a subquery per chunk took 7 s for SciFact's 5.5k chunks).
        if every:
            return (
                "SELECT c.id, d.source_id, d.format, p.h, p.b FROM chunks c "
                "JOIN documents d ON d.id = c.document_id LEFT JOIN ("
                "SELECT chunk_id, string_agg(repeat(term || ' ', in_heading), '') AS h, "
                "string_agg(repeat(term || ' ', in_body), '') AS b FROM postings GROUP BY chunk_id"
                ") p ON p.chunk_id = c.id"
            )
        return (
            "SELECT c.id, d.source_id, d.format, "
            "(SELECT string_agg(repeat(p.term || ' ', p.in_heading), '') FROM postings p WHERE p.chunk_id = c.id), "
            "(SELECT string_agg(repeat(p.term || ' ', p.in_body), '') FROM postings p WHERE p.chunk_id = c.id) "
            "FROM chunks c JOIN documents d ON d.id = c.document_id"
        )

    @contextmanager
    def _read_snapshot(self) -> Iterator[Connection]:
        conn = self._conn()
        try:
            with conn.raw.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                yield conn
        except psycopg.OperationalError as exc:
            raise lost_connection(self.path, exc) from None

    def _stream(self, conn: Connection, sql: str) -> Iterable[KeywordRow]:
        """A server-side cursor: the whole index never sits in this process as rows at once."""
        assert isinstance(conn, PgConnection)
        with conn.raw.cursor(name="citedocs_keyword_rows") as cur:
            cur.itersize = 2000
            cur.execute(sql)
            for row in cur:
                yield (int(row[0]), int(row[1]), row[2], row[3] or "", row[4] or "")

    def holds_cjk_text(self) -> bool:
        row = (
            self._conn()
            .execute("SELECT 1 FROM chunks WHERE text ~ '[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]' LIMIT 1")
            .fetchone()
        )
        return row is not None

    def term_document_counts(self, terms: Sequence[str]) -> dict[str, int]:
        if not terms:
            return {}
        rows = (
            self._conn()
            .execute(
                "SELECT term, COUNT(*) FROM postings WHERE term = ANY(?) GROUP BY term",
                ([t[:MAX_TERM_CHARS] for t in terms],),
            )
            .fetchall()
        )
        found = {str(r[0]): int(r[1]) for r in rows}
        return {t: found.get(t[:MAX_TERM_CHARS], 0) for t in terms}


def _postings(chunk: ChunkRecord) -> tuple[dict[str, tuple[int, int]], int]:
    """term -> (count in the heading, count in the body), and the chunk's length in terms."""
    heading, body = chunk.heading_terms.split(), chunk.body_terms.split()
    counts: dict[str, list[int]] = {}
    for column, words in ((0, heading), (1, body)):
        for word in words:
            counts.setdefault(word[:MAX_TERM_CHARS], [0, 0])[column] += 1
    return {t: (min(h, 32767), min(b, 32767)) for t, (h, b) in counts.items()}, len(heading) + len(body)


class _SessionLease:
    """An advisory lock held by its own session: closing the session (or losing it) lets go of it."""

    def __init__(self, store: PostgresStore, raw: Any, source_id: int) -> None:
        self._store = store
        self._raw: Any = raw
        self._source_id = source_id

    def release(self) -> None:
        if self._raw is not None:
            # unlocked before closing: a closed session's locks linger until its backend has exited
            with contextlib.suppress(psycopg.Error):
                self._raw.execute("SELECT pg_advisory_unlock(%s, %s)", (WATCH_NAMESPACE, self._source_id))
            self._store._forget(self._raw)
            self._raw = None
