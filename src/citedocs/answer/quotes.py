"""Quotes: the few sentences of the sources that answer the question and that the synthesis does not state.

A 1.5B model restating five passages keeps 0.59-0.66 of the key facts they hold (issue 44); the sentences
that hold the rest are already in the passages. This picks them without the model: the sentences (table rows,
list items, code lines) that match the question best (`evidence.score_sentences`, the same scores as the
`evidence` event), leaving out any that says nothing besides the question's words that the reader has not
seen — in the synthesis, in a quote chosen before it — so a quote adds a fact; of two that match equally, the
one that names a number or identifier the question does not comes first. A sentence that ends in a colon is
quoted with the list, table rows or code it introduces; one that points back ("in this way", "これは") goes
with the sentence before it; a line too long to read (a table saved from HTML, its cells glued) is quoted in
windows of its cells. Each quote is an exact slice of its passage (`passage.text[start:end] == quote.text`),
cites the passage's number and says where it is (file lines, page or URL). At most a few hundred characters:
fewer when the synthesis already states what they would; more when there is no synthesis (withheld, refused
by the model, no model), because then the quotes are the answer; then a question naming an identifier no
passage writes (`top_k`) gets none. After the model refused, only a close match is quoted, and the looser
matches the model confirms when asked about each alone (`to_confirm`, answer/confirm.py), these first.
Figures: docs/evaluation.md, `bench/bench_quotes.py`.
Japanese works the same: sentences end at `。` with no space, and terms come from the analyzer (CJK words).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TypedDict

from citedocs.answer.evidence import ScoredSentence, line_span, score_sentences, sentence_score
from citedocs.answer.gate import question_terms, unheld_names
from citedocs.answer.sentences import strip_markers
from citedocs.hits import Hit
from citedocs.text.cjk import has_cjk
from citedocs.text.terms import Terms, coverage, extract_terms, union

__all__ = [
    "ALONE_CHARS",
    "QUOTES_LABEL",
    "QUOTE_CHARS",
    "Quote",
    "QuoteDict",
    "choose_quotes",
    "to_confirm",
]

# Characters of quotes under a synthesis, and when the quotes are the whole answer (bench/bench_quotes.py).
QUOTE_CHARS = 650
ALONE_CHARS = 700
MAX_QUOTES = 5
MAX_QUOTES_ALONE = 5
# A sentence longer than this is quoted line by line (a run of table rows or lines without full stops), or
# not at all when it is one long line: a quote is read at a glance.
MAX_QUOTE_CHARS = 320
# A quote must match the question at least this well (question-term coverage, as the `evidence` event);
# better when the model read the passages and its answer was refused or withheld (it said they do not answer,
# or wrote what they do not support): then only a close match is shown. Without a model, the first applies.
MIN_QUOTE_SCORE = 0.25
MIN_QUOTE_SCORE_REFUSED = 0.6
# What the model is asked about after a refusal (answer/confirm.py): room for twice the quotes shown alone.
CONFIRM_POOL = 10
CONFIRM_POOL_CHARS = 2 * ALONE_CHARS
# ... and at least this share of its content terms (weighted) must be new to the reader.
MIN_NEW_SHARE = 0.2
# A line of this many words with no punctuation at all is a menu or a list of links, not something a page says:
# never quoted in place of a refused answer (under a synthesis it may still point to where the answer is).
MENU_WORDS = 10
_PUNCTUATION = frozenset(".,:;!?()[]{}|=`'\"/<>。、，．：；！？（）「」『』")
_INTRODUCING = (":", "：")
# What may stand between a sentence and what it introduces: white space, list markers (outside the spans).
_GAP_RE = re.compile(r"(?:\s|[-*+•]|\d{1,3}[.)])*")
# A sentence that points back to the one before it within its first words: English demonstratives and
# pronouns, Japanese こ/そ words (この, これ, その, それ, こうした, そのような ...) and 上記.
_POINTS_BACK_RE = re.compile(
    r"\W*(?:(?:\w+\W+){0,5}?(?:this|these|those|such|it|its|they|them|their)\b|こ[のれうん]|そ[のれうん]|上記)",
    re.IGNORECASE,
)
POINTS_BACK_SHARE = 0.9
# A line longer than MAX_QUOTE_CHARS is quoted in runs of its pieces of at most this many characters; pieces
# end at sentence ends and where glued cells meet ("coding.Balances", "DescriptionStrong"; not "OpenAI", "1MTool").
WINDOW_CHARS = 200
_GLUE_RE = re.compile(r"(?<=[a-z.!?)%…])(?=[A-Z][a-z])|(?<=[.!?。])\s+")
# What a front end calls the quotes when there is no synthesis above them.
QUOTES_LABEL = "What the sources say"


class QuoteDict(TypedDict):
    """A quote on the wire (`done.quotes`): the text, the source number it cites and where it is."""

    text: str
    n: int
    path: str
    heading: str
    line: int | None
    line_end: int | None
    page: int | None
    url: str | None
    confirmed: bool


@dataclass(frozen=True, slots=True)
class Quote:
    """Characters `start`..`end` of passage `n` (`text`), and the file lines (or page) they come from."""

    n: int
    start: int
    end: int
    text: str
    path: str
    heading: str
    page: int | None
    line_start: int
    line_end: int
    score: float
    confirmed: bool = False  # after a refusal, the model said it answers (answer/confirm.py)

    def to_dict(self) -> QuoteDict:
        url = self.path if self.path.startswith(("http://", "https://")) else None
        lines = self.page is None and url is None and self.line_end > 0
        return {
            "text": self.text,
            "n": self.n,
            "path": self.path,
            "heading": self.heading,
            "line": self.line_start if lines else None,
            "line_end": self.line_end if lines else None,
            "page": self.page,
            "url": url,
            "confirmed": self.confirmed,
        }


@dataclass(frozen=True, slots=True)
class _Unit:
    n: int
    start: int
    end: int
    score: float
    names: bool = False  # holds a number or identifier the question does not (`_names_something`)


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _reads_as_menu(text: str) -> bool:
    """Navigation text scraped with a page ("Overview Quickstart Models Pricing ..."): a long line of words
    with no punctuation. It matches many questions and says nothing."""
    return any(
        len(line.split()) >= MENU_WORDS and not _PUNCTUATION.intersection(line) for line in text.split("\n")
    )


def _is_markup(text: str) -> bool:
    """An HTML comment (`<!-- source: URL -->`, which scraped pages keep): markup, not what the sources say."""
    stripped = text.strip()
    return stripped.startswith("<!--") or stripped.endswith("-->")


def _introduced(text: str, units: list[_Unit]) -> list[_Unit]:
    """`units` of one passage (in order), where a sentence that ends in a colon ("The fields are:", "以下が
    設定です：") runs on through what it introduces (the list items, table rows or code right after it) as far
    as a quote may go: alone it says only that the answer follows. A heading in between stops it. One that
    says nothing of its own ("For example:", "例えば以下の様にします:") goes on from the sentence before it in
    its paragraph and matches the question as well as that one."""
    out: list[_Unit] = []
    for i, unit in enumerate(units):
        end, score = unit.end, unit.score
        if text[unit.start : unit.end].endswith(_INTRODUCING):
            for after in units[i + 1 :]:
                if after.end - unit.start > MAX_QUOTE_CHARS or not _GAP_RE.fullmatch(text, end, after.start):
                    break
                end = after.end
            before = units[i - 1] if i else None
            if end > unit.end and before is not None and "\n\n" not in text[before.end : unit.start]:
                score = max(score, before.score)
        out.append(_Unit(unit.n, unit.start, end, score))
    return out


def _continued(text: str, units: list[_Unit]) -> list[_Unit]:
    """`units` of one passage (in order), where a sentence that points back in its first words ("When using
    tools in this way:", "It is ...", "これは ...") goes with the sentence right before it in its paragraph:
    it matches the question as well as that one, less a little (POINTS_BACK_SHARE), being about what that
    one is about in words the question need not share (the list of what to do, the number, the name); and
    when it matches better itself, it is quoted with that one, as alone it does not say what "this" is
    ("メンテナスクリプトは冪等でなければなりません。これは、...")."""
    out: list[_Unit] = []
    for i, unit in enumerate(units):
        before = out[i - 1] if i else None
        start, score = unit.start, unit.score
        if (
            before is not None
            and before.end <= unit.start
            and "\n\n" not in text[before.end : unit.start]
            and _POINTS_BACK_RE.match(text, unit.start)
        ):
            if unit.score > before.score and unit.end - before.start <= MAX_QUOTE_CHARS:
                start = before.start
            score = max(score, POINTS_BACK_SHARE * before.score)
        out.append(_Unit(unit.n, start, unit.end, score))
    return out


def _names_something(question: Terms, text: str) -> bool:
    """`text` holds a number or an identifier (a path, an address, a `snake_case` name) the question does
    not: what a key fact usually is. Between two sentences that match the question equally, the one that
    names something answers; the other restates the question ("Two things must be done when ...")."""
    terms = extract_terms(text, keep_parts=True)
    return bool(terms.numbers - question.numbers or terms.identifiers - question.identifiers)


def _windows(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """A line too long to quote, as overlapping runs of its pieces of at most WINDOW_CHARS: a page saved
    from HTML glues a table's cells and a list's items into one line ("OpusSonnetHaikuDescriptionStrong
    performance ... coding.Balances intelligence and speed ..."), which holds the answer but cannot be read
    at a glance. The pieces end at sentence ends and where one cell runs into the next (a lower-case
    letter or full stop straight before a capitalised word); each run is an exact slice of the line."""
    cuts = sorted({start, end} | {m.start() for m in _GLUE_RE.finditer(text, start, end)})
    out: list[tuple[int, int]] = []
    for i, a in enumerate(cuts[:-1]):
        b = a
        for c in cuts[i + 1 :]:
            if c - a > WINDOW_CHARS:
                break
            b = c
        a2, b2 = _trimmed(text, a, b)
        if b2 > a2 and (not out or b2 > out[-1][1]):
            out.append((a2, b2))
    return out


def _units(question: Terms, hits: Sequence[Hit], scored: list[list[ScoredSentence]]) -> list[_Unit]:
    """Every scored sentence of every passage; one too long to read at a glance, line by line, and a line
    too long, in windows (`_windows`); one that points back, with the sentence before it (`_continued`); one
    that introduces a list, table or code, with it (`_introduced`)."""
    weights = question.weighted()
    out: list[_Unit] = []
    for n, (hit, sentences) in enumerate(zip(hits, scored, strict=True), start=1):
        units: list[_Unit] = []
        heading = coverage(question, extract_terms(hit.heading, keep_parts=True), weights) * bool(hit.heading)
        for s in sentences:
            start, end = _trimmed(hit.text, s.span.start, s.span.end)
            if end - start <= MAX_QUOTE_CHARS:
                units.append(_Unit(n, start, end, s.score))
                continue
            at = start
            for line in hit.text[start:end].split("\n"):
                a, b = _trimmed(hit.text, at, at + len(line))
                at += len(line) + 1
                for wa, wb in (
                    _windows(hit.text, a, b) if b - a > MAX_QUOTE_CHARS else [(a, b)] if b > a else []
                ):
                    own = coverage(question, extract_terms(hit.text[wa:wb], keep_parts=True), weights)
                    units.append(_Unit(n, wa, wb, sentence_score(own, heading, n)))
        for unit in _introduced(hit.text, _continued(hit.text, units)):
            names = _names_something(question, hit.text[unit.start : unit.end])
            out.append(_Unit(unit.n, unit.start, unit.end, unit.score, names))
    return out


def _quoted(text: str, unit: _Unit) -> tuple[int, int]:
    """The span a unit is quoted as: without an HTML comment line (`<!-- source: URL -->`) before it."""
    start, end = unit.start, unit.end
    if text.startswith("<!--", start) and "-->" in text[start:end]:
        start, end = _trimmed(text, text.index("-->", start) + 3, end)
    return start, end


def _beyond(terms: Terms, question: Terms) -> Terms:
    """`terms` less the question's own: what a sentence says besides restating what was asked."""
    return Terms(
        terms.numbers - question.numbers,
        terms.identifiers - question.identifiers,
        frozenset(w for w in terms.words - question.words if not _in_question(w, question)),
    )


def _in_question(word: str, question: Terms) -> bool:
    return has_cjk(word) and any(len(q) > 1 and q in word for q in question.words)


def _adds(terms: Terms, question: Terms, seen: Terms) -> bool:
    """A sentence adds to what the reader has seen when at least MIN_NEW_SHARE of what it says besides
    the question's terms is new to them. Measured over all its terms, a sentence that matches the
    question closely (most of its terms are the question's) would count as seen for naming one new thing,
    and that one thing is the answer ("... now available in Canada")."""
    own = _beyond(terms, question)
    return bool(own) and 1.0 - coverage(own, seen) >= MIN_NEW_SHARE


def choose_quotes(
    question: str,
    hits: Sequence[Hit],
    synthesis: str = "",
    *,
    scored: list[list[ScoredSentence]] | None = None,
    budget_chars: int | None = None,
    model_refused: bool = False,
    confirmed: Collection[str] = (),
) -> list[Quote]:
    """The sentences of `hits` ([1]..[n]) that answer `question` and that `synthesis` (the checked answer;
    "" when there is none) does not already state, best first, verbatim, at most `budget_chars` in all
    (QUOTE_CHARS under a synthesis, ALONE_CHARS without one). `scored`: `score_sentences(question, hits)`,
    when the caller has it already. `model_refused`: the model's answer was refused or withheld (only a
    close match is quoted then, and the quotes in `confirmed`, by text: those the model said answer the
    question, `to_confirm` and answer/confirm.py). Pure: the same inputs give the same quotes."""
    least = MIN_QUOTE_SCORE_REFUSED if model_refused else MIN_QUOTE_SCORE
    return _select(
        question,
        hits,
        synthesis,
        scored,
        budget_chars,
        model_refused=model_refused,
        floor=MIN_QUOTE_SCORE if confirmed else least,
        close=least,
        confirmed=confirmed,
    )


def to_confirm(
    question: str, hits: Sequence[Hit], *, scored: list[list[ScoredSentence]] | None = None
) -> list[Quote]:
    """After a refusal: what the model is asked about (answer/confirm.py), best first: the quotes the first
    bar (MIN_QUOTE_SCORE) would choose with room for twice as many. Close matches are asked about too: they
    are shown without a yes, but after the ones the model confirms, as room is left."""
    return _select(
        question,
        hits,
        "",
        scored,
        CONFIRM_POOL_CHARS,
        model_refused=True,
        floor=MIN_QUOTE_SCORE,
        close=MIN_QUOTE_SCORE,
        confirmed=(),
        most=CONFIRM_POOL,
    )


def _select(
    question: str,
    hits: Sequence[Hit],
    synthesis: str,
    scored: list[list[ScoredSentence]] | None,
    budget_chars: int | None,
    *,
    model_refused: bool,
    floor: float,
    close: float,
    confirmed: Collection[str],
    most: int | None = None,
) -> list[Quote]:
    """`choose_quotes`: units scoring at least `floor`, and below `close` only when their text is in
    `confirmed`; at most `most` (MAX_QUOTES_ALONE or MAX_QUOTES)."""
    alone = not synthesis.strip()
    budget = budget_chars if budget_chars is not None else (ALONE_CHARS if alone else QUOTE_CHARS)
    most = most if most is not None else MAX_QUOTES_ALONE if alone else MAX_QUOTES
    if alone and unheld_names(question, hits):
        return []
    asked = question_terms(question)
    per_hit = scored if scored is not None else score_sentences(question, hits)

    def rank(u: _Unit) -> tuple[bool, float, bool, int, int]:
        # what the model confirmed comes first: it answers, where a close match may only share words
        told = bool(confirmed) and hits[u.n - 1].text[slice(*_quoted(hits[u.n - 1].text, u))] in confirmed
        return (not told, -u.score, not u.names, u.n, u.start)

    units = sorted((u for u in _units(asked, hits, per_hit) if u.score >= floor), key=rank)
    # What the reader has seen: the question and the synthesis (its words, not its citation markers).
    seen = union([asked, extract_terms(strip_markers(synthesis), keep_parts=True)])
    keys: set[str] = set()
    spans: list[tuple[int, int, int]] = []
    used = 0
    out: list[Quote] = []
    for unit in units:
        if len(out) >= most:
            break
        hit = hits[unit.n - 1]
        start, end = _quoted(hit.text, unit)
        text = hit.text[start:end]
        key = "".join(ch for ch in text.casefold() if ch.isalnum())
        if not key or key in keys or used + len(text) > budget or len(text) > MAX_QUOTE_CHARS:
            continue
        if any(n == unit.n and start < b and a < end for n, a, b in spans):  # part of a quote chosen
            continue
        if not text or _is_markup(text) or (model_refused and _reads_as_menu(text)):
            continue
        if unit.score < close and text not in confirmed:
            continue
        terms = extract_terms(text, keep_parts=True)
        if not _adds(terms, asked, seen):
            continue
        keys.add(key)
        spans.append((unit.n, start, end))
        seen = union([seen, terms])
        used += len(text)
        out.append(
            Quote(
                unit.n,
                start,
                end,
                text,
                hit.path,
                hit.heading,
                hit.page,
                *line_span(hit, start, end),
                unit.score,
                text in confirmed,
            )
        )
    return out
