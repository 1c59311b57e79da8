"""Exact nearest neighbours over stored vectors with numpy (the BLOB format is `embed.blob`).

Vectors are L2-normalised, so the dot product is the cosine. At ~10k × 384 a float32 matrix-vector product
takes well under a millisecond on one core; exact search is cheaper than keeping an approximate index fresh.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence

import numpy as np

from citedocs.blas import BLAS_ENV

# BLAS threads for query-time math. Measured on the 2-core machine (bench/bench_search_path.py, docs/performance.md):
# scoring 5k x 384 float32 took 0.8 ms with one OpenBLAS thread and 17-30 ms with its default two, which
# wait on each other and on the server's own threads; a matrix-vector product gains nothing from a second core.
QUERY_BLAS_THREADS = 1
_blas_lock = threading.Lock()
_blas_set = False


def limit_blas_threads() -> None:
    """Run numpy's BLAS with `QUERY_BLAS_THREADS` for the rest of the process (once), unless the user chose a
    number with OPENBLAS_NUM_THREADS, OMP_NUM_THREADS or MKL_NUM_THREADS."""
    global _blas_set
    with _blas_lock:
        if _blas_set:
            return
        _blas_set = True
        if any(os.environ.get(name) for name in BLAS_ENV):  # the user's choice, or set before numpy loaded
            return
        from threadpoolctl import threadpool_limits  # enumerates the loaded libraries: only when needed

        threadpool_limits(QUERY_BLAS_THREADS, user_api="blas")


def quantise_int8(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(int8 matrix, per-dimension float32 scale) with vectors ≈ codes * scale."""
    peak = np.abs(vectors).max(axis=0) if len(vectors) else np.ones(vectors.shape[1], dtype=np.float32)
    scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    codes = np.clip(np.rint(vectors / scale), -127, 127).astype(np.int8)
    return codes, scale


class VectorMatrix:
    """Rows of `vectors` keyed by `ids` (chunk ids); `int8=True` stores a quarter of the bytes."""

    def __init__(self, ids: Sequence[int] | np.ndarray, vectors: np.ndarray, int8: bool = False) -> None:
        self.ids = np.asarray(ids, dtype=np.int64)
        matrix = np.asarray(vectors, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[0] != self.ids.shape[0]:
            raise ValueError(f"{self.ids.shape[0]} ids for a vector matrix of shape {matrix.shape}")
        self.dim = matrix.shape[1]
        self.int8 = int8
        self._scale: np.ndarray | None = None
        if int8:
            self._codes, self._scale = quantise_int8(matrix)
        else:
            self._codes = np.ascontiguousarray(matrix)

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    @property
    def nbytes(self) -> int:
        return int(self._codes.nbytes)

    def scores(self, query: np.ndarray) -> np.ndarray:
        """Cosine of every row with `query` (normalised), in row order."""
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        if q.shape[0] != self.dim:
            raise ValueError(f"query has {q.shape[0]} dimensions, the matrix {self.dim}")
        if self._scale is not None:
            result: np.ndarray = self._codes.astype(np.float32) @ (q * self._scale)
            return result
        result = self._codes @ q
        return result

    def _mask(self, allowed: np.ndarray) -> np.ndarray:
        allowed = np.asarray(allowed)
        if allowed.dtype == np.bool_:
            if allowed.shape != self.ids.shape:
                raise ValueError(f"boolean mask of {allowed.shape[0]} rows for {len(self)} vectors")
            return allowed
        return np.isin(self.ids, allowed.astype(np.int64))

    def top_k(self, query: np.ndarray, k: int, allowed: np.ndarray | None = None) -> list[tuple[int, float]]:
        """The k best (id, cosine), best first, ties by id; `allowed` is a row mask or an array of ids."""
        if k <= 0 or len(self) == 0:
            return []
        scores = self.scores(query)
        rows = np.arange(len(self))
        if allowed is not None:
            rows = np.flatnonzero(self._mask(allowed))
            scores = scores[rows]
        if scores.shape[0] > k:
            keep = np.argpartition(-scores, k - 1)[:k]
            rows, scores = rows[keep], scores[keep]
        order = np.lexsort((self.ids[rows], -scores))
        return [(int(self.ids[rows[i]]), float(scores[i])) for i in order]
