"""Keyword ranking: FTS5 BM25 over analysed terms, headings weighted above body text."""

from __future__ import annotations

from collections.abc import Sequence

from citedocs.analysis import fts_match, query_terms
from citedocs.store import Store

HEADING_WEIGHT = 2.0


def keyword_ranking(
    store: Store,
    query: str,
    k: int,
    *,
    source_ids: Sequence[int] | None = None,
    formats: Sequence[str] | None = None,
) -> list[tuple[int, float]]:
    """(chunk rowid, score) best first; user text can never be an FTS syntax error."""
    terms = query_terms(query)
    if not terms:
        return []
    return store.keyword_search(
        fts_match(terms), k, source_ids=source_ids, formats=formats, heading_weight=HEADING_WEIGHT
    )
