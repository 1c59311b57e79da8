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

from citedocs.embed.auto import CHOICE_KEY, choice_from_fingerprint
from citedocs.embed.blob import FINGERPRINT_KEY
from citedocs.embed.factory import make_embedder
from citedocs.embed.lazy import LazyEmbedder
from citedocs.errors import AccessDenied, InputError, NotFoundError
from citedocs.index.embedding import EmbedProgress
from citedocs.index.folders import IndexProgress, ProgressCallback
from citedocs.index.jobs import IndexJobs
from citedocs.index.ocr import OcrProgress, ocr_status
from citedocs.index.reading import ReadResult, open_registered, read_lines
from citedocs.index.reanalysis import STALE_NOTE, needs_reanalysis
from citedocs.search.distinct import distinct_hits
from citedocs.search.engine import MAX_K, SearchEngine, SearchResult, not_indexed_error
from citedocs.settings import Settings
from citedocs.sources.confined import FolderHandle
from citedocs.sources.folders import system_folder_problem
from citedocs.store import Source, Store, open_store
from citedocs.text import cjk

if TYPE_CHECKING:
    from citedocs.answer.retriever import Retriever
    from citedocs.answer.service import AnswerEvent, AnswerService
    from citedocs.llm.client import ChatModel
    from citedocs.sites.service import SiteService

_log = logging.getLogger(__name__)

__all__ = ["Citedocs", "ReadResult", "SourceInfo"]


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
        # apart from the index lock: a site search must not wait for indexing
        self._sites_lock = threading.Lock()
        self.embedder: LazyEmbedder | None = make_embedder(settings, self._embedder_choice())
        self.engine = SearchEngine(
            self.store, self.embedder, settings.search_mode, keyword_memory=settings.keyword_memory
        )
        self.jobs = IndexJobs(self.store, settings, self.embedder)
        self._sites: SiteService | None = None
        self._links_checked = False

    def _embedder_choice(self) -> str | None:
        """What an "auto" embedder chose for this index (or, for an older index, what embedded it)."""
        return self.store.get_meta(CHOICE_KEY) or choice_from_fingerprint(
            self.store.get_meta(FINGERPRINT_KEY)
        )

    def close(self) -> None:
        self.jobs.stop()
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
        self.jobs.folders_changed()
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
        with self.jobs.removing(source.id):
            self.store.remove_source(source.id)
            self.store.purge_orphan_vectors()
        self.jobs.folders_changed()
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
        """Index every folder (or the named folder or site); what did not change is skipped."""
        sources = [self.find_source(name)] if name else self.store.list_sources("folder")
        refresh = (lambda source: self.sites.refresh(source.name)) if name else None
        return self.jobs.index(sources, force=force, progress=progress, refresh_site=refresh,
                               every_folder=not name)  # fmt: skip

    def ocr(self, *, progress: Callable[[OcrProgress], None] | None = None) -> OcrProgress | None:
        """OCR the scanned PDFs keyword indexing set aside (CITEDOCS_OCR); None when OCR is off."""
        return self.jobs.ocr(progress=progress)

    def embed(
        self, *, force: bool = False, progress: Callable[[EmbedProgress], None] | None = None
    ) -> EmbedProgress | None:
        """Vectors for every chunk that lacks one (after indexing); None when keyword-only."""
        return self.jobs.embed(force=force, progress=progress)

    def wait_for_embeddings(self, timeout: float | None = None) -> None:
        """Block until the background embedding pass (if any) is done; run it here if none is running."""
        self.jobs.wait_for_embeddings(timeout)

    def index_in_background(self, name: str | None = None, *, force: bool = False) -> threading.Thread:
        """Keyword indexing, then embedding, in a daemon thread; `status()` reports progress."""
        return self.jobs.in_background(lambda: self.index(name, force=force), force=force)

    def start_watching(self, *, catch_up: bool = True) -> None:
        """Keep the registered folders current while a server runs (CITEDOCS_WATCH); with `catch_up`, each
        folder is first rescanned for what changed while no server ran. One-shot commands never call it."""
        self.jobs.start_watching(catch_up=catch_up)

    def watch_status(self) -> list[dict[str, Any]]:
        """Each folder's watcher: state (watching, polling, standby, error, off), reason, last change."""
        return self.jobs.watch_status()

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
        distinct: bool = False,
    ) -> SearchResult:
        """Ranked passages, and site pages not fetched yet (kind "link") among them; `note` says when a
        degraded mode (keyword while the model loads) answered. `distinct` (the front ends' search) leaves out
        a passage that repeats one ranked above it (`settings.passage_overlap`) and ranks the next in its place;
        evaluations and the answer service take the raw ranking."""
        self._ensure_link_documents()
        source_ids = [self.find_source(source).id] if source else None
        k = self.settings.top_k if k is None else k
        overlap = self.settings.passage_overlap if distinct else 0.0
        asked = min(MAX_K, 2 * k) if overlap > 0 and 1 <= k <= MAX_K else k
        result = self.engine.search(query, k=asked, mode=mode, source_ids=source_ids, file_type=file_type,
                                    wait_for_model=wait_for_model)  # fmt: skip
        if asked != k:
            result.hits = distinct_hits(result.hits, k, overlap)
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
        resolved, opened = open_registered(self.store, path)
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

        return ask_blocking(self, question, k=k, mode=mode, on_event=on_event)

    def fetch_site_page(self, url: str, *, embed: bool = True) -> int:
        """Fetch a listed page into the index (its chunks replace its link); returns its chunk count.

        `embed`: start embedding the new chunks in the background (a server; a one-off process leaves them to
        the next one)."""
        page = self.sites.fetch(url)
        found = self.store.document_by_path(page.url)
        chunks = len(self.store.document_rowids(found[0].id)) if found and found[0].id else 0
        if embed:
            self.jobs.embed_soon()
        return chunks

    def prefetch_site(
        self, name: str, limit: int | None = None, *, progress: Callable[[Any], None] | None = None
    ) -> Any:
        """Fetch a site's pages ahead of questions (all, or the first `limit` not stored yet); stops with
        the process and resumes next time. Returns a PrefetchProgress."""
        return self.sites.prefetch(name, limit, progress=progress, should_stop=self.jobs.closing.is_set)

    def prefetch_in_background(self, name: str, limit: int | None = None) -> threading.Thread:
        """`prefetch_site` in a daemon thread (servers), then embedding of the new pages; `status()` shows it."""
        self.sites.site(name)  # an unknown name fails here, in the caller's thread

        def work() -> None:
            try:
                self.prefetch_site(name, limit)
                self.jobs.embed_soon()
            except Exception as exc:
                _log.warning("prefetching site %s stopped: %s", name, exc)

        thread = threading.Thread(target=work, daemon=True, name=f"citedocs-prefetch-{name}")
        self.jobs.track(thread)
        thread.start()
        return thread

    # -- reading ----------------------------------------------------------------------------------
    def read(self, path: str, start_line: int | None = None, end_line: int | None = None) -> ReadResult:
        """Lines of a file's text, read from the descriptor that was opened and checked inside the folder."""
        return read_lines(self.store, self.settings, path, start_line, end_line)
