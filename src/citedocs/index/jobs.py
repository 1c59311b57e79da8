"""The jobs that write one index, and their order: keyword indexing, OCR, embedding, folder watching.

One object owns the locks and threads, so `remove` can wait for the indexer to leave a folder (no write for a
deleted folder follows its deletion), the watcher's changes are indexed while a long embedding pass runs
(embedding takes a lock of its own), and `stop` winds every thread down in an order that never exits the
process while onnxruntime loads or runs in another thread ("terminate called", exit 134).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from citedocs.embed.auto import CHOICE_KEY, AutoEmbedder
from citedocs.embed.lazy import LazyEmbedder
from citedocs.errors import NotFoundError
from citedocs.index.embedding import EmbedProgress, embed_pending
from citedocs.index.reanalysis import mark_analyzed, needs_reanalysis
from citedocs.settings import Settings
from citedocs.store import Source, Store

if TYPE_CHECKING:
    # The folder indexer and OCR (with the parsers and the chunker behind them) load on the first indexing
    # pass: a process that only searches never needs them (~0.02 s of an MCP server's first answer).
    from citedocs.index.folders import FolderIndexer, IndexProgress, ProgressCallback
    from citedocs.index.ocr import OcrProgress
    from citedocs.index.watch import Rerunner, WatchManager

_log = logging.getLogger(__name__)
_T = TypeVar("_T")

CLOSE_WAIT_FOR_MODEL_S = 60.0
# Another process indexing the same source (a replica's watcher applying a change, a second `citedocs add`)
# is waited for, not an error: its pass takes seconds, and then this one finds little left to do.
INDEXER_WAIT = 300.0


def _waiting(source: Source) -> None:
    _log.warning(
        "Another process is indexing %r right now; waiting for it to finish (up to %d minutes).",
        source.name,
        INDEXER_WAIT // 60,
    )


class IndexJobs:
    """Indexing, OCR, embedding and watching for one store; `Citedocs` delegates to it."""

    def __init__(self, store: Store, settings: Settings, embedder: LazyEmbedder | None) -> None:
        self.store = store
        self.settings = settings
        self.embedder = embedder
        self.closing = threading.Event()  # background indexing and embedding stop at their next file or batch
        self.lock = threading.RLock()  # one writer of chunks in this process
        self._embed_lock = threading.Lock()
        # Which folder the indexer is on, and which are being removed.
        self._indexing = threading.Condition()
        self._active_source: int | None = None
        self._cancelled: set[int] = set()
        self._embed_thread: threading.Thread | None = None
        self._background: list[threading.Thread] = []  # prefetch jobs; they stop at their next page on close
        self.watcher: WatchManager | None = None
        self._embed_changes: Rerunner | None = None

    def stop(self) -> None:
        """Ask every job to stop and wait for each (the store is closed after this)."""
        self.closing.set()
        if self.watcher is not None:
            self.watcher.stop()
        if self._embed_changes is not None:
            self._embed_changes.join(CLOSE_WAIT_FOR_MODEL_S)
        if self.embedder is not None:
            self.embedder.settle(CLOSE_WAIT_FOR_MODEL_S)
        if self._background:
            from citedocs.sources.fetch import FETCH_TIMEOUT_S  # httpx: only where pages were fetched

            for job in self._background:
                job.join(FETCH_TIMEOUT_S + 5)
        thread = self._embed_thread
        if thread is not None and thread.is_alive() and thread is not threading.current_thread():
            thread.join(CLOSE_WAIT_FOR_MODEL_S)

    # -- folders ----------------------------------------------------------------------------------
    def index(
        self,
        sources: Sequence[Source],
        *,
        force: bool = False,
        progress: ProgressCallback | None = None,
        refresh_site: Callable[[Source], object] | None = None,
        every_folder: bool = False,
    ) -> list[IndexProgress]:
        """Index `sources` in turn (a site by `refresh_site`, skipped without it); when they are
        `every_folder`, the index is recorded as analyzed by this version afterwards."""
        from citedocs.index.folders import FolderIndexer

        reports = []
        with self.lock:
            stale = needs_reanalysis(self.store)
            indexer = FolderIndexer(self.store, self.settings, progress)
            for source in sources:
                with self.store.source_lock(
                    source.id, wait=INDEXER_WAIT, on_wait=functools.partial(_waiting, source)
                ):
                    if source.kind == "folder":
                        report = self._index_folder(indexer, source, force or stale)
                        if report is not None:
                            reports.append(report)
                    elif refresh_site is not None:
                        refresh_site(source)
            if stale and every_folder:
                mark_analyzed(self.store)
        return reports

    @contextmanager
    def removing(self, source_id: int) -> Iterator[None]:
        """Cancel indexing of a folder (between two files) and wait for it, for the length of the block."""
        with self._indexing:
            self._cancelled.add(source_id)
            while self._active_source == source_id:
                self._indexing.wait()
        try:
            yield
        finally:
            with self._indexing:
                self._cancelled.discard(source_id)

    def folders_changed(self) -> None:
        """A folder was registered or removed: the watcher follows."""
        if self.watcher is not None:
            self.watcher.sync()

    def _index_folder(
        self, indexer: FolderIndexer, source: Source, force: bool, paths: Sequence[str] | None = None
    ) -> IndexProgress | None:
        """Index one folder (or only `paths` in it) unless it is being (or has been) removed; None then."""
        if paths is not None:
            return self._on_folder(source, lambda s, stop: indexer.index_paths(s, paths, should_stop=stop))
        return self._on_folder(source, lambda s, stop: indexer.index(s, force=force, should_stop=stop))

    def _on_folder(self, source: Source, work: Callable[[Source, Callable[[], bool]], _T]) -> _T | None:
        """Run `work` on one folder unless it is being (or has been) removed (None then); `removing` waits."""
        with self._indexing:
            if source.id in self._cancelled:
                return None
            try:
                source = self.store.source_by_id(source.id)
            except NotFoundError:
                return None
            self._active_source = source.id
        try:
            stop = lambda: self.closing.is_set() or source.id in self._cancelled  # noqa: E731
            return work(source, stop)
        finally:
            with self._indexing:
                self._active_source = None
                self._indexing.notify_all()

    def ocr(self, *, progress: Callable[[OcrProgress], None] | None = None) -> OcrProgress | None:
        """OCR the scanned PDFs keyword indexing set aside (CITEDOCS_OCR); None when OCR is off.

        Resumable: a file stays marked until its OCRed text is stored, so a stopped pass picks it up again."""
        if not self.settings.ocr:
            return None
        from citedocs.index.ocr import (
            OcrProgress,
            finish_ocr_job,
            ocr_source,
            pending_documents,
            start_ocr_job,
        )

        with self.lock:
            sources = self.store.list_sources("folder")
            state = OcrProgress(total=sum(len(pending_documents(self.store, s)) for s in sources))
            if not state.total:
                return state
            job, started, finished = start_ocr_job(self.store, state.total), time.perf_counter(), True
            try:
                for source in sources:
                    with self.store.source_lock(
                        source.id, wait=INDEXER_WAIT, on_wait=functools.partial(_waiting, source)
                    ):
                        done = self._on_folder(
                            source,
                            lambda s, stop: ocr_source(
                                self.store,
                                self.settings,
                                s,
                                state,
                                job=job,
                                should_stop=stop,
                                progress=progress,
                            ),
                        )
                    finished = finished and done is not False and not self.closing.is_set()
            except Exception as exc:
                self.store.update_job(job, state="failed", message=str(exc), finished=time.time())
                raise
            finish_ocr_job(self.store, job, state, started, stopped=not finished)
            return state

    # -- embedding --------------------------------------------------------------------------------
    def embed(
        self, *, force: bool = False, progress: Callable[[EmbedProgress], None] | None = None
    ) -> EmbedProgress | None:
        """Vectors for every chunk that lacks one (after indexing); None when keyword-only."""
        if self.embedder is None:
            return None
        with self._embed_lock:
            if force:
                with self.lock:
                    self.store.clear_vectors()
                if isinstance(self.embedder.inner, AutoEmbedder):  # re-embedding everything: choose again
                    self.store.set_meta(CHOICE_KEY, "")
                    self.embedder.inner.reset()
            return embed_pending(
                self.store,
                self.embedder,
                batch=self.settings.embed_batch,
                progress=progress,
                should_stop=self.closing.is_set,
            )

    def wait_for_embeddings(self, timeout: float | None = None) -> None:
        """Block until the background embedding pass (if any) is done; run it here if none is running."""
        thread = self._embed_thread
        if thread is not None and thread.is_alive():
            thread.join(timeout)
        elif self.embedder is not None:
            self.embed()

    def in_background(self, index: Callable[[], object], *, force: bool = False) -> threading.Thread:
        """`index()`, then embedding, then OCR (slow, so last) and embedding of what it read, in a daemon
        thread; the jobs table shows progress."""

        def work() -> None:
            try:
                index()
                if not self.closing.is_set():
                    self.embed(force=force)
                if not self.closing.is_set() and self.settings.ocr:
                    ocred = self.ocr()
                    if ocred is not None and ocred.ocred and not self.closing.is_set():
                        self.embed()
            except Exception as exc:  # recorded in the jobs table; the thread must not die noisily
                _log.warning("background indexing stopped: %s", exc)

        thread = threading.Thread(target=work, daemon=True, name="citedocs-indexer")
        self._embed_thread = thread
        thread.start()
        return thread

    def track(self, thread: threading.Thread) -> None:
        """A background job (a site prefetch) that `stop` waits for."""
        self._background.append(thread)

    def embed_soon(self) -> None:
        """Embed what lacks vectors in the background (once more if a pass is already running)."""
        if self.embedder is None or self.closing.is_set():
            return
        self._embed_rerunner().kick()

    def _embed_rerunner(self) -> Rerunner:
        """The one background embedding pass that the watcher and fetched site pages both kick."""
        from citedocs.index.watch import Rerunner

        with self._indexing:
            if self._embed_changes is None:
                self._embed_changes = Rerunner(self.embed, "citedocs-embed-changes", self.closing)
            return self._embed_changes

    # -- watching (serve and mcp) -----------------------------------------------------------------
    def start_watching(self, *, catch_up: bool = True) -> None:
        """Keep the registered folders current while a server runs (CITEDOCS_WATCH; index/watch.py)."""
        from citedocs.index.watch import WatchManager

        if self.watcher is None:
            self._embed_rerunner()
            self.watcher = WatchManager(self.store, self.settings, self._apply_changes, catch_up=catch_up)
        self.watcher.start()

    def watch_status(self) -> list[dict[str, Any]]:
        """Each folder's watcher: state (watching, polling, standby, error, off), reason, last change."""
        from citedocs.index.watch import watch_status

        watcher = self.watcher
        return watch_status(
            self.store,
            watcher.states() if watcher else None,
            disabled=watcher is not None and not self.settings.watch,
        )

    def _apply_changes(self, source_id: int, paths: Sequence[str] | None) -> IndexProgress | None:
        """What the watcher saw change (or the whole folder, for None), indexed incrementally; then embedded."""
        from citedocs.index.folders import FolderIndexer

        with self.lock, self.store.source_lock(source_id):
            source = self.store.source_by_id(source_id)  # NotFoundError once removed: the watcher stops
            report = self._index_folder(FolderIndexer(self.store, self.settings), source, False, paths)
        if report is not None and report.indexed and self._embed_changes is not None and self.embedder:
            self._embed_changes.kick()
        return report
