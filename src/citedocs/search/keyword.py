"""Keyword ranking: BM25 over analysed terms, headings weighted.

The ranking is FTS5's bm25() (or the same formula in PostgreSQL's SQL). A `KeywordIndex` answers it from
memory with the same scores (search/keyword_index.py); the store answers while that index is being built.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from citedocs.search.keyword_index import KeywordIndex
from citedocs.store import Store
from citedocs.text.analyzer import query_groups, query_terms

HEADING_WEIGHT = 2.0


def keyword_ranking(
    store: Store,
    query: str,
    k: int,
    *,
    source_ids: Sequence[int] | None = None,
    formats: Sequence[str] | None = None,
    index: KeywordIndex | None = None,
) -> list[tuple[int, float]]:
    """(chunk rowid, score) best first; user text can never be an FTS syntax error."""
    view = index.view() if index is not None else None
    terms = effective_terms(store, query, view.document_counts if view is not None else None)
    if not terms:
        return []
    if view is not None:
        ranked = view.ranking(terms, k, source_ids=source_ids, formats=formats)
        if ranked is not None:
            return ranked
    return store.keyword_search(
        terms, k, source_ids=source_ids, formats=formats, heading_weight=HEADING_WEIGHT
    )


def effective_terms(
    store: Store, query: str, counts: Callable[[Sequence[str]], dict[str, int]] | None = None
) -> list[str]:
    """Query terms, with a compound identifier searched as a whole when the index knows it.

    `snake_case` then matches `snake_case`, not every chunk that says "case"; an identifier the index has
    never seen falls back to its parts, so `snake_case` still finds "snake case" in prose.
    """
    groups = query_groups(query)
    if not groups:
        return query_terms(query)
    wholes = [g[-1] for g in groups if len(g) > 1]
    known = (counts or store.term_document_counts)(wholes) if wholes else {}
    out: dict[str, None] = {}
    for group in groups:
        if len(group) > 1 and known.get(group[-1], 0) > 0:
            out.setdefault(group[-1], None)
        else:
            for term in group:
                out.setdefault(term, None)
    return list(out)
