"""The one library surface that every front end (CLI, MCP, HTTP) calls.

It owns the store and the search engine for one Settings; front ends only translate arguments and errors.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from citedocs.embed.auto import CHOICE_KEY, AutoEmbedder, choice_from_fingerprint
from citedocs.embed.blob import FINGERPRINT_KEY
from citedocs.embed.factory import make_embedder
from citedocs.embed.lazy import LazyEmbedder
from citedocs.errors import AccessDenied, InputError, NotFoundError
from citedocs.index.embedding import EmbedProgress, embed_pending
from citedocs.index.folders import FolderIndexer, IndexProgress, ProgressCallback, pin_source
from citedocs.index.ocr import (
    OcrProgress,
    finish_ocr_job,
    ocr_options,
    ocr_source,
    ocr_status,
    pending_documents,
    start_ocr_job,
)
from citedocs.index.reanalysis import STALE_NOTE, mark_analyzed, needs_reanalysis
from citedocs.parsers import parse_bytes
from citedocs.search.engine import SearchEngine, SearchResult, not_indexed_error
from citedocs.settings import Settings
from citedocs.sources.confined import FolderHandle, Opened, read_capped
from citedocs.sources.folders import open_confined, system_folder_problem
from citedocs.store import Source, Store, open_store
from citedocs.text import cjk

if TYPE_CHECKING:
    from citedocs.answer.retriever import Retriever
    from citedocs.answer.service import AnswerEvent, AnswerService
    from citedocs.index.watch import Rerunner, WatchManager
    from citedocs.llm.client import ChatModel
    from citedocs.sites.service import SiteService

_log = logging.getLogger(__name__)
_T = TypeVar("_T")

CLOSE_WAIT_FOR_MODEL_S = 60.0


@dataclass(slots=True)
class ReadResult:
    path: str
    start_line: int
    end_line: int
    total_lines: int
    text: str
    format: str | None = None


@dataclass(slots=True)
class SourceInfo:
    kind: str
    name: str
    uri: str
    status: str
    docs: int
    chunks: int
    failed: int
    last_indexed: float | None
    last_error: str | None
    options: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = {k: getattr(self, k) for k in self.__slots__}
        if self.kind == "folder":
            data["path"] = self.uri
        return data


class Citedocs:
    def __init__(self, settings: Settings, store: Store | None = None) -> None:
        self.settings = settings
        cjk.configure(settings.cjk_segmenter)
        self.store = store if store is not None else open_store(settings.db)
        self._index_lock = threading.RLock()
        self._sites_lock = (
            threading.Lock()
        )  # apart from the index lock: a site search must not wait for indexing
        self.embedder: LazyEmbedder | None = make_embedder(settings, self._embedder_choice())
        self.engine = SearchEngine(
            self.store, self.embedder, settings.search_mode, keyword_memory=settings.keyword_memory
        )
        self._embed_thread: threading.Thread | None = None
        self._closing = threading.Event()
        self._sites: SiteService | None = None
        # Which folder the indexer is on, and which are being removed: `remove` waits for the first to
        # leave a folder it has asked to stop, so no write for a deleted folder can follow its deletion.
        self._indexing = threading.Condition()
        self._active_source: int | None = None
        self._cancelled: set[int] = set()
        self._links_checked = False
        self._background: list[threading.Thread] = []  # prefetch jobs; they stop at their next page on close
        # Folder watching (serve and mcp only): embedding takes a lock of its own, so the watcher's changes
        # are indexed while a long embedding pass runs.
        self._embed_lock = threading.Lock()
        self._watcher: WatchManager | None = None
        self._embed_changes: Rerunner | None = None

    def _embedder_choice(self) -> str | None:
        """What an "auto" embedder chose for this index (or, for an older index, what embedded it)."""
        return self.store.get_meta(CHOICE_KEY) or choice_from_fingerprint(
            self.store.get_meta(FINGERPRINT_KEY)
        )

    def close(self) -> None:
        self._closing.set()  # background indexing and embedding stop at their next file or batch
        if self._watcher is not None:
            self._watcher.stop()
        if self._embed_changes is not None:
            self._embed_changes.join(CLOSE_WAIT_FOR_MODEL_S)
        # A process must not exit while onnxruntime loads or runs in another thread ("terminate called", exit
        # 134): wait for a model load, and for the background job to reach that stop (it resumes next time).
        if self.embedder is not None and self.embedder.state == "loading":
            self.embedder.wait(CLOSE_WAIT_FOR_MODEL_S)
        for job in self._background:
            job.join(self.settings.fetch_timeout_s + 5)
        thread = self._embed_thread
        if thread is not None and thread.is_alive() and thread is not threading.current_thread():
            thread.join(CLOSE_WAIT_FOR_MODEL_S)
        self.engine.close()
        if self._sites is not None:
            self._sites.close()
        self.store.close()

    @property
    def sites(self) -> SiteService:
        """The llms.txt sites registry, built on first use (its link index is in memory)."""
        with self._sites_lock:
            if self._sites is None:
                from citedocs.sites.service import SiteService

                self._sites = SiteService(self.store, self.settings)
            return self._sites

    def start_model(self) -> None:
        """Begin loading the embedding model in the background (servers call this at start-up)."""
        if self.embedder is not None:
            self.embedder.start_loading()

    def model_state(self) -> str:
        return "disabled" if self.embedder is None else self.embedder.state

    # -- folders ----------------------------------------------------------------------------------
    def add_folder(
        self,
        path: str | Path,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        *,
        allow_system_folder: bool = False,
    ) -> Source:
        """Register a folder; the filesystem root, system trees (/proc, /etc, …) and the whole home folder are
        refused unless `allow_system_folder` (the CLI's --allow-system-folder; MCP never passes it)."""
        folder = Path(path).expanduser()
        try:
            resolved = folder.resolve(strict=True)
        except (OSError, RuntimeError) as exc:
            raise NotFoundError(f"{path} does not exist.", "Check the path and try again.") from exc
        if not resolved.is_dir():
            raise InputError(f"{path} is a file, not a folder.", "Register the folder that contains it.")
        problem = system_folder_problem(resolved)
        if problem and not allow_system_folder:
            raise AccessDenied(
                f"{problem}; registering it would let every client read what is in it.",
                "Register the folder that holds your documents instead; to register this one anyway, run "
                f"`citedocs add --allow-system-folder {resolved}` (MCP clients cannot).",
            )
        for existing in self.store.list_sources("folder"):
            other = Path(existing.uri)
            if resolved == other:
                return existing
            if resolved.is_relative_to(other):
                raise InputError(
                    f"{resolved} is already covered by the registered folder {other}.",
                    "Search it with `--folder` instead of registering it again.",
                )
        with FolderHandle.pin(resolved) as handle:
            identity = list(handle.identity)
        added = self.store.add_source("folder", str(resolved), str(resolved),
                                      {"include": list(include), "exclude": list(exclude), "identity": identity})  # fmt: skip
        if self._watcher is not None:
            self._watcher.sync()
        return added

    def folders(self) -> list[Path]:
        return [Path(s.uri) for s in self.store.list_sources("folder")]

    def find_source(self, name_or_path: str) -> Source:
        source = self.store.find_source(name_or_path)
        if source is None:
            try:
                resolved = str(Path(name_or_path).expanduser().resolve())
            except (OSError, RuntimeError):
                resolved = name_or_path
            source = self.store.find_source(resolved)
        if source is None:
            raise NotFoundError(
                f"{name_or_path} is not a registered folder or site.",
                "Run `citedocs list` to see what is registered.",
            )
        return source

    def remove(self, name_or_path: str) -> Source:
        """Unregister and purge; a folder being indexed is cancelled first (between two files) and waited for."""
        source = self.find_source(name_or_path)
        if source.kind == "site":
            self.sites.remove(source.name)
            return source
        with self._indexing:
            self._cancelled.add(source.id)
            while self._active_source == source.id:
                self._indexing.wait()
        try:
            self.store.remove_source(source.id)
            self.store.purge_orphan_vectors()
        finally:
            with self._indexing:
                self._cancelled.discard(source.id)
        if self._watcher is not None:
            self._watcher.sync()
        return source

    def list_sources(self, kind: str | None = None) -> list[SourceInfo]:
        out = []
        for s in self.store.list_sources(kind):  # type: ignore[arg-type]
            counts = self.store.counts(s.id)
            out.append(SourceInfo(s.kind, s.name, s.uri, s.status, counts["indexed"], counts["chunks"],
                                  counts["failed"], s.last_indexed, s.last_error, s.options))  # fmt: skip
        return out

    def index(
        self, name: str | None = None, *, force: bool = False, progress: ProgressCallback | None = None
    ) -> list[IndexProgress]:
        sources = [self.find_source(name)] if name else self.store.list_sources("folder")
        reports = []
        with self._index_lock:
            stale = needs_reanalysis(self.store)
            indexer = FolderIndexer(self.store, self.settings, progress)
            for source in sources:
                with self.store.source_lock(source.id):  # one indexer per source across processes
                    if source.kind == "folder":
                        report = self._index_folder(indexer, source, force or stale)
                        if report is not None:
                            reports.append(report)
                    elif name:
                        self.sites.refresh(source.name)
            if stale and not name:
                mark_analyzed(self.store)
        return reports

    def _index_folder(
        self, indexer: FolderIndexer, source: Source, force: bool, paths: Sequence[str] | None = None
    ) -> IndexProgress | None:
        """Index one folder (or only `paths` in it) unless it is being (or has been) removed; None then."""
        if paths is not None:
            return self._on_folder(source, lambda s, stop: indexer.index_paths(s, paths, should_stop=stop))
        return self._on_folder(source, lambda s, stop: indexer.index(s, force=force, should_stop=stop))

    def _on_folder(self, source: Source, work: Callable[[Source, Callable[[], bool]], _T]) -> _T | None:
        """Run `work` on one folder unless it is being (or has been) removed (None then); `remove` waits."""
        with self._indexing:
            if source.id in self._cancelled:
                return None
            try:
                source = self.store.source_by_id(source.id)
            except NotFoundError:
                return None
            self._active_source = source.id
        try:
            stop = lambda: self._closing.is_set() or source.id in self._cancelled  # noqa: E731
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
        with self._index_lock:
            sources = self.store.list_sources("folder")
            state = OcrProgress(total=sum(len(pending_documents(self.store, s)) for s in sources))
            if not state.total:
                return state
            job, started, finished = start_ocr_job(self.store, state.total), time.perf_counter(), True
            try:
                for source in sources:
                    with self.store.source_lock(source.id):
                        done = self._on_folder(source, lambda s, stop: ocr_source(
                            self.store, self.settings, s, state, job=job, should_stop=stop, progress=progress))  # fmt: skip
                    finished = finished and done is not False and not self._closing.is_set()
            except Exception as exc:
                self.store.update_job(job, state="failed", message=str(exc), finished=time.time())
                raise
            finish_ocr_job(self.store, job, state, started, stopped=not finished)
            return state

    def embed(
        self, *, force: bool = False, progress: Callable[[EmbedProgress], None] | None = None
    ) -> EmbedProgress | None:
        """Vectors for every chunk that lacks one (after indexing); None when keyword-only."""
        if self.embedder is None:
            return None
        with self._embed_lock:
            if force:
                with self._index_lock:
                    self.store.clear_vectors()
                if isinstance(self.embedder.inner, AutoEmbedder):  # re-embedding everything: choose again
                    self.store.set_meta(CHOICE_KEY, "")
                    self.embedder.inner.reset()
            return embed_pending(self.store, self.embedder, batch=self.settings.embed_batch, progress=progress,
                                 should_stop=self._closing.is_set)  # fmt: skip

    def wait_for_embeddings(self, timeout: float | None = None) -> None:
        """Block until the background embedding pass (if any) is done; run it here if none is running."""
        thread = self._embed_thread
        if thread is not None and thread.is_alive():
            thread.join(timeout)
        elif self.embedder is not None:
            self.embed()

    def index_in_background(self, name: str | None = None, *, force: bool = False) -> threading.Thread:
        """Keyword indexing, then embedding, in a daemon thread; `status()` reports progress."""

        def work() -> None:
            try:
                self.index(name, force=force)
                if not self._closing.is_set():
                    self.embed(force=force)
                if not self._closing.is_set() and self.settings.ocr:  # scanned PDFs last: OCR is slow
                    ocred = self.ocr()
                    if ocred is not None and ocred.ocred and not self._closing.is_set():
                        self.embed()
            except Exception as exc:  # recorded in the jobs table; the thread must not die noisily
                _log.warning("background indexing stopped: %s", exc)

        thread = threading.Thread(target=work, daemon=True, name="citedocs-indexer")
        self._embed_thread = thread
        thread.start()
        return thread

    # -- watching (serve and mcp) --------------------------------------------------------------------
    def start_watching(self, *, catch_up: bool = True) -> None:
        """Keep the registered folders current while a server runs (CITEDOCS_WATCH; index/watch.py); with
        `catch_up`, each folder is first rescanned for what changed while no server ran (`serve` indexes at
        start anyway). One-shot commands never call it."""
        from citedocs.index.watch import WatchManager

        if self._watcher is None:
            self._embed_rerunner()
            self._watcher = WatchManager(self.store, self.settings, self._apply_changes, catch_up=catch_up)
        self._watcher.start()

    def watch_status(self) -> list[dict[str, Any]]:
        """Each folder's watcher: state (watching, polling, standby, error, off), reason, last change."""
        from citedocs.index.watch import watch_status

        watcher = self._watcher
        return watch_status(self.store, watcher.states() if watcher else None,
                            disabled=watcher is not None and not self.settings.watch)  # fmt: skip

    def _apply_changes(self, source_id: int, paths: Sequence[str] | None) -> IndexProgress | None:
        """What the watcher saw change (or the whole folder, for None), indexed incrementally; then embedded."""
        with self._index_lock, self.store.source_lock(source_id):
            source = self.store.source_by_id(source_id)  # NotFoundError once removed: the watcher stops
            report = self._index_folder(FolderIndexer(self.store, self.settings), source, False, paths)
        if report is not None and report.indexed and self._embed_changes is not None and self.embedder:
            self._embed_changes.kick()
        return report

    # -- status -----------------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        jobs = []
        for job in self.store.recent_jobs(10):
            state = job.state
            if state == "running" and not self.store.job_alive(job):
                state = "interrupted"
            jobs.append({"id": job.id, "source_id": job.source_id, "kind": job.kind, "state": state,
                         "total": job.total, "done": job.done, "failed": job.failed, "current": job.current,
                         "message": job.message, "started": job.started, "finished": job.finished})  # fmt: skip
        have, total = self.store.vector_counts()
        return {
            "db": self.store.path,
            "embedder": {
                "name": None if self.embedder is None else self.embedder.name,
                "state": self.model_state(),
                "vectors": have,
                "chunks": total,
                "fingerprint": self.store.get_meta(FINGERPRINT_KEY),
            },
            "totals": self.store.counts(),
            "sources": [s.to_dict() for s in self.list_sources()],
            "jobs": jobs,
            "failures": [{"path": p, "reason": r} for p, r in self.store.failed_documents()],
            "watch": self.watch_status(),
            "ocr": ocr_status(self.store, self.settings),
            "keyword_index": self.engine.keyword.status(),
        }

    def file_types(self) -> dict[str, int]:
        """Indexed documents per format: the values `search(file_type=...)` accepts that match something."""
        return self.store.format_counts()

    # -- search -----------------------------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        k: int | None = None,
        mode: str | None = None,
        source: str | None = None,
        file_type: str | None = None,
        wait_for_model: bool = False,
    ) -> SearchResult:
        """Ranked passages, and site pages not fetched yet (kind "link") among them; `note` says when a
        degraded mode (keyword while the model loads) answered."""
        self._ensure_link_documents()
        source_ids = [self.find_source(source).id] if source else None
        result = self.engine.search(query, k=self.settings.top_k if k is None else k, mode=mode,
                                    source_ids=source_ids, file_type=file_type, wait_for_model=wait_for_model)  # fmt: skip
        if needs_reanalysis(self.store):
            result.note = f"{result.note} {STALE_NOTE}" if result.note else STALE_NOTE
        return result

    def _ensure_link_documents(self) -> None:
        """Sites registered before unfetched pages were searchable get their link documents, once per index."""
        if not self._links_checked:
            self._links_checked = True
            from citedocs.sites.links import ensure_link_documents

            ensure_link_documents(self.store)

    def find_similar(self, path: str, k: int = 5) -> SearchResult:
        """Files most like the given one (inside a registered folder)."""
        resolved, opened = self._open(path)
        os.close(opened.fd)
        found = self.store.document_by_path(str(resolved))
        if found is None or found[0].id is None:
            indexing = any(
                s.status == "indexing" and resolved.is_relative_to(s.uri)
                for s in self.store.list_sources("folder")
            )
            raise not_indexed_error(path, indexing=indexing)
        return self.engine.similar(found[0].id, str(resolved), k)

    # -- answers ----------------------------------------------------------------------------------
    def answer_service(
        self, llm: ChatModel | None, *, retriever: Retriever | None = None, **options: Any
    ) -> AnswerService:
        """The one way to answer: this index (or `retriever`) through `llm`; servers keep one for their life."""
        from citedocs.answer.retriever import LocalRetriever
        from citedocs.answer.service import AnswerService

        return AnswerService(retriever or LocalRetriever(self), llm, self.settings, **options)

    def ask(
        self,
        question: str,
        *,
        k: int | None = None,
        mode: str | None = None,
        on_event: Callable[[AnswerEvent], None] | None = None,
    ) -> dict[str, Any]:
        """A cited, checked answer (sources plus every field of `done`); starts the configured model if needed.

        `on_event` sees each event as it happens (the CLI prints tokens as they stream)."""
        from citedocs.answer.oneshot import ask_blocking
        from citedocs.answer.retriever import LocalRetriever

        retriever = LocalRetriever(self, wait_for_model=True)
        return ask_blocking(retriever, self.settings, question, k=k, mode=mode, on_event=on_event)

    def fetch_site_page(self, url: str, *, embed: bool = True) -> int:
        """Fetch a listed page into the index (its chunks replace its link); returns its chunk count.

        `embed`: start embedding the new chunks in the background (a server; a one-off process leaves them to
        the next one)."""
        page = self.sites.fetch(url)
        found = self.store.document_by_path(page.url)
        chunks = len(self.store.document_rowids(found[0].id)) if found and found[0].id else 0
        if embed:
            self._embed_soon()
        return chunks

    def prefetch_site(
        self, name: str, limit: int | None = None, *, progress: Callable[[Any], None] | None = None
    ) -> Any:
        """Fetch a site's pages ahead of questions (all, or the first `limit` not stored yet); stops with
        the process and resumes next time. Returns a PrefetchProgress."""
        return self.sites.prefetch(name, limit, progress=progress, should_stop=self._closing.is_set)

    def prefetch_in_background(self, name: str, limit: int | None = None) -> threading.Thread:
        """`prefetch_site` in a daemon thread (servers), then embedding of the new pages; `status()` shows it."""
        self.sites.site(name)  # an unknown name fails here, in the caller's thread

        def work() -> None:
            try:
                self.prefetch_site(name, limit)
                self._embed_soon()
            except Exception as exc:
                _log.warning("prefetching site %s stopped: %s", name, exc)

        thread = threading.Thread(target=work, daemon=True, name=f"citedocs-prefetch-{name}")
        self._background.append(thread)
        thread.start()
        return thread

    def _embed_soon(self) -> None:
        """Embed what lacks vectors in the background (once more if a pass is already running)."""
        if self.embedder is None or self._closing.is_set():
            return
        self._embed_rerunner().kick()

    def _embed_rerunner(self) -> Rerunner:
        """The one background embedding pass that the watcher and fetched site pages both kick."""
        from citedocs.index.watch import Rerunner

        with self._indexing:
            if self._embed_changes is None:
                self._embed_changes = Rerunner(self.embed, "citedocs-embed-changes", self._closing)
            return self._embed_changes

    # -- reading ----------------------------------------------------------------------------------
    def _pin(self, folder: Path) -> FolderHandle:
        source = self.store.find_source(str(folder))
        if source is None:
            return FolderHandle.pin(folder)
        return pin_source(self.store, source)

    def _open(self, path: str) -> tuple[Path, Opened]:
        """The real path and the open descriptor of a regular file inside a registered folder."""
        folder, opened = open_confined(path, self.folders(), self._pin)
        return folder.joinpath(*opened.rel_parts), opened

    def read(self, path: str, start_line: int | None = None, end_line: int | None = None) -> ReadResult:
        """Lines of a file's text, read from the descriptor that was opened and checked inside the folder."""
        resolved, opened = self._open(path)
        max_bytes = int(self.settings.max_file_mb * 1_048_576)
        try:
            data = read_capped(opened, max_bytes, resolved.name)
        finally:
            os.close(opened.fd)
        # an OCRed PDF is OCRed again to serve its lines (the same pages give the same text)
        parsed = parse_bytes(
            data, resolved.name, max_bytes, ocr=ocr_options(self.settings) if self.settings.ocr else None
        )
        lines = parsed.text.split("\n")
        start = max(1, start_line or 1)
        end = min(len(lines), end_line or len(lines))
        if start > len(lines):
            raise InputError(f"{path} has only {len(lines)} lines.", f"Ask for lines 1-{len(lines)}.")
        return ReadResult(
            str(resolved), start, end, len(lines), "\n".join(lines[start - 1 : end]), parsed.format
        )
