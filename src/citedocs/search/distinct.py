"""Hits that say something the ones ranked above them do not.

Documentation repeats itself: a page saved from HTML holds its markdown and its rendered text, a tutorial copies
a paragraph of the reference. On claude-docs, 26 of 65 top-5 retrievals held a passage whose content terms were
at least 0.8 covered by one ranked above it. An agent reading search results pays for each repeat in its context,
and a model answering from them reads it twice (answer/passages.py). The hit ranked higher is kept.
"""

from __future__ import annotations

from collections.abc import Sequence

from citedocs.hits import Hit
from citedocs.text.terms import Terms, coverage, extract_terms

__all__ = ["PASSAGE_OVERLAP", "distinct_hits", "repeats"]

# A passage whose content terms are this much covered by a better one is left out of search results and of what
# the model reads (the next one takes its place in search): 26 of 65 claude-docs prompts held one.
PASSAGE_OVERLAP = 0.8


def repeats(hits: Sequence[Hit], overlap: float) -> list[int]:
    """Indexes of the hits whose content terms (numbers, identifiers, stemmed words; weighted as the citation
    checker weighs them) are at least `overlap` covered by one kept hit ranked above; none when `overlap`
    is 0 or less. A hit with no content terms (a link, an image) is never called a repeat."""
    if overlap <= 0:
        return []
    kept: list[Terms] = []
    out = []
    for i, hit in enumerate(hits):
        terms = extract_terms(hit.text)
        if terms and any(coverage(terms, other) >= overlap for other in kept):
            out.append(i)
        else:
            kept.append(terms)
    return out


def distinct_hits(hits: Sequence[Hit], k: int, overlap: float) -> list[Hit]:
    """The first `k` hits that are not repeats (`repeats`): give it more than `k` candidates, so a repeat's
    place goes to the next distinct hit. Site pages not fetched yet (kind "link") are ranked like passages."""
    dropped = set(repeats(hits, overlap))
    return [h for i, h in enumerate(hits) if i not in dropped][:k]
