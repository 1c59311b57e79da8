"""Load the model in the background so servers start at once and keyword search answers meanwhile."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from citedocs.embed.base import Embedder, Loadable
from citedocs.errors import CitedocsError, EmbedderError


class LazyEmbedder:
    """Wraps an embedder; `state` is "not_loaded", "loading", "ready" or "failed: <reason>".

    Embedding before the model is ready waits for it (loading it in the caller's thread if nobody started
    it); callers that must not wait check `ready` first and fall back to keyword search.
    """

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._go = threading.Event()  # ends a delayed start's wait (`start_loading(after=...)`)
        self._begun = False  # the load itself has started (not only its delayed start)
        self._called_off = False
        self._state = "not_loaded"
        self._error: CitedocsError | None = None

    @property
    def name(self) -> str:
        return self.inner.name  # an "auto" embedder names its model once it has chosen

    @property
    def state(self) -> str:
        return self._state

    @property
    def ready(self) -> bool:
        return self._state == "ready"

    def start_loading(self, after: float = 0.0) -> None:
        """Begin loading in a daemon thread, `after` seconds from now (at once if something waits for the
        model first); calling it again does nothing."""
        with self._lock:
            first = self._state == "not_loaded"
            if first:
                self._state = "loading"
        if after <= 0:
            self._go.set()  # also hurries a delayed start made before
        if first:
            threading.Thread(
                target=self._load_after, args=(after,), name=f"load-{self.name}", daemon=True
            ).start()

    def _load_after(self, after: float) -> None:
        self._go.wait(after)
        with self._lock:
            if self._called_off:
                self._state = "not_loaded"
                self._done.set()
                return
            self._begun = True
        self._load()

    def settle(self, timeout: float | None = None) -> None:
        """For closing (the embedder is not used after): a delayed load that has not begun never begins, one
        under way is waited for (a process must not exit while onnxruntime loads in another thread)."""
        with self._lock:
            if self._state == "loading" and not self._begun:
                self._called_off = True
                self._go.set()
        if self._state == "loading":
            self._done.wait(timeout)

    def _load(self) -> None:
        try:
            if isinstance(self.inner, Loadable):
                self.inner.load()
            self._state = "ready"
        except CitedocsError as exc:
            self._error = exc
            self._state = f"failed: {exc.message}"
        except Exception as exc:
            self._error = EmbedderError(f"Loading the embedding model {self.name} failed: {exc!r}.")
            self._state = f"failed: {self._error.message}"
        finally:
            self._done.set()

    def wait(self, timeout: float | None = None) -> str:
        """Load (or wait for the background load) and return the final state."""
        with self._lock:
            run_here = self._state == "not_loaded"
            if run_here:
                self._state = "loading"
                self._begun = True
        if run_here:
            self._load()
        self._go.set()
        self._done.wait(timeout)
        return self._state

    def _ensure_ready(self) -> None:
        if self._state != "ready":
            self.wait()
        if self._error is not None:
            raise self._error

    @property
    def dim(self) -> int:
        self._ensure_ready()
        return self.inner.dim

    def fingerprint(self) -> str:
        self._ensure_ready()
        return self.inner.fingerprint()

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self._ensure_ready()
        return self.inner.embed_passages(texts)

    def embed_query(self, text: str) -> np.ndarray:
        self._ensure_ready()
        return self.inner.embed_query(text)
