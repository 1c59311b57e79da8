"""Any OpenAI-compatible `/v1/embeddings` endpoint: Ollama, llama.cpp, vLLM, TEI, OpenAI."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from citedocs.embed.base import PrefixScheme, check_matrix, make_fingerprint, prefix_scheme_for
from citedocs.errors import EmbedderError

HINT = (
    "Check CITEDOCS_EMBED_BASE_URL / CITEDOCS_EMBED_MODEL and that the server is running, "
    "or set CITEDOCS_EMBEDDER=local."
)


def embeddings_url(base_url: str) -> str:
    """`http://host:11434`, `.../v1` and `.../v1/embeddings` all mean the same endpoint."""
    url = base_url.strip().rstrip("/")
    if url.endswith("/embeddings"):
        return url
    return f"{url}/embeddings" if url.endswith("/v1") else f"{url}/v1/embeddings"


class HttpEmbedder:
    """Batches of `batch_size` texts per request; the dimension is learned from the first answer."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "",
        batch_size: int = 32,
        timeout_s: float = 60.0,
        prefixes: PrefixScheme | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = embeddings_url(base_url)
        self.model = model
        self.name = f"http:{model}"
        self.batch_size = max(1, batch_size)
        self.prefixes = prefixes or prefix_scheme_for(model)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(timeout_s, connect=10.0),
            transport=transport or httpx.HTTPTransport(retries=1),
        )
        self._dim: int | None = None
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        if self._dim is None:
            self.load()
        assert self._dim is not None
        return self._dim

    def load(self) -> None:
        """Ask the server once so a wrong URL or model shows at start-up, not at the first search."""
        with self._lock:
            if self._dim is None:
                self._dim = int(self._request(["dimension probe"]).shape[1])

    def fingerprint(self) -> str:
        return make_fingerprint(self.name, self.dim, self.prefixes, self.model)

    def close(self) -> None:
        self._client.close()

    def _request(self, texts: list[str]) -> np.ndarray:
        try:
            response = self._client.post(self.url, json={"model": self.model, "input": texts})
        except httpx.HTTPError as exc:
            raise EmbedderError(
                f"The embedding endpoint {self.url} could not be reached: {exc}.", HINT
            ) from exc
        if response.status_code >= 400:
            raise EmbedderError(
                f"The embedding endpoint {self.url} answered {response.status_code}: "
                f"{response.text[:300]!r}.",
                HINT,
            )
        try:
            payload: Any = response.json()
            items = sorted(payload["data"], key=lambda item: item.get("index", 0))
            matrix = np.array([item["embedding"] for item in items], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbedderError(
                f"The embedding endpoint {self.url} did not answer in the OpenAI format: "
                f"{response.text[:200]!r}.",
                HINT,
            ) from exc
        return check_matrix(matrix, len(texts), self._dim or 0, self.url)

    def _embed(self, texts: list[str]) -> np.ndarray:
        parts = [self._request(texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        matrix = np.concatenate(parts)
        if self._dim is None:
            self._dim = int(matrix.shape[1])
        return matrix

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._embed([self.prefixes.passage + (t or " ") for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        vectors: np.ndarray = self._embed([self.prefixes.query + (text or " ")])
        return np.asarray(vectors[0], dtype=np.float32)
