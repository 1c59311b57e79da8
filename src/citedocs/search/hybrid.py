"""Semantic and hybrid ranking over the store: a cached vector matrix plus keyword BM25, fused."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from citedocs.search.fusion import rrf
from citedocs.search.vectors import VectorMatrix, matrix_from_blobs
from citedocs.store import Store

CANDIDATES = 50  # per list before fusion; deeper lists did not change top-10 on claude-docs or SciFact


class VectorCache:
    """The index's vectors as one in-memory matrix, rebuilt only when the store's generation moves.

    Measured: a numpy matrix-vector product over 10k x 384 float32 takes ~1 ms on 2 cores, so no ANN
    index is needed at this size (see docs/benchmarks.md).
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
                ids, blobs = self.store.all_vectors()
                self._matrix = VectorMatrix(ids, matrix_from_blobs(blobs, dim)) if ids else None
                self._generation = generation
            return self._matrix


def semantic_ranking(
    matrix: VectorMatrix, query_vec: np.ndarray, k: int, allowed: Sequence[int] | None = None
) -> list[tuple[int, float]]:
    return matrix.top_k(query_vec, k, None if allowed is None else np.asarray(allowed, dtype=np.int64))


def fuse(
    keyword: list[tuple[int, float]], semantic: list[tuple[int, float]], k: int
) -> list[tuple[int, float]]:
    """Reciprocal-rank fusion (k=60) of the two lists; see docs/embedders.md for the measured alternatives."""
    fused = rrf([[i for i, _ in keyword], [i for i, _ in semantic]], k=60)
    return [(int(i), float(s)) for i, s in fused[:k]]  # type: ignore[call-overload]
