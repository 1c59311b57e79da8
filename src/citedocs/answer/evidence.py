"""The sentences of the retrieved passages that bear on the question: what the `evidence` event shows and
what the quotes are chosen from.

Each sentence is scored by the question terms found in it (from `text.terms`, so Japanese works too), its
heading's, and its passage's rank. A heading line is not a sentence: it counts through the heading weight,
also where the passage holds it as plain text (HTML, PDF), which would otherwise glue it to the sentence
after it and score that sentence twice for the heading's words. The model reads every passage whole: 450-token windows of the best sentences read half the prompt but lost hand-graded
faithfulness (0.73 -> 0.51 with the 1.5B model) and were removed (docs/decisions/answers.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from citedocs.answer.gate import question_terms
from citedocs.answer.readable import readable_sentence
from citedocs.answer.sentences import Span, split_sentences
from citedocs.hits import Hit
from citedocs.text.terms import Terms, coverage, extract_terms

__all__ = [
    "EvidenceWindow",
    "ScoredSentence",
    "best_sentences",
    "line_span",
    "score_sentences",
    "sentence_score",
]

# The heading says what the whole passage is about; it counts for every sentence, but less than the sentence.
HEADING_WEIGHT = 0.3
# Retrieval order is evidence too: a tie goes to the better-ranked passage.
RANK_PENALTY = 0.03
# A sentence that shares (almost) nothing with the question is not shown.
MIN_SCORE = 0.05
_KEY_RE = re.compile(r"\W+")


@dataclass(frozen=True, slots=True)
class EvidenceWindow:
    """A sentence of passage `n` (an exact slice of its text) and the lines it comes from."""

    n: int
    path: str
    heading: str
    page: int | None
    line_start: int
    line_end: int
    text: str
    score: float

    def to_dict(self) -> dict[str, object]:
        return {
            "n": self.n,
            "path": self.path,
            "heading": self.heading,
            "page": self.page,
            "line_start": self.line_start,
            "line_end": self.line_end,
            "text": self.text,
            "score": round(self.score, 3),
        }


@dataclass(frozen=True, slots=True)
class ScoredSentence:
    """One sentence of passage `n` (its `index` among the passage's sentences) and how well it matches."""

    n: int
    index: int
    span: Span
    score: float
    key: str


def line_span(hit: Hit, start: int, end: int) -> tuple[int, int]:
    """File lines that hold characters `start`..`end` of the passage: exact when the passage has the file's
    lines one for one, else the narrowest span sure to contain them.

    The chunker joins paragraphs with one blank line, so a passage may have blank lines the file lacks (a
    heading right above its text) or lack some it has (runs of blank lines); by how many is known from the
    passage's line count, so the span widens by that much."""
    if not hit.line_end or hit.page is not None:
        return hit.line_start, hit.line_end
    text_lines = hit.text.count("\n") + 1
    file_lines = hit.line_end - hit.line_start + 1
    before = hit.text.count("\n", 0, start)
    through = hit.text.count("\n", 0, end)
    extra, missing = max(0, text_lines - file_lines), max(0, file_lines - text_lines)
    first = hit.line_start + max(0, before - extra)
    last = hit.line_start + through + missing
    return max(hit.line_start, min(first, hit.line_end)), max(first, min(last, hit.line_end))


def sentence_score(own: float, heading: float, n: int) -> float:
    """A sentence's score: its own match, the heading's (only when it matches itself), less a little for
    each rank its passage is below the first."""
    return own + HEADING_WEIGHT * heading * (own > 0) - RANK_PENALTY * (n - 1)


def _scored(question: Terms, hits: Sequence[Hit]) -> list[list[ScoredSentence]]:
    weights = question.weighted()
    per_hit: list[list[ScoredSentence]] = []
    for n, hit in enumerate(hits, start=1):
        heading = (
            coverage(question, extract_terms(hit.heading, keep_parts=True), weights) if hit.heading else 0.0
        )
        sentences: list[ScoredSentence] = []
        spans = split_sentences(hit.text, hit.heading.split(" > "))
        for index, span in enumerate(spans):
            text = hit.text[span.start : span.end]
            if span.kind == "heading" or not text.strip():
                continue
            own = coverage(question, extract_terms(text, keep_parts=True), weights) if weights else 0.0
            score = sentence_score(own, heading, n)
            sentences.append(ScoredSentence(n, index, span, score, _KEY_RE.sub("", text.lower())))
        per_hit.append(sentences)
    return per_hit


def _text(hit: Hit, span: Span) -> str:
    return hit.text[span.start : span.end]


def score_sentences(question: str, hits: Sequence[Hit]) -> list[list[ScoredSentence]]:
    """Every sentence of every passage, scored against the question; pass to `best_sentences` and the quotes
    to score once."""
    return _scored(question_terms(question), hits)


def best_sentences(
    question: str, hits: Sequence[Hit], count: int = 3, *, scored: list[list[ScoredSentence]] | None = None
) -> list[EvidenceWindow]:
    """The `count` single sentences that match the question best, best first: what a reader sees while the
    model reads (the `evidence` event). Each is made readable (`readable.readable_sentence`: no Markdown marks
    or table pipes; fragments of JSON or code skipped for the next best) and said once; its passage and lines
    say where it stands verbatim. Quotes and citations keep exact slices (answer/quotes.py)."""
    per_hit = scored if scored is not None else score_sentences(question, hits)
    ranked = sorted((s for sentences in per_hit for s in sentences), key=lambda s: (-s.score, s.n, s.index))
    out: list[EvidenceWindow] = []
    said: set[str] = set()
    shown: set[str] = set()
    for s in ranked:
        if len(out) >= count or s.score < MIN_SCORE:
            break
        if s.key in said or not s.key:
            continue
        said.add(s.key)
        hit = hits[s.n - 1]
        text = readable_sentence(_text(hit, s.span))
        if text is None or text.lower() in shown:
            continue
        shown.add(text.lower())
        out.append(
            EvidenceWindow(
                s.n,
                hit.path,
                hit.heading,
                hit.page,
                *line_span(hit, s.span.start, s.span.end),
                text,
                s.score,
            )
        )
    return out
