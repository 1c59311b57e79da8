"""How a vector is stored: little-endian float32 bytes, the same on every machine and in both backends."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from citedocs.errors import StoreError

__all__ = ["FINGERPRINT_KEY", "from_blob", "matrix_from_blobs", "to_blob"]

# The store's meta key holding the fingerprint of the model that made the stored vectors.
FINGERPRINT_KEY = "embed_fingerprint"

_FLOAT32_LE = np.dtype("<f4")


def to_blob(vector: np.ndarray) -> bytes:
    """A vector as little-endian float32 bytes, the same on every machine."""
    return np.ascontiguousarray(vector, dtype=_FLOAT32_LE).tobytes()


def from_blob(blob: bytes, dim: int | None = None) -> np.ndarray:
    """The float32 vector stored by `to_blob`; `dim` checks the length."""
    if len(blob) % 4:
        raise StoreError(
            f"A stored vector has {len(blob)} bytes, not a multiple of 4.", "Run `citedocs reindex`."
        )
    vector = np.frombuffer(blob, dtype=_FLOAT32_LE).astype(np.float32)
    if dim is not None and vector.shape[0] != dim:
        raise StoreError(
            f"A stored vector has {vector.shape[0]} dimensions, the embedder has {dim}.",
            "Run `citedocs reindex --force` to re-embed with the current model.",
        )
    return vector


def matrix_from_blobs(blobs: Sequence[bytes], dim: int) -> np.ndarray:
    """Many BLOBs as one [n, dim] float32 matrix (one copy, no per-row arrays)."""
    joined = b"".join(blobs)
    if len(joined) != len(blobs) * dim * 4:
        raise StoreError("Stored vectors have mixed sizes.", "Run `citedocs reindex --force`.")
    return np.frombuffer(joined, dtype=_FLOAT32_LE).astype(np.float32).reshape(len(blobs), dim)
