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

from citedocs import access, front_search, principals
from citedocs.embed.auto import CHOICE_KEY, choice_from_fingerprint
from citedocs.embed.blob import FINGERPRINT_KEY
from citedocs.embed.factory import make_embedder
from citedocs.embed.lazy import LazyEmbedder
from citedocs.errors import AccessDenied, InputError, NotFoundError
from citedocs.index.embedding import EmbedProgress
from citedocs.index.jobs import IndexJobs
from citedocs.index.reading import ReadResult, open_registered, read_lines, read_page_image
from citedocs.index.status import index_status, seen_by
from citedocs.search.engine import SearchEngine, SearchResult, not_indexed_error
from citedocs.settings import Settings
from citedocs.sources.confined import FolderHandle
from citedocs.sources.folders import system_folder_problem
from citedocs.store import Source, Store, open_store
from citedocs.store.tokens import StoredToken, TokenTable
from citedocs.text import cjk

if TYPE_CHECKING:
    from citedocs.answer.retriever import Retriever
    from citedocs.answer.service import AnswerEvent, AnswerService
    from citedocs.index.folders import IndexProgress, ProgressCallback
    from citedocs.index.ocr import OcrProgress
    from citedocs.llm.chat import ChatModel
    from citedocs.oidc import OidcVerifier
    from citedocs.parsers.pdf_page import RenderedPage
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
    def __init__(self, settings: Settings, store: Store | None = None, *, create: bool = True) -> None:
        """The library on the index `settings.db`; with `create` False (read-only commands) it must exist."""
        self.settings = settings
        cjk.configure(settings.cjk_segmenter)
        self.store = store if store is not None else open_store(settings.db, create=create)
        # apart from the index lock: a site search must not wait for indexing
        self._sites_lock = threading.Lock()
        self.embedder: LazyEmbedder | None = make_embedder(settings, self._embedder_choice())
        self.engine = SearchEngine(
            self.store, self.embedder, settings.search_mode, keyword_memory=settings.keyword_memory
        )
        self.jobs = IndexJobs(self.store, settings, self.embedder)
        self._sites: SiteService | None = None
        self._links_checked = False
        # single sign-on (docs/teams.md): a bad mapping stops `serve` at start, not at the first sign-in
        self.sso: OidcVerifier | None = None
        if settings.auth == "tokens" and settings.oidc_issuer:
            from citedocs.oidc import OidcVerifier  # PyJWT and cryptography: only for a server that signs in

            self.sso = OidcVerifier.from_settings(settings)

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
        if self.sso is not None:
            self.sso.close()
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
        added = self.store.add_source(
            "folder",
            str(resolved),
            str(resolved),
            {"include": list(include), "exclude": list(exclude), "identity": identity},
        )
        self.jobs.folders_changed()
        return added

    def folders(self) -> list[Path]:
        return [Path(s.uri) for s in self.store.list_sources("folder")]

    def find_source(self, name_or_path: str) -> Source:
        return front_search.find_source(self.store, name_or_path)

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
        for s in self._visible(self.store.list_sources(kind)):  # type: ignore[arg-type]
            counts = self.store.counts(s.id)
            out.append(
                SourceInfo(
                    s.kind,
                    s.name,
                    s.uri,
                    s.status,
                    counts["indexed"],
                    counts["chunks"],
                    counts["failed"],
                    s.last_indexed,
                    s.last_error,
                    s.options,
                )
            )
        return out

    def index(
        self, name: str | None = None, *, force: bool = False, progress: ProgressCallback | None = None
    ) -> list[IndexProgress]:
        """Index every folder (or the named folder or site); what did not change is skipped."""
        sources = [self.find_source(name)] if name else self.store.list_sources("folder")
        refresh = (lambda source: self.sites.refresh(source.name)) if name else None
        return self.jobs.index(
            sources, force=force, progress=progress, refresh_site=refresh, every_folder=not name
        )

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
        status = index_status(
            self.store,
            self.settings,
            embedder={
                "name": None if self.embedder is None else self.embedder.name,
                "state": self.model_state(),
            },
            sources=[s.to_dict() for s in self.list_sources()],
            watch=self.watch_status(),
            keyword_index=self.engine.keyword.status(),
        )
        if access.current().sources is None:
            return status
        return seen_by(self.store, status, self._visible(self.store.list_sources()))

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
        a passage that repeats one ranked above it (`PASSAGE_OVERLAP`, search/distinct.py) and ranks the next in its place;
        evaluations and the answer service take the raw ranking."""
        self._ensure_link_documents()
        return front_search.search_sources(
            self.store,
            self.engine,
            query,
            k=self.settings.top_k if k is None else k,
            mode=mode,
            source=source,
            file_type=file_type,
            wait_for_model=wait_for_model,
            distinct=distinct,
        )

    def _ensure_link_documents(self) -> None:
        """Sites registered before unfetched pages were searchable get their link documents, once per index."""
        if not self._links_checked:
            self._links_checked = True
            from citedocs.sites.links import ensure_link_documents

            ensure_link_documents(self.store)

    def find_similar(self, path: str, k: int | None = None) -> SearchResult:
        """Files most like the given one (inside a registered folder); `k` defaults to `settings.top_k`."""
        resolved, opened = open_registered(self.store, path, self._visible)
        os.close(opened.fd)
        found = self.store.document_by_path(str(resolved))
        if found is None or found[0].id is None:
            indexing = any(
                s.status == "indexing" and resolved.is_relative_to(s.uri)
                for s in self.store.list_sources("folder")
            )
            raise not_indexed_error(path, indexing=indexing)
        result = self.engine.similar(found[0].id, str(resolved), self.settings.top_k if k is None else k)
        if access.current().sources is not None:
            result.hits = [h for h in result.hits if access.current().sees(h.source)]
        return result

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
        history: Sequence[Any] | None = None,
    ) -> dict[str, Any]:
        """A cited, checked answer (sources plus every field of `done`); starts the configured model if needed.

        `on_event` sees each event as it happens (the CLI prints tokens as they stream); `history` holds the
        earlier turns of a follow-up (`{"role", "content"}` mappings or `answer.conversation.Turn`s)."""
        from citedocs.answer.oneshot import ask_blocking

        return ask_blocking(self, question, k=k, mode=mode, on_event=on_event, history=history)

    def chat(
        self,
        read_question: Callable[[], str | None],
        on_answer: Callable[[Any, int], None],
        *,
        k: int | None = None,
        mode: str | None = None,
        on_event: Callable[[AnswerEvent], None] | None = None,
    ) -> list[Any]:
        """A conversation: each question from `read_question()` (None ends it) is answered with the turns before
        it as history, the model started once; `on_answer(answer or error, turns dropped)` after each. Returns
        the turns (`answer.conversation.Turn`)."""
        from citedocs.answer.oneshot import chat_blocking

        return chat_blocking(self, read_question, on_answer, k=k, mode=mode, on_event=on_event)

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
        self,
        name: str,
        limit: int | None = None,
        *,
        progress: Callable[[Any], None] | None = None,
        min_interval_s: float = 0.0,
    ) -> Any:
        """Fetch a site's pages ahead of questions (all, or the first `limit` not stored yet); stops with
        the process and resumes next time. Returns a PrefetchProgress."""
        return self.sites.prefetch(
            name,
            limit,
            progress=progress,
            should_stop=self.jobs.closing.is_set,
            min_interval_s=min_interval_s,
        )

    def auto_prefetch(self, name: str) -> tuple[threading.Thread | None, str]:
        """After a site is added: a small one (sites.prefetch.SMALL_SITE_PAGES listed pages or fewer) is
        fetched whole in the background, politely; a large one is not. Returns the thread and what to tell."""
        from citedocs.sites.prefetch import AUTO_FETCH_INTERVAL_S, SMALL_SITE_PAGES, not_fetched_note

        info = next(i for i in self.sites.list() if i.name == name)
        if info.docs > SMALL_SITE_PAGES:
            return None, not_fetched_note(name, info.docs, info.pages_fetched)
        thread = self.prefetch_in_background(name, None, min_interval_s=AUTO_FETCH_INTERVAL_S)
        return thread, f"fetching its {info.docs} pages in the background (index_status shows progress)"

    def prefetch_in_background(
        self, name: str, limit: int | None = None, *, min_interval_s: float = 0.0
    ) -> threading.Thread:
        """`prefetch_site` in a daemon thread (servers), then embedding of the new pages; `status()` shows it."""
        self.sites.site(name)  # an unknown name fails here, in the caller's thread

        def work() -> None:
            try:
                self.prefetch_site(name, limit, min_interval_s=min_interval_s)
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
        return read_lines(self.store, self.settings, path, start_line, end_line, self._visible)

    def topics(self, limit: int = 6) -> list[str]:
        """A few headings of the indexed documents (the most covered, one per top-level section): the web
        page's example questions."""
        out: list[str] = []
        sections: set[str] = set()
        for heading, _ in self.store.frequent_headings(200, self._visible_ids()):
            parts = [p.strip() for p in heading.split(" > ") if p.strip()]
            topic = parts[1] if len(parts) > 1 else parts[0] if parts else ""
            digits = sum(ch.isdigit() for ch in topic)
            if not 3 <= len(topic) <= 60 or digits * 3 > len(topic) or topic in out or parts[0] in sections:
                continue
            sections.add(parts[0])
            out.append(topic)
            if len(out) >= limit:
                break
        return out

    def page_image(self, path: str, page: int, passage: str = "") -> RenderedPage:
        """A registered PDF's page as a PNG with `passage` marked, read as confined as `read`."""
        return read_page_image(self.store, self.settings, path, page, passage, self._visible)

    # -- who may see what -------------------------------------------------------------------------
    def _visible(self, sources: Sequence[Source]) -> list[Source]:
        return front_search.visible(sources)

    def _visible_ids(self) -> list[int] | None:
        return front_search.visible_ids(self.store)

    # -- tokens -----------------------------------------------------------------------------------
    @property
    def tokens(self) -> TokenTable:
        return TokenTable(self.store)

    def create_token(
        self, name: str, scope: access.Scope, sources: Sequence[str] = (), expires_days: float | None = None
    ) -> tuple[str, StoredToken]:
        """A new token: the secret (shown once, never stored) and its record. `sources` (names or folder
        paths) limit what it sees; none means every source."""
        access.require("admin")
        names = [self.find_source(s).name for s in sources] if sources else None
        return principals.create_token(self.store, name, scope, names, expires_days)

    def list_tokens(self) -> list[StoredToken]:
        access.require("admin")
        return self.tokens.list()

    def revoke_token(self, name: str) -> StoredToken:
        access.require("admin")
        return self.tokens.revoke(name)

    def authenticate(self, secret: str) -> access.Principal:
        """The principal a bearer secret (a token, or a JWT with single sign-on) stands for."""
        return principals.authenticate(self.store, self.sso, secret)
