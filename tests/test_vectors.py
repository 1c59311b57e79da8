from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from citedocs.embed.blob import from_blob, matrix_from_blobs, to_blob
from citedocs.errors import StoreError
from citedocs.search.vectors import VectorMatrix, quantise_int8


def _unit_rows(rows: int, dim: int, seed: int = 0) -> np.ndarray:
    matrix = np.random.default_rng(seed).normal(size=(rows, dim)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def test_top_k_matches_brute_force() -> None:
    vectors = _unit_rows(500, 32)
    ids = np.arange(1000, 1500)
    index = VectorMatrix(ids, vectors)
    query = _unit_rows(1, 32, seed=1)[0]
    expected = np.argsort(-(vectors @ query))[:10]
    got = index.top_k(query, 10)
    assert [i for i, _ in got] == [int(ids[j]) for j in expected]
    assert [s for _, s in got] == pytest.approx([float(vectors[j] @ query) for j in expected], abs=1e-6)


def test_top_k_with_allowed_mask_and_id_list() -> None:
    vectors = _unit_rows(50, 8)
    index = VectorMatrix(np.arange(50) * 2, vectors)
    query = vectors[7]
    mask = np.zeros(50, dtype=bool)
    mask[[3, 7, 9]] = True
    by_mask = index.top_k(query, 2, allowed=mask)
    assert by_mask[0] == (14, pytest.approx(1.0))
    assert {i for i, _ in by_mask} <= {6, 14, 18}
    assert index.top_k(query, 5, allowed=np.array([6, 18])) == index.top_k(query, 5, allowed=mask)[1:]
    assert index.top_k(query, 3, allowed=np.zeros(50, dtype=bool)) == []


def test_top_k_small_and_edge_cases() -> None:
    index = VectorMatrix([5, 6], np.array([[1.0, 0.0], [1.0, 0.0]], dtype=np.float32))
    assert index.top_k(np.array([1.0, 0.0]), 10) == [(5, 1.0), (6, 1.0)]
    assert index.top_k(np.array([1.0, 0.0]), 0) == []
    assert VectorMatrix([], np.zeros((0, 2), dtype=np.float32)).top_k(np.array([1.0, 0.0]), 3) == []
    with pytest.raises(ValueError):
        index.top_k(np.array([1.0, 0.0, 0.0]), 1)


def test_int8_keeps_the_ranking_and_quarters_the_bytes() -> None:
    vectors = _unit_rows(2000, 64)
    exact, small = VectorMatrix(np.arange(2000), vectors), VectorMatrix(np.arange(2000), vectors, int8=True)
    assert small.nbytes * 4 == exact.nbytes
    queries = _unit_rows(20, 64, seed=3)
    overlap = [
        len({i for i, _ in exact.top_k(q, 10)} & {i for i, _ in small.top_k(q, 10)}) / 10 for q in queries
    ]
    assert np.mean(overlap) >= 0.9
    codes, scale = quantise_int8(vectors)
    assert np.abs(codes.astype(np.float32) * scale - vectors).max() < 0.01


def test_blob_round_trip() -> None:
    vector = _unit_rows(1, 384)[0]
    blob = to_blob(vector)
    assert len(blob) == 384 * 4
    assert np.array_equal(from_blob(blob, 384), vector)
    assert np.array_equal(matrix_from_blobs([blob, blob], 384), np.stack([vector, vector]))


def test_blob_errors_say_what_to_do() -> None:
    with pytest.raises(StoreError, match="reindex --force"):
        from_blob(to_blob(np.zeros(3)), 4)
    with pytest.raises(StoreError):
        from_blob(b"abc")
    with pytest.raises(StoreError):
        matrix_from_blobs([b"\0" * 8, b"\0" * 4], 2)


def blas_threads_after_limit(env: dict[str, str]) -> int:
    code = (
        "from threadpoolctl import threadpool_info\n"
        "from citedocs.search.vectors import limit_blas_threads\n"
        "limit_blas_threads()\n"
        "print(min(i['num_threads'] for i in threadpool_info() if i['user_api'] == 'blas'))\n"
    )
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
    }
    out = subprocess.run(
        [sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True, check=True
    )
    return int(out.stdout.strip())


def test_query_time_math_runs_on_one_blas_thread_unless_the_user_chose_a_number() -> None:
    assert blas_threads_after_limit({}) == 1
    assert blas_threads_after_limit({"OPENBLAS_NUM_THREADS": "2"}) == 2
