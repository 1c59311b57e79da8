"""Search over the store: keyword, semantic and hybrid ranking, and file similarity.

The engine owns the query-time state (the embedder, the cached vector matrix, a small thread pool); the
facade in citedocs.service resolves names and paths and calls it.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from citedocs.embed.auto import AutoEmbedder
from citedocs.embed.blob import FINGERPRINT_KEY, matrix_from_blobs
from citedocs.embed.lazy import LazyEmbedder
from citedocs.errors import EmbedderError, InputError, ModelMismatchError, NotFoundError
from citedocs.hits import LINK_FORMAT, Hit
from citedocs.search.distinct import distinct_indexes
from citedocs.search.hybrid import CANDIDATES, VectorSearch, fuse
from citedocs.search.keyword import HEADING_WEIGHT, keyword_ranking
from citedocs.search.keyword_index import KeywordIndex
from citedocs.search.snippets import make_snippet
from citedocs.store import SQLiteStore, Store, StoredChunk
from citedocs.text.analyzer import query_terms

MAX_K = 50
MODES = ("keyword", "semantic", "hybrid")
K_HINT = f"Ask for 1 to {MAX_K} results: `-k N` on the command line, `k` in the HTTP API and MCP tools."
# A search that finds the model unloaded starts its load this much later, once the search is answered: loading
# beside it (onnxruntime's import holds the interpreter) made an MCP server's first search 0.025 s slower.
LOAD_AFTER_QUERY_S = 0.3
EMPTY_INDEX_NOTE = "the index is empty: nothing has been indexed yet, so nothing can match"


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


def not_indexed_error(path: str, *, indexing: bool) -> NotFoundError:
    """The error for a file of a registered folder that has no index entry: wait for its job, or reindex.

    A file whose folder is being indexed only needs a moment; telling its user to reindex starts a second job.
    """
    if indexing:
        return NotFoundError(
            f"{path} is being indexed (its folder's indexing is still running).",
            "Try again in a moment; `citedocs status` shows the progress.",
        )
    return NotFoundError(
        f"{path} is not indexed.",
        "Run `citedocs reindex` and try again; `citedocs status` lists files that failed and why.",
    )


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
        kind="link" if chunk.format == LINK_FORMAT else "passage",
    )


class SearchEngine:
    def __init__(
        self,
        store: Store,
        embedder: LazyEmbedder | None,
        default_mode: str = "hybrid",
        *,
        keyword_memory: bool = True,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.default_mode = default_mode
        self.vectors = VectorSearch(store)
        saved = Path(store.path) if isinstance(store, SQLiteStore) and store.path != ":memory:" else None
        self.keyword = KeywordIndex(store, HEADING_WEIGHT, enabled=keyword_memory, saved=saved)
        self._lock = threading.Lock()
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)

    def _search_pool(self) -> concurrent.futures.ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="citedocs-search")
            return self._pool

    def search(
        self,
        query: str,
        *,
        k: int = 5,
        mode: str | None = None,
        source_ids: list[int] | None = None,
        file_type: str | None = None,
        wait_for_model: bool = False,
        overlap: float = 0.0,
    ) -> SearchResult:
        """The `k` best hits; with `overlap` above 0, the first `k` of twice as many that do not repeat one
        ranked above them (search/distinct.py). Snippets are made for the hits returned only."""
        if not 1 <= k <= MAX_K:
            raise InputError(f"k must be between 1 and {MAX_K}, got {k}.", K_HINT)
        mode = mode or self.default_mode
        if mode not in MODES:
            raise InputError(f"Unknown search mode {mode!r}.", f"Use one of: {', '.join(MODES)}.")
        if not query.strip():
            raise InputError("The query is empty.", "Type some words to search for.")
        formats = format_aliases([file_type.lower().lstrip(".")] if file_type else None)
        terms = query_terms(query)
        want = k
        k = min(MAX_K, 2 * k) if overlap > 0 else k
        depth = max(CANDIDATES, k)
        semantic: list[tuple[int, float]] | None = None
        keyword: list[tuple[int, float]] | None = None
        note = None
        if mode == "keyword":
            keyword = keyword_ranking(
                self.store, query, k, source_ids=source_ids, formats=formats, index=self.keyword
            )
        elif self.embedder is None or (not self.embedder.ready and not wait_for_model):
            # no query embedding to wait for: no thread hand-off either (it cost more than the ranking), and
            # no fusion, so only the `k` best are ranked (depth 100 cost 0.06 ms more on SciFact)
            keyword = keyword_ranking(
                self.store, query, k, source_ids=source_ids, formats=formats, index=self.keyword
            )
            semantic, note = self._semantic(query, depth, source_ids, formats, mode, wait_for_model)
        else:
            # BM25 (SQLite) and the query embedding (onnxruntime) both release the GIL: run them side by side.
            pending = self._search_pool().submit(
                keyword_ranking,
                self.store,
                query,
                depth,
                source_ids=source_ids,
                formats=formats,
                index=self.keyword,
            )
            semantic, note = self._semantic(query, depth, source_ids, formats, mode, wait_for_model)
            keyword = pending.result()
        if semantic is None:
            ranking, used = keyword[:k], "keyword"
        elif mode == "semantic":
            ranking, used = semantic[:k], "semantic"
        else:
            ranking, used = fuse(keyword, semantic, k), "hybrid"
        found = self._distinct(ranking, want, overlap) if overlap > 0 else self._chunks(ranking)
        hits = [hit_from_chunk(chunk, score, terms) for chunk, score in found]
        if not hits and self.vectors.counts[1] == 0:
            note = EMPTY_INDEX_NOTE  # not "no vectors yet": there is nothing to embed either
        return SearchResult(query, used, hits, note)

    def _chunks(self, ranking: Sequence[tuple[int, float]]) -> list[tuple[StoredChunk, float]]:
        """The stored chunks of `ranking`, in its order (a chunk deleted since it was ranked is left out)."""
        chunks = self.store.chunks_by_rowid([rowid for rowid, _ in ranking])
        return [(chunks[rowid], score) for rowid, score in ranking if rowid in chunks]

    def _distinct(
        self, ranking: Sequence[tuple[int, float]], want: int, overlap: float
    ) -> list[tuple[StoredChunk, float]]:
        """The first `want` of `ranking` that repeat none above them, reading chunks only as far as needed:
        the first `want` at once, the rest only when a repeat (or a deleted chunk) left a place open. The
        filter reads in order, so reading on from where it stopped is the same as reading all at once."""
        found = self._chunks(ranking[:want])
        kept = distinct_indexes([c.text for c, _ in found], want, overlap, self._sketches(found))
        if len(kept) < want and len(ranking) > want:
            found += self._chunks(ranking[want:])
            kept = distinct_indexes([c.text for c, _ in found], want, overlap, self._sketches(found))
        return [found[i] for i in kept]

    def _sketches(self, found: Sequence[tuple[StoredChunk, float]]) -> list[int | None] | None:
        """The chunks' term sketches from the keyword index in memory (None while it is not current)."""
        view = self.keyword.view()
        return None if view is None else view.sketches([c.rowid for c, _ in found])

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
                self.embedder.start_loading(after=LOAD_AFTER_QUERY_S)
                return None, f"the embedding model is {self.embedder.state}; keyword results shown meanwhile"
            self.embedder.wait()
        try:
            stored = self.store.get_meta(FINGERPRINT_KEY)
            if stored is not None and stored != self.embedder.fingerprint():
                raise ModelMismatchError(
                    f"The index was embedded with {stored!r}, not the configured {self.embedder.fingerprint()!r}.",
                    "Run `citedocs reindex --force` to re-embed, or set CITEDOCS_EMBEDDER back.",
                )
            inner = self.embedder.inner
            if isinstance(inner, AutoEmbedder) and not inner.decided:  # nothing embedded: no model to load
                return None, "no vectors yet (embedding runs after indexing); keyword results shown"
            query_vec = self.embedder.embed_query(query)  # an unreachable embedder fails here, with its note
            have, total = self.vectors.counts
            if have == 0:
                return None, "no vectors yet (embedding runs after indexing); keyword results shown"
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
        note = None if have >= total else f"embedding in progress ({have}/{total} chunks have vectors)"
        return self.vectors.top_k(query_vec, depth, source_ids=source_ids, formats=formats), note

    def similar(self, document_id: int, label: str, k: int = 5) -> SearchResult:
        """Files most like a document: the mean of its chunk vectors against every other chunk, best per file."""
        if not 1 <= k <= MAX_K:
            raise InputError(f"k must be between 1 and {MAX_K}, got {k}.", K_HINT)
        own = set(self.store.document_rowids(document_id))
        note = None
        ranking: list[tuple[int, float]] = []
        semantic = False
        if self.embedder is not None:
            try:
                self.embedder.wait()
                semantic = self.vectors.counts[0] > 0
            except EmbedderError as exc:
                note = f"semantic model unavailable ({exc.message}); keyword similarity shown"
        if semantic and self.embedder is not None:
            blobs = self.store.vectors_for_rowids(sorted(own))
            if blobs:
                centroid = matrix_from_blobs(blobs, self.embedder.dim).mean(axis=0)
                centroid /= float(np.linalg.norm(centroid)) or 1.0
                ranking = self.vectors.top_k(centroid, 400)
        if not ranking:
            note = note or "no vectors for this file; keyword similarity shown"
            chunks = self.store.chunks_of_document(document_id)
            text = " ".join(c.heading + " " + c.text[:400] for c in chunks[:8])
            ranking = keyword_ranking(self.store, " ".join(query_terms(text)[:40]), 400, index=self.keyword)
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
        return SearchResult(label, "semantic" if semantic and not note else "keyword", hits, note)


_FORMAT_ALIASES = {
    "md": "markdown",
    "mdx": "markdown",
    "htm": "html",
    "txt": "text",
    "tsv": "csv",
    "xlsm": "xlsx",
}


def format_aliases(formats: list[str] | None) -> list[str] | None:
    return None if formats is None else [_FORMAT_ALIASES.get(f, f) for f in formats]
