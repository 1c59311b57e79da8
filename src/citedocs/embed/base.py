"""The embedder protocol and the small helpers every implementation shares."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from citedocs.errors import EmbedderError


class Embedder(Protocol):
    """Turns passages and queries into L2-normalised float32 vectors of one space.

    Not runtime-checkable on purpose: `isinstance` would read `dim`, which may load the model.
    """

    name: str

    @property
    def dim(self) -> int: ...

    def fingerprint(self) -> str: ...

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


@runtime_checkable
class Loadable(Protocol):
    """An embedder whose weights load on first use; `load()` does it now (idempotent, thread-safe)."""

    def load(self) -> None: ...


@dataclass(frozen=True)
class PrefixScheme:
    """What a model expects in front of queries and passages (e5, bge and nomic were trained so)."""

    name: str = "none"
    query: str = ""
    passage: str = ""


NO_PREFIX = PrefixScheme()
E5_PREFIX = PrefixScheme("e5", "query: ", "passage: ")
BGE_PREFIX = PrefixScheme("bge", "Represent this sentence for searching relevant passages: ", "")
NOMIC_PREFIX = PrefixScheme("nomic", "search_query: ", "search_document: ")


def prefix_scheme_for(model: str) -> PrefixScheme:
    """The prefix scheme a model name implies; models we do not recognise get none."""
    lowered = model.lower()
    if re.search(r"(^|[/_-])(multilingual-)?e5([-_]|$)", lowered):
        return E5_PREFIX
    if "bge" in lowered and "m3" not in lowered and "-zh" not in lowered:
        return BGE_PREFIX
    if "nomic-embed" in lowered:
        return NOMIC_PREFIX
    return NO_PREFIX


def make_fingerprint(name: str, dim: int, prefixes: PrefixScheme, weights_id: str) -> str:
    """A stable id of a vector space: vectors with different fingerprints must never be compared."""
    digest = hashlib.sha256(f"{prefixes.query}\0{prefixes.passage}\0{weights_id}".encode()).hexdigest()[:16]
    return f"{name}|dim={dim}|prefix={prefixes.name}|{digest}"


def l2_normalise(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    vectors = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    normalised: np.ndarray = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    return normalised


def cpu_threads(limit: int = 4) -> int:
    """Intra-op threads: the cores this process may use, capped so a server stays responsive."""
    try:
        available = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        available = os.cpu_count() or 1
    return max(1, min(limit, available))


def check_matrix(vectors: np.ndarray, count: int, dim: int, origin: str) -> np.ndarray:
    """The model's output as a normalised [count, dim] float32 matrix, or an EmbedderError naming `origin`."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] != count or (dim and matrix.shape[1] != dim):
        raise EmbedderError(
            f"{origin} returned vectors of shape {matrix.shape}, expected ({count}, {dim}).",
            "Check that the embedding model is the one the index was built with.",
        )
    return l2_normalise(matrix)
