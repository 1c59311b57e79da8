"""Hits that say something the ones ranked above them do not.

Documentation repeats itself: a page saved from HTML holds its markdown and its rendered text, a tutorial copies
a paragraph of the reference. On claude-docs, 26 of 65 top-5 retrievals held a passage whose content terms were
at least 0.8 covered by one ranked above it. An agent reading search results pays for each repeat in its context,
and a model answering from them reads it twice (answer/passages.py). The hit ranked higher is kept.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from citedocs.hits import Hit
from citedocs.text.terms import Terms, coverage, extract_terms

__all__ = ["PASSAGE_OVERLAP", "distinct_hits", "distinct_indexes", "repeats"]

# A passage whose content terms are this much covered by a better one is left out of search results and of what
# the model reads (the next one takes its place in search): 26 of 65 claude-docs prompts held one.
PASSAGE_OVERLAP = 0.8

# A passage's terms, remembered by its text: a search reads the passages a similar search read before.
_passage_terms = functools.lru_cache(maxsize=2048)(extract_terms)


def _scan(texts: Sequence[str], overlap: float, wanted: int) -> tuple[list[int], list[int]]:
    """(kept, dropped) indexes, in order, until `wanted` are kept; each text is analysed only when it is
    compared (the first is kept unread) or compared against."""
    kept_terms: list[Terms] = []
    kept: list[int] = []
    dropped: list[int] = []
    first_unread = True
    for i, text in enumerate(texts):
        if len(kept) >= wanted:
            break
        if first_unread:
            kept.append(i)
            first_unread = False
            continue
        if len(kept_terms) < len(kept):  # the kept ones are read only once something is compared with them
            kept_terms.extend(_passage_terms(texts[j]) for j in kept[len(kept_terms) :])
        terms = _passage_terms(text)
        if terms and any(coverage(terms, other) >= overlap for other in kept_terms):
            dropped.append(i)
        else:
            kept.append(i)
    return kept, dropped


def repeats(hits: Sequence[Hit], overlap: float) -> list[int]:
    """Indexes of the hits whose content terms (numbers, identifiers, stemmed words; weighted as the citation
    checker weighs them) are at least `overlap` covered by one kept hit ranked above; none when `overlap`
    is 0 or less. A hit with no content terms (a link, an image) is never called a repeat."""
    if overlap <= 0:
        return []
    return _scan([h.text for h in hits], overlap, len(hits))[1]


def distinct_indexes(texts: Sequence[str], k: int, overlap: float) -> list[int]:
    """Indexes of the first `k` texts that are not repeats (as `repeats`), reading no further than needed."""
    if overlap <= 0:
        return list(range(min(k, len(texts))))
    return _scan(texts, overlap, k)[0]


def distinct_hits(hits: Sequence[Hit], k: int, overlap: float) -> list[Hit]:
    """The first `k` hits that are not repeats (`repeats`): give it more than `k` candidates, so a repeat's
    place goes to the next distinct hit. Site pages not fetched yet (kind "link") are ranked like passages."""
    return [hits[i] for i in distinct_indexes([h.text for h in hits], k, overlap)]
