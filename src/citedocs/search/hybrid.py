"""Semantic and hybrid ranking over the store: a cached vector matrix plus keyword BM25, fused."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from citedocs.embed.blob import matrix_from_blobs
from citedocs.search.fusion import convex
from citedocs.search.vectors import VectorMatrix, limit_blas_threads
from citedocs.store import Store
from citedocs.store.base import GenerationCached

CANDIDATES = 100  # per list before fusion (the depth the fusion study tuned on; see docs/embedders.md)
SEMANTIC_WEIGHT = 0.5  # tuned on SciFact train queries, confirmed on SciFact test and claude-docs


class VectorCache:
    """The index's vectors as one in-memory matrix, rebuilt only when the store's generation moves.

    Measured: a numpy matrix-vector product over 10k x 384 float32 takes ~1 ms on 2 cores, so no ANN
    index is needed at this size (see docs/decisions/keyword-search.md).
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._generation = -1
        self._matrix: VectorMatrix | None = None

    def matrix(self, dim: int) -> VectorMatrix | None:
        with self._lock:
            changed, generation = self.store.changed_since(self._generation)
            if changed or self._matrix is None:
                limit_blas_threads()
                ids, blobs = self.store.all_vectors()
                self._matrix = VectorMatrix(ids, matrix_from_blobs(blobs, dim)) if ids else None
                self._generation = generation
            return self._matrix


class VectorSearch:
    """Nearest chunks to a vector: the store's own index where it has one (PostgreSQL's HNSW), else the
    in-memory matrix."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.native = store.native_vector_search
        self.cache = VectorCache(store)
        self._counts = GenerationCached(store, store.vector_counts, large=lambda counts: counts[1] >= 10_000)

    @property
    def counts(self) -> tuple[int, int]:
        """(chunks with a vector, all chunks), cached per index generation."""
        return self._counts.get()

    def top_k(
        self,
        query: np.ndarray,
        k: int,
        *,
        source_ids: Sequence[int] | None = None,
        formats: Sequence[str] | None = None,
    ) -> list[tuple[int, float]]:
        if self.native:
            return self.store.nearest(query, k, source_ids=source_ids, formats=formats)
        matrix = self.cache.matrix(int(query.shape[0]))
        if matrix is None:
            return []
        allowed = self.store.rowids_matching(source_ids, formats) if source_ids or formats else None
        return matrix.top_k(query, k, None if allowed is None else np.asarray(allowed, dtype=np.int64))


def fuse(
    keyword: list[tuple[int, float]], semantic: list[tuple[int, float]], k: int
) -> list[tuple[int, float]]:
    """Convex combination of z-scored BM25 and cosine scores (0.5 each).

    Measured against RRF k=60 on data it was not tuned on: SciFact test nDCG@10 0.723 vs 0.711, claude-docs
    section nDCG@10 0.791 vs 0.746 (docs/embedders.md). Scores keep their margins, which RRF throws away.
    """
    if not keyword or not semantic:
        return (keyword or semantic)[:k]
    fused = convex([keyword, semantic], weights=[1.0 - SEMANTIC_WEIGHT, SEMANTIC_WEIGHT], method="zscore")
    return [(int(i), float(s)) for i, s in fused[:k]]  # type: ignore[call-overload]
