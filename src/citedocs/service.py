"""The one library surface that every front end (CLI, MCP, HTTP) calls.

It owns the store and the search engine for one Settings; front ends only translate arguments and errors.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from citedocs.embed.auto import CHOICE_KEY, AutoEmbedder, choice_from_fingerprint
from citedocs.embed.blob import FINGERPRINT_KEY
from citedocs.embed.factory import make_embedder
from citedocs.embed.lazy import LazyEmbedder
from citedocs.errors import AccessDenied, InputError, NotFoundError
from citedocs.index.embedding import EmbedProgress, embed_pending
from citedocs.index.folders import FolderIndexer, IndexProgress, ProgressCallback, pin_source
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
    from citedocs.llm.client import ChatModel
    from citedocs.sites.service import SiteService

_log = logging.getLogger(__name__)

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

    def _embedder_choice(self) -> str | None:
        """What an "auto" embedder chose for this index (or, for an older index, what embedded it)."""
        return self.store.get_meta(CHOICE_KEY) or choice_from_fingerprint(
            self.store.get_meta(FINGERPRINT_KEY)
        )

    def close(self) -> None:
        self._closing.set()  # background indexing and embedding stop at their next file or batch
        # A process must not exit while onnxruntime loads or runs in another thread ("terminate called", exit
        # 134): wait for a model load, and for the background job to reach that stop (it resumes next time).
        if self.embedder is not None and self.embedder.state == "loading":
            self.embedder.wait(CLOSE_WAIT_FOR_MODEL_S)
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
        return self.store.add_source("folder", str(resolved), str(resolved),
                                     {"include": list(include), "exclude": list(exclude), "identity": identity})  # fmt: skip

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

    def _index_folder(self, indexer: FolderIndexer, source: Source, force: bool) -> IndexProgress | None:
        """Index one folder unless it is being (or has been) removed; None then."""
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
            return indexer.index(source, force=force, should_stop=stop)
        finally:
            with self._indexing:
                self._active_source = None
                self._indexing.notify_all()

    def embed(
        self, *, force: bool = False, progress: Callable[[EmbedProgress], None] | None = None
    ) -> EmbedProgress | None:
        """Vectors for every chunk that lacks one (after indexing); None when keyword-only."""
        if self.embedder is None:
            return None
        with self._index_lock:
            if force:
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
            except Exception as exc:  # recorded in the jobs table; the thread must not die noisily
                _log.warning("background indexing stopped: %s", exc)

        thread = threading.Thread(target=work, daemon=True, name="citedocs-indexer")
        self._embed_thread = thread
        thread.start()
        return thread

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
            "keyword_index": self.engine.keyword.status(),
        }

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
        """Ranked passages; `note` says when a degraded mode (keyword while the model loads) answered."""
        source_ids = [self.find_source(source).id] if source else None
        result = self.engine.search(query, k=self.settings.top_k if k is None else k, mode=mode,
                                    source_ids=source_ids, file_type=file_type, wait_for_model=wait_for_model)  # fmt: skip
        if needs_reanalysis(self.store):
            result.note = f"{result.note} {STALE_NOTE}" if result.note else STALE_NOTE
        return result

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
        parsed = parse_bytes(data, resolved.name, max_bytes)
        lines = parsed.text.split("\n")
        start = max(1, start_line or 1)
        end = min(len(lines), end_line or len(lines))
        if start > len(lines):
            raise InputError(f"{path} has only {len(lines)} lines.", f"Ask for lines 1-{len(lines)}.")
        return ReadResult(
            str(resolved), start, end, len(lines), "\n".join(lines[start - 1 : end]), parsed.format
        )
