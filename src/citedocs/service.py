"""The one library surface that every front end (CLI, MCP, HTTP) calls.

It owns the store and the search engine for one Settings; front ends only translate arguments and errors.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from citedocs.analysis import query_terms
from citedocs.embed.factory import make_embedder
from citedocs.embed.lazy import LazyEmbedder
from citedocs.embedding import FINGERPRINT_KEY, EmbedProgress, embed_pending
from citedocs.errors import AccessDenied, EmbedderError, InputError, ModelMismatchError, NotFoundError
from citedocs.folders import resolve_confined
from citedocs.hits import Hit
from citedocs.indexer import FolderIndexer, IndexProgress, ProgressCallback
from citedocs.parsers import parse_file
from citedocs.search.hybrid import CANDIDATES, VectorCache, fuse, semantic_ranking
from citedocs.search.keyword import keyword_ranking
from citedocs.search.snippets import make_snippet
from citedocs.search.vectors import matrix_from_blobs
from citedocs.settings import Settings
from citedocs.store import Source, Store, StoredChunk

if TYPE_CHECKING:
    from citedocs.sites import SiteService

_log = logging.getLogger(__name__)
MAX_K = 50
MODES = ("keyword", "semantic", "hybrid")


@dataclass(slots=True)
class SearchResult:
    query: str
    mode: str
    hits: list[Hit]
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "mode": self.mode,
            "note": self.note,
            "hits": [h.to_dict() for h in self.hits],
        }


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


def hit_from_chunk(chunk: StoredChunk, score: float, terms: Sequence[str]) -> Hit:
    return Hit(
        chunk_id=chunk.chunk_id,
        path=chunk.path,
        source=chunk.source_name,
        heading=chunk.heading,
        page=chunk.page_start,
        line_start=chunk.line_start,
        line_end=chunk.line_end,
        score=round(score, 6),
        text=chunk.text,
        snippet=make_snippet(chunk.text, terms),
    )


class Citedocs:
    def __init__(self, settings: Settings, store: Store | None = None) -> None:
        self.settings = settings
        self.store = store if store is not None else Store(settings.db_path)
        self._index_lock = threading.RLock()
        self.embedder: LazyEmbedder | None = make_embedder(settings)
        self.vectors = VectorCache(self.store)
        self._embed_thread: threading.Thread | None = None
        self._closing = threading.Event()
        self._sites: SiteService | None = None
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None

    def _search_pool(self) -> concurrent.futures.ThreadPoolExecutor:
        with self._index_lock:
            if self._pool is None:
                self._pool = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="citedocs-search")
            return self._pool

    def close(self) -> None:
        self._closing.set()
        if self._pool is not None:
            self._pool.shutdown(wait=False)
        if self._sites is not None:
            self._sites.close()
        self.store.close()

    @property
    def sites(self) -> SiteService:
        """The llms.txt sites registry, built on first use (its link index is in memory)."""
        with self._index_lock:
            if self._sites is None:
                from citedocs.sites import SiteService

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
        self, path: str | Path, include: Sequence[str] = (), exclude: Sequence[str] = ()
    ) -> Source:
        folder = Path(path).expanduser()
        try:
            resolved = folder.resolve(strict=True)
        except (OSError, RuntimeError) as exc:
            raise NotFoundError(f"{path} does not exist.", "Check the path and try again.") from exc
        if not resolved.is_dir():
            raise InputError(f"{path} is a file, not a folder.", "Register the folder that contains it.")
        for existing in self.store.list_sources("folder"):
            other = Path(existing.uri)
            if resolved == other:
                return existing
            if resolved.is_relative_to(other):
                raise InputError(
                    f"{resolved} is already covered by the registered folder {other}.",
                    "Search it with `--folder` instead of registering it again.",
                )
        return self.store.add_source("folder", str(resolved), str(resolved),
                                     {"include": list(include), "exclude": list(exclude)})  # fmt: skip

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
        source = self.find_source(name_or_path)
        if source.kind == "site":
            self.sites.remove(source.name)
            return source
        self.store.remove_source(source.id)
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
            indexer = FolderIndexer(self.store, self.settings, progress)
            for source in sources:
                if source.kind == "folder":
                    reports.append(indexer.index(source, force=force))
                elif name:
                    self.sites.refresh(source.name)
        return reports

    def embed(
        self, *, force: bool = False, progress: Callable[[EmbedProgress], None] | None = None
    ) -> EmbedProgress | None:
        """Vectors for every chunk that lacks one (after indexing); None when keyword-only."""
        if self.embedder is None:
            return None
        with self._index_lock:
            if force:
                self.store.clear_vectors()
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
            if state == "running" and job.pid is not None and not _alive(job.pid):
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
        k = self.settings.top_k if k is None else k
        if not 1 <= k <= MAX_K:
            raise InputError(f"k must be between 1 and {MAX_K}, got {k}.", "Ask for fewer results.")
        mode = mode or self.settings.search_mode
        if mode not in MODES:
            raise InputError(f"Unknown search mode {mode!r}.", f"Use one of: {', '.join(MODES)}.")
        if not query.strip():
            raise InputError("The query is empty.", "Type some words to search for.")
        source_ids = [self.find_source(source).id] if source else None
        formats = _format_aliases([file_type.lower().lstrip(".")] if file_type else None)
        terms = query_terms(query)
        depth = max(CANDIDATES, k)
        semantic: list[tuple[int, float]] | None = None
        keyword: list[tuple[int, float]] | None = None
        note = None
        if mode == "keyword":
            keyword = keyword_ranking(self.store, query, k, source_ids=source_ids, formats=formats)
        else:
            # BM25 (SQLite) and the query embedding (onnxruntime) both release the GIL: run them side by side.
            pending = self._search_pool().submit(
                keyword_ranking, self.store, query, depth, source_ids=source_ids, formats=formats
            )
            semantic, note = self._semantic(query, depth, source_ids, formats, mode, wait_for_model)
            keyword = pending.result()
        if semantic is None:
            ranking, used = keyword[:k], "keyword"
        elif mode == "semantic":
            ranking, used = semantic[:k], "semantic"
        else:
            ranking, used = fuse(keyword, semantic, k), "hybrid"
        chunks = self.store.chunks_by_rowid([rowid for rowid, _ in ranking])
        hits = [hit_from_chunk(chunks[rowid], score, terms) for rowid, score in ranking if rowid in chunks]
        return SearchResult(query, used, hits, note)

    def _semantic(
        self,
        query: str,
        depth: int,
        source_ids: list[int] | None,
        formats: list[str] | None,
        mode: str,
        wait_for_model: bool,
    ) -> tuple[list[tuple[int, float]] | None, str | None]:
        """Vector ranking, or None and a note saying why keyword results are shown instead."""
        if self.embedder is None:
            return None, "semantic search is off (CITEDOCS_EMBEDDER=none); keyword results shown"
        if not self.embedder.ready:
            if not wait_for_model:
                self.embedder.start_loading()
                return None, f"the embedding model is {self.embedder.state}; keyword results shown meanwhile"
            self.embedder.wait()
        try:
            stored = self.store.get_meta(FINGERPRINT_KEY)
            if stored is not None and stored != self.embedder.fingerprint():
                raise ModelMismatchError(
                    f"The index was embedded with {stored!r}, not the configured {self.embedder.fingerprint()!r}.",
                    "Run `citedocs reindex --force` to re-embed, or set CITEDOCS_EMBEDDER back.",
                )
            matrix = self.vectors.matrix(self.embedder.dim)
            if matrix is None:
                return None, "no vectors yet (embedding runs after indexing); keyword results shown"
            query_vec = self.embedder.embed_query(query)
        except ModelMismatchError:
            if mode == "semantic":
                raise
            return (
                None,
                "the index was embedded with another model; keyword results shown. Run `citedocs reindex --force`.",
            )
        except EmbedderError as exc:
            if mode == "semantic":
                raise
            return None, f"semantic search unavailable ({exc.message}); keyword results shown"
        allowed = self.store.rowids_matching(source_ids, formats) if source_ids or formats else None
        have, total = self.vectors.counts
        note = None if have >= total else f"embedding in progress ({have}/{total} chunks have vectors)"
        return semantic_ranking(matrix, query_vec, depth, allowed), note

    def find_similar(self, path: str, k: int = 5) -> SearchResult:
        """Files most like the given one: the mean of its chunk vectors against every other chunk, best per file."""
        if not 1 <= k <= MAX_K:
            raise InputError(f"k must be between 1 and {MAX_K}, got {k}.", "Ask for fewer results.")
        _, resolved = resolve_confined(path, self.folders())
        found = self.store.document_by_path(str(resolved))
        if found is None or found[0].id is None:
            raise NotFoundError(f"{path} is not indexed.", "Run `citedocs reindex` and try again.")
        doc, _ = found
        own = set(self.store.document_rowids(doc.id))  # type: ignore[arg-type]
        note = None
        ranking: list[tuple[int, float]] = []
        matrix = None
        if self.embedder is not None:
            try:
                self.embedder.wait()
                matrix = self.vectors.matrix(self.embedder.dim)
            except EmbedderError as exc:
                note = f"semantic model unavailable ({exc.message}); keyword similarity shown"
        if matrix is not None:
            blobs = self.store.vectors_for_rowids(sorted(own))
            if blobs:
                centroid = matrix_from_blobs(blobs, matrix.dim).mean(axis=0)
                centroid /= float(np.linalg.norm(centroid)) or 1.0
                ranking = matrix.top_k(centroid, 400)
        if not ranking:
            note = note or "no vectors for this file; keyword similarity shown"
            chunks = self.store.chunks_of_document(doc.id)  # type: ignore[arg-type]
            text = " ".join(c.heading + " " + c.text[:400] for c in chunks[:8])
            ranking = keyword_ranking(self.store, " ".join(query_terms(text)[:40]), 400)
        best: dict[str, tuple[int, float]] = {}
        chunks_by_row = self.store.chunks_by_rowid([r for r, _ in ranking if r not in own])
        for rowid, score in ranking:
            chunk = chunks_by_row.get(rowid)
            if chunk is None or chunk.path in best:
                continue
            best[chunk.path] = (rowid, score)
            if len(best) == k:
                break
        hits = [hit_from_chunk(chunks_by_row[r], s, []) for r, s in best.values()]
        return SearchResult(
            str(resolved), "semantic" if matrix is not None and not note else "keyword", hits, note
        )

    # -- answers ----------------------------------------------------------------------------------
    def ask(self, question: str, *, k: int | None = None, mode: str | None = None) -> dict[str, Any]:
        """A cited, checked answer (sources plus every field of `done`); starts the configured model if needed."""
        from citedocs.answer.oneshot import ask_blocking

        return ask_blocking(self, question, k=k, mode=mode)

    # -- reading ----------------------------------------------------------------------------------
    def read(self, path: str, start_line: int | None = None, end_line: int | None = None) -> ReadResult:
        _, resolved = resolve_confined(path, self.folders())
        if not resolved.is_file():
            raise AccessDenied(
                f"{path} is not a file.", "Pass the path of a file inside a registered folder."
            )
        parsed = parse_file(resolved, max_bytes=int(self.settings.max_file_mb * 1_048_576))
        lines = parsed.text.split("\n")
        start = max(1, start_line or 1)
        end = min(len(lines), end_line or len(lines))
        if start > len(lines):
            raise InputError(f"{path} has only {len(lines)} lines.", f"Ask for lines 1-{len(lines)}.")
        return ReadResult(
            str(resolved), start, end, len(lines), "\n".join(lines[start - 1 : end]), parsed.format
        )


_FORMAT_ALIASES = {"md": "markdown", "mdx": "markdown", "htm": "html", "txt": "text"}


def _format_aliases(formats: list[str] | None) -> list[str] | None:
    return None if formats is None else [_FORMAT_ALIASES.get(f, f) for f in formats]


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
