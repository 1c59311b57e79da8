"""Which retrieved hits an answer's model reads: passages, not links, each saying something the ones above it
do not.

Documentation repeats itself: a page saved from HTML holds its markdown and its rendered text, a tutorial copies
a paragraph of the reference. On claude-docs, 26 of the 65 answered prompts of a run held a passage whose
content terms were at least 0.8 covered by one ranked above it, and the model read each of those twice.
Dropping them (no other passage takes the place) leaves the key facts the model reads as they were (0.908)
and cuts the prompt from 1,338 to 1,194 tokens (estimated) at the median (`bench/studies/bench_evidence.py facts
--overlap`, docs/decisions/answers.md). The passage ranked higher is kept, so the numbering follows retrieval.
"""

from __future__ import annotations

from collections.abc import Sequence

from citedocs.hits import Hit
from citedocs.search.distinct import repeats

__all__ = ["passages", "repeats"]


def passages(hits: Sequence[Hit], k: int, *, overlap: float = 0.0) -> list[Hit]:
    """The first `k` hits that hold text to cite (a link's description is not a passage of the page), less
    those that repeat one ranked above them (`repeats`); `overlap` 0 keeps them all."""
    first = [h for h in hits if h.kind != "link"][:k]
    dropped = set(repeats(first, overlap))
    return [h for i, h in enumerate(first) if i not in dropped]
