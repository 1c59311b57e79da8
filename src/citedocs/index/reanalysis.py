"""Which text analysis built the index, and what to do when it is not today's.

Terms are made once, at indexing; a query analysed differently from its documents misses. The index records
the analysis (`text.cjk.analyzer_id`) in its meta table. Only CJK text is analysed differently between the
versions so far, so an index without any is simply marked current; one with CJK text is re-indexed by the
next `reindex` (forced for its folders) and searches say so until then.
"""

from __future__ import annotations

from citedocs.store import Store
from citedocs.text.cjk import analyzer_id

__all__ = ["ANALYZER_KEY", "STALE_NOTE", "mark_analyzed", "needs_reanalysis"]

ANALYZER_KEY = "text_analyzer"
STALE_NOTE = (
    "This index was built with an older analysis of Japanese, Chinese and Korean text, so searches in those "
    "languages miss or return passages longer than a model should read. Run `citedocs reindex` to rebuild it "
    "(registered sites: `citedocs refresh NAME`)."
)


def needs_reanalysis(store: Store) -> bool:
    if store.get_meta(ANALYZER_KEY) == analyzer_id():
        return False
    if not store.holds_cjk_text():
        mark_analyzed(store)
        return False
    return True


def mark_analyzed(store: Store) -> None:
    store.set_meta(ANALYZER_KEY, analyzer_id())
