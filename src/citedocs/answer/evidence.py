"""Evidence selection: the sentences of the retrieved passages that bear on the question, under a token budget.

On 2 CPU cores the 1.5B model reads ~46 prompt tokens/s, so every passage line it reads costs time before the
first token, and five whole passages (~1,400 tokens) bury the one sentence that answers. This keeps windows of
sentences around the best-matching ones (question terms found in the sentence, from `text.terms`, so
Japanese works too; optionally an embedding similarity), drops sentences another passage already said, and
stops at the budget. Every window is an exact slice of its passage and keeps the passage's number, so a
citation [n] still names passage n and the checker still checks against the whole passage.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from citedocs.answer.gate import question_terms
from citedocs.answer.readable import readable_sentence
from citedocs.answer.sentences import Span, split_sentences
from citedocs.hits import Hit
from citedocs.llm.wire import estimate_tokens
from citedocs.text.terms import Terms, coverage, extract_terms

__all__ = [
    "DEFAULT_EVIDENCE_TOKENS",
    "EvidenceWindow",
    "ScoredSentence",
    "best_sentences",
    "line_span",
    "score_sentences",
    "select_evidence",
    "sentence_score",
]

# The measured opt-in (with the best passage whole: 689 prompt tokens P50 on claude-docs): docs/decisions/answers.md.
DEFAULT_EVIDENCE_TOKENS = 450
# What the answer service gives the model: 0, every passage whole (the 450-token windows lost faithfulness
# 0.73 -> 0.51 with the 1.5B model, docs/benchmarks.md); with a budget, the best EVIDENCE_WHOLE passages whole.
EVIDENCE_TOKENS = 0
EVIDENCE_WHOLE = 1
# Sentences either side of a chosen one: the definition before a list, the condition after a claim.
WINDOW = 1
# The heading says what the whole passage is about; it counts for every sentence, but less than the sentence.
HEADING_WEIGHT = 0.3
# Retrieval order is evidence too: a tie goes to the better-ranked passage.
RANK_PENALTY = 0.03
EMBEDDING_WEIGHT = 0.5
# A sentence that shares nothing with the question is only taken as a neighbour.
MIN_SCORE = 0.05
_KEY_RE = re.compile(r"\W+")
_LIST_ITEM_RE = re.compile(r"[ \t]*(?:[-*+•]|\d{1,3}[.)])[ \t]+")

Similarity = Callable[[Sequence[str]], Sequence[float]]


@dataclass(frozen=True, slots=True)
class EvidenceWindow:
    """Consecutive sentences of passage `n` (an exact slice of its text) and the lines they come from."""

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
    # Position (in its passage's list) of the sentence that gives this one its meaning: a table row's header
    # row, a list item's lead-in ("… the limits are:"). A row cut from its header reads as run-together values.
    anchor: int | None = None


def _anchors(text: str, spans: Sequence[Span]) -> list[int | None]:
    """For each span, the span that heads its table or introduces its list (None for prose and for the head
    itself)."""
    line_of = [text.count("\n", 0, span.start) for span in spans]
    lines = text.split("\n")
    first_span_on: dict[int, int] = {}
    for i, line in enumerate(line_of):
        first_span_on.setdefault(line, i)
    out: list[int | None] = []
    for line in line_of:
        body = lines[line].lstrip()
        anchor: int | None = None
        if body.startswith("|"):
            top = line
            while top > 0 and lines[top - 1].lstrip().startswith("|"):
                top -= 1
            anchor = first_span_on.get(top) if top != line else None
        elif _LIST_ITEM_RE.match(lines[line]):
            top = line
            while top > 0 and (_LIST_ITEM_RE.match(lines[top - 1]) or lines[top - 1][:1].isspace()):
                top -= 1
            while top > 0 and not lines[top - 1].strip():
                top -= 1
            lead = top - 1
            if top != line and lead >= 0 and lines[lead].rstrip().endswith(":") and lead in first_span_on:
                # The lead-in is the last sentence on that line.
                anchor = max(j for j, at in enumerate(line_of) if at == lead)
        out.append(anchor)
    return out


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


def _scored(
    question: Terms, hits: Sequence[Hit], similarity: Similarity | None
) -> list[list[ScoredSentence]]:
    weights = question.weighted()
    per_hit: list[list[ScoredSentence]] = []
    texts: list[str] = []
    for n, hit in enumerate(hits, start=1):
        heading = (
            coverage(question, extract_terms(hit.heading, keep_parts=True), weights) if hit.heading else 0.0
        )
        sentences: list[ScoredSentence] = []
        spans = split_sentences(hit.text)
        anchors = _anchors(hit.text, spans)
        position: dict[int, int] = {}  # span index -> position in `sentences`
        for index, span in enumerate(spans):
            text = hit.text[span.start : span.end]
            if span.kind == "heading" or not text.strip():
                continue
            own = coverage(question, extract_terms(text, keep_parts=True), weights) if weights else 0.0
            score = sentence_score(own, heading, n)
            anchor = anchors[index]
            head = position.get(anchor) if anchor is not None else None
            position[index] = len(sentences)
            sentences.append(ScoredSentence(n, index, span, score, _KEY_RE.sub("", text.lower()), head))
            texts.append(text)
        per_hit.append(sentences)
    if similarity is not None and texts:
        sims = iter(similarity(texts))
        per_hit = [
            [
                ScoredSentence(s.n, s.index, s.span, s.score + EMBEDDING_WEIGHT * next(sims), s.key, s.anchor)
                for s in sentences
            ]
            for sentences in per_hit
        ]
    return per_hit


def select_evidence(
    question: str,
    hits: Sequence[Hit],
    budget_tokens: int = DEFAULT_EVIDENCE_TOKENS,
    *,
    similarity: Similarity | None = None,
    window: int = WINDOW,
    scored: list[list[ScoredSentence]] | None = None,
    whole: int = 0,
) -> list[EvidenceWindow]:
    """Windows of the best sentences of `hits` ([1]..[n]), at most `budget_tokens` in all, in source order.

    The first `whole` passages (retrieval's best) are kept whole and count against the budget; windows of the
    others fill what is left. `similarity` (optional) scores each sentence against the question in [0, 1],
    e.g. embedding cosine. A budget of 0 or less returns each passage whole, as one window."""
    if budget_tokens <= 0:
        return [_whole(n, h) for n, h in enumerate(hits, start=1)]
    per_hit = scored if scored is not None else _scored(question_terms(question), hits, similarity)
    kept = min(max(0, whole), len(hits))
    ranked = sorted(
        (s for sentences in per_hit[kept:] for s in sentences), key=lambda s: (-s.score, s.n, s.index)
    )
    chosen: list[set[int]] = [set() for _ in hits]  # positions in per_hit[n-1]
    # What a whole passage says is said: a window repeating it would only cost time.
    said: set[str] = {s.key for sentences in per_hit[:kept] for s in sentences}
    best: dict[tuple[int, int], float] = {}
    used = sum(estimate_tokens(h.text) for h in hits[:kept])
    for seed in ranked:
        if seed.score < MIN_SCORE and used:
            break
        sentences = per_hit[seed.n - 1]
        at = next(i for i, s in enumerate(sentences) if s.index == seed.index)
        if at in chosen[seed.n - 1] or (seed.key in said and seed.key):
            continue
        taken = chosen[seed.n - 1]
        near = range(max(0, at - window), min(len(sentences), at + window + 1))
        new = [i for i in near if i not in taken and (i == at or sentences[i].key not in said)]
        heads = {a for i in new if (a := sentences[i].anchor) is not None}
        head = sorted(a for a in heads if a not in taken and a not in new and sentences[a].key not in said)
        cost = _cost(hits[seed.n - 1], sentences, new + head)
        if used + cost > budget_tokens:
            # The window does not fit; the sentence alone (with its table header or list lead-in) may.
            head = [a for a in head if a == seed.anchor]
            new = [at]
            cost = _cost(hits[seed.n - 1], sentences, new + head)
            if used + cost > budget_tokens:
                continue
        new += head
        for i in new:
            chosen[seed.n - 1].add(i)
            said.add(sentences[i].key)
        best[(seed.n, at)] = seed.score
        used += cost
    return [_whole(n, h) for n, h in enumerate(hits[:kept], start=1)] + _windows(hits, per_hit, chosen, best)


def _whole(n: int, hit: Hit) -> EvidenceWindow:
    return EvidenceWindow(n, hit.path, hit.heading, hit.page, hit.line_start, hit.line_end, hit.text, 1.0)


def _text(hit: Hit, span: Span) -> str:
    return hit.text[span.start : span.end]


def _cost(hit: Hit, sentences: Sequence[ScoredSentence], positions: Sequence[int]) -> int:
    return sum(estimate_tokens(_text(hit, sentences[i].span)) for i in positions)


def _windows(
    hits: Sequence[Hit],
    per_hit: list[list[ScoredSentence]],
    chosen: list[set[int]],
    best: dict[tuple[int, int], float],
) -> list[EvidenceWindow]:
    out: list[EvidenceWindow] = []
    for n, (hit, sentences, picked) in enumerate(zip(hits, per_hit, chosen, strict=True), start=1):
        run: list[int] = []
        for i in sorted(picked):
            if run and i != run[-1] + 1:
                out.append(_window(n, hit, sentences, run, best))
                run = []
            run.append(i)
        if run:
            out.append(_window(n, hit, sentences, run, best))
    return out


def _window(
    n: int, hit: Hit, sentences: list[ScoredSentence], run: list[int], best: dict[tuple[int, int], float]
) -> EvidenceWindow:
    start, end = sentences[run[0]].span.start, sentences[run[-1]].span.end
    score = max((best.get((n, i), sentences[i].score) for i in run), default=0.0)
    return EvidenceWindow(
        n, hit.path, hit.heading, hit.page, *line_span(hit, start, end), hit.text[start:end], score
    )


def score_sentences(
    question: str, hits: Sequence[Hit], similarity: Similarity | None = None
) -> list[list[ScoredSentence]]:
    """Every sentence of every passage, scored against the question; pass to both selections to score once."""
    return _scored(question_terms(question), hits, similarity)


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
                s.n, hit.path, hit.heading, hit.page, *line_span(hit, s.span.start, s.span.end), text, s.score,
            )
        )  # fmt: skip
    return out
