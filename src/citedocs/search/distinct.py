"""Hits that say something the ones ranked above them do not.

Documentation repeats itself: a page saved from HTML holds its markdown and its rendered text, a tutorial copies
a paragraph of the reference. On claude-docs, 26 of 65 top-5 retrievals held a passage whose content terms were
at least 0.8 covered by one ranked above it. An agent reading search results pays for each repeat in its context,
and a model answering from them reads it twice (answer/passages.py). The hit ranked higher is kept.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from citedocs.hits import Hit
from citedocs.text.cjk import has_cjk
from citedocs.text.terms import coverage, extract_terms

__all__ = ["PASSAGE_OVERLAP", "distinct_hits", "distinct_indexes", "repeats"]

# A passage whose content terms are this much covered by a better one is left out of search results and of what
# the model reads (the next one takes its place in search): 26 of 65 claude-docs prompts held one.
PASSAGE_OVERLAP = 0.8

# A passage's terms, remembered by its text: a search reads the passages a similar search read before.
_passage_terms = functools.lru_cache(maxsize=2048)(extract_terms)

# Analysing a passage's content terms costs 0.1-0.2 ms; its plain words (runs of \w, lower-cased) 0.05 ms, its
# keyword-index terms nothing (the index keeps them as a sketch, search/sketches.py). Two passages whose words
# overlap this little are not compared by their terms. Over the top 10 of every SciFact and claude-docs dev
# question (52,605 pairs; bench/studies/distinct_screen.py), every pair with content-term coverage at least 0.8
# had plain-word coverage at least 0.63 and sketch coverage at least 0.745 (bits shared by different terms add
# to it: at 0.55 the sketch lets 0.7% and 17% of the pairs through, plain words at 0.4 1.1% and 19%). Text
# with Chinese, Japanese or Korean is always compared by its terms (its \w runs are whole clauses).
WORD_SCREEN = 0.4
SKETCH_SCREEN = 0.55
_WORD = re.compile(r"\w+")

Screen = frozenset[int] | int | None  # plain-word hashes, an index sketch, or None: compare by terms


@functools.lru_cache(maxsize=1024)
def _plain_words(text: str) -> frozenset[int] | None:
    """The hashes of a passage's lower-cased runs of \\w (a collision only lets a pair through to the exact
    comparison); None for CJK text, which the screen does not judge. Remembered by text, as the terms are
    (1,024 SciFact passages: 13 MB): on SciFact 10x, computing them again each search cost 1 ms."""
    return None if has_cjk(text) else frozenset(map(hash, _WORD.findall(text.lower())))


def _screen(text: str, sketch: int | None) -> Screen:
    if sketch is None:
        return _plain_words(text)
    return None if has_cjk(text) else sketch


def _may_repeat(mine: Screen, theirs: Screen, overlap: float) -> bool:
    """Whether a passage screened as `mine` could be `overlap` covered by one screened as `theirs` (for the
    default overlap: `SKETCH_SCREEN` of its sketch bits, `WORD_SCREEN` of its words). Two kinds: let it through."""
    scale = overlap / PASSAGE_OVERLAP
    if isinstance(mine, int) and isinstance(theirs, int):
        return (mine & theirs).bit_count() >= SKETCH_SCREEN * scale * mine.bit_count()
    if isinstance(mine, frozenset) and isinstance(theirs, frozenset) and mine:
        return len(mine & theirs) >= WORD_SCREEN * scale * len(mine)
    return True


def _scan(
    texts: Sequence[str], overlap: float, wanted: int, sketches: Sequence[int | None] | None = None
) -> tuple[list[int], list[int]]:
    """(kept, dropped) indexes, in order, until `wanted` are kept; a text's terms are analysed only when its
    screen (`_may_repeat`) says it could repeat a kept one, and then only against those."""
    kept: list[int] = []
    dropped: list[int] = []
    screens: list[Screen] = []
    for i, text in enumerate(texts):
        if len(kept) >= wanted:
            break
        screens.append(_screen(text, sketches[i] if sketches is not None else None))
        near = [j for j in kept if _may_repeat(screens[i], screens[j], overlap)]
        terms = _passage_terms(text) if near else None
        if terms and any(coverage(terms, _passage_terms(texts[j])) >= overlap for j in near):
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


def distinct_indexes(
    texts: Sequence[str], k: int, overlap: float, sketches: Sequence[int | None] | None = None
) -> list[int]:
    """Indexes of the first `k` texts that are not repeats (as `repeats`), reading no further than needed;
    `sketches`: the texts' keyword-index sketches where the index has them (the screen's cheaper input)."""
    if overlap <= 0:
        return list(range(min(k, len(texts))))
    return _scan(texts, overlap, k, sketches)[0]


def distinct_hits(hits: Sequence[Hit], k: int, overlap: float) -> list[Hit]:
    """The first `k` hits that are not repeats (`repeats`): give it more than `k` candidates, so a repeat's
    place goes to the next distinct hit. Site pages not fetched yet (kind "link") are ranked like passages."""
    return [hits[i] for i in distinct_indexes([h.text for h in hits], k, overlap)]
