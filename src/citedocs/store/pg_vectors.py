"""pgvector for the PostgreSQL store: vectors stored once per embedding input, ranked by the server (HNSW over
every vector, an exact scan when a filter narrows the chunks)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence

import numpy as np

from citedocs.store.changes import ChangeLog
from citedocs.store.connection import document_filter
from citedocs.store.pg_connection import LOCK_NAMESPACE, MIGRATION_LOCK, PgConnection

__all__ = ["PgVectors"]


def _vector_text(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in np.asarray(vector, dtype=np.float32).tolist()) + "]"


class PgVectors(ChangeLog):
    """The vector half of `PostgresStore`."""

    _hnsw_dims: set[int]  # dimensions whose HNSW index exists (made once per process)

    @abstractmethod
    def _conn(self) -> PgConnection: ...

    @property
    def native_vector_search(self) -> bool:
        return True

    def put_vectors(self, items: Sequence[tuple[str, bytes]]) -> None:
        if not items:
            return
        rows = [(sha, _vector_text(np.frombuffer(blob, dtype="<f4"))) for sha, blob in items]
        with self.transaction() as conn:
            conn.executemany(
                "INSERT INTO embeddings (sha256, vec) VALUES (?, CAST(? AS vector)) "
                "ON CONFLICT (sha256) DO UPDATE SET vec = excluded.vec",
                rows,
            )
            self._bump(conn)

    def index_vectors(self, dim: int) -> None:
        """An HNSW index for this dimension (inner product: vectors are unit length, so it is the cosine).

        Made after the first embedding pass, in one build: measured on SciFact, growing it row by row cost
        4.6 ms per vector on 2 cores. Later vectors are added to it as they come; until it exists, vector
        search is an exact scan (correct, slower)."""
        if dim in self._hnsw_dims:
            return
        with self.transaction() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(?, ?)", (LOCK_NAMESPACE, MIGRATION_LOCK))
            conn.execute("SET LOCAL maintenance_work_mem = '512MB'")  # the graph fits: a much faster build
            conn.execute(
                f"CREATE INDEX IF NOT EXISTS embeddings_hnsw_{int(dim)} ON embeddings "
                f"USING hnsw ((vec::vector({int(dim)})) vector_ip_ops)"
            )
        self._hnsw_dims.add(dim)

    def vectors_for_rowids(self, rowids: Sequence[int]) -> list[bytes]:
        if not rowids:
            return []
        rows = (
            self._conn()
            .execute(
                "SELECT CAST(e.vec AS real[]) FROM chunks c JOIN embeddings e ON e.sha256 = c.sha256 "
                "WHERE c.id = ANY(?)",
                (list(rowids),),
            )
            .fetchall()
        )
        return [np.asarray(r[0], dtype="<f4").tobytes() for r in rows]

    def nearest(
        self,
        query: np.ndarray,
        k: int,
        *,
        source_ids: Sequence[int] | None = None,
        formats: Sequence[str] | None = None,
    ) -> list[tuple[int, float]]:
        """HNSW over all vectors; with filters, an exact scan of the filtered chunks (HNSW filters after
        the search, so a narrow filter would come back short)."""
        dim = int(query.shape[0])
        text = _vector_text(query)
        conn = self._conn()
        if source_ids is None and formats is None:
            ef_search = max(40, min(1000, 2 * k))
            if conn.ef_search != ef_search:  # a session setting: one round trip per connection, not per query
                conn.execute(f"SET hnsw.ef_search = {ef_search}")
                conn.ef_search = ef_search
            rows = conn.execute(
                f"WITH nn AS (SELECT sha256, (vec::vector({dim})) <#> CAST(? AS vector({dim})) AS d "
                f"FROM embeddings ORDER BY (vec::vector({dim})) <#> CAST(? AS vector({dim})) LIMIT ?) "
                "SELECT c.id, -nn.d FROM nn JOIN chunks c ON c.sha256 = nn.sha256 ORDER BY nn.d, c.id LIMIT ?",
                (text, text, k, k),
            ).fetchall()
            return [(int(r[0]), float(r[1])) for r in rows]
        where, filter_args = document_filter(source_ids, formats)
        sql = (
            "SELECT c.id, -(e.vec <#> CAST(? AS vector)) AS score FROM chunks c "
            "JOIN documents d ON d.id = c.document_id JOIN embeddings e ON e.sha256 = c.sha256 WHERE 1 = 1"
        )
        rows = conn.execute(
            sql + where + " ORDER BY score DESC, c.id LIMIT ?", (text, *filter_args, k)
        ).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows]

    def clear_vectors(self) -> None:
        with self.transaction() as conn:
            conn.execute("DELETE FROM embeddings")
            conn.execute("DELETE FROM meta WHERE key = 'embed_fingerprint'")
            self._bump(conn)
