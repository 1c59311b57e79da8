"""sentence-transformers models where it is installed (it brings PyTorch, so it is never a default)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from citedocs.embed.base import PrefixScheme, check_matrix, cpu_threads, make_fingerprint, prefix_scheme_for
from citedocs.errors import EmbedderError

INSTALL_HINT = "Install it with `pip install sentence-transformers`, or set CITEDOCS_EMBEDDER=local."


class SentenceTransformerEmbedder:
    """`model` is a name sentence-transformers can resolve offline (a local folder or a cached model)."""

    def __init__(self, model: str, batch_size: int = 32, prefixes: PrefixScheme | None = None) -> None:
        self.model_name = model
        self.name = f"st:{model}"
        self.batch_size = max(1, batch_size)
        self.prefixes = prefixes or prefix_scheme_for(model)
        self._lock = threading.Lock()
        self._model: Any = None
        self._dim = 0

    @property
    def dim(self) -> int:
        self.load()
        return self._dim

    def fingerprint(self) -> str:
        return make_fingerprint(self.name, self.dim, self.prefixes, self.model_name)

    def load(self) -> None:
        with self._lock:
            if self._model is not None:
                return
            try:
                import torch
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise EmbedderError(
                    f"CITEDOCS_EMBEDDER={self.name} needs sentence-transformers.", INSTALL_HINT
                ) from exc
            torch.set_num_threads(cpu_threads())
            try:
                model = SentenceTransformer(self.model_name, device="cpu")
            except Exception as exc:
                raise EmbedderError(
                    f"sentence-transformers could not load {self.model_name!r}: {exc}.",
                    "Give a local model folder (no model is downloaded), or set CITEDOCS_EMBEDDER=local.",
                ) from exc
            self._dim = int(model.get_sentence_embedding_dimension() or 0)
            self._model = model

    def _encode(self, texts: list[str]) -> np.ndarray:
        self.load()
        vectors = self._model.encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True
        )
        return check_matrix(vectors, len(texts), self._dim, self.name)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._encode([self.prefixes.passage + t for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        vectors: np.ndarray = self._encode([self.prefixes.query + text])
        return np.asarray(vectors[0], dtype=np.float32)
