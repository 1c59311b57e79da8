"""The relevance gate: refuse an off-topic question before paying for a generation.

Retrieval always returns something, so "were there hits?" says nothing. The gate asks how much of the
question's content (numbers, identifiers, stemmed words; see `terms`) the best retrieved passage holds. A
question about lasagna over software docs finds passages that share "good" or "recipe" at best, never
"lasagna". Hybrid scores are rank fusions and not comparable across queries, so they are not used; the raw
coverage is returned so the threshold can be calibrated on labelled questions. A long question also passes
when one passage holds several of its terms (`MIN_HELD_TERMS`), whatever their share: a share penalises the
question for every extra word it spells out. And a question that names something exact (`top_k`, `file_id`,
`Rules-Requires-Root`) that none of the passages writes is refused whatever they share: they are about
something else, and the 1.5B model answered such questions from them ("the default top_k is 5").
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from citedocs.hits import Hit
from citedocs.text.terms import Terms, coverage, extract_terms, held_terms

__all__ = [
    "DEFAULT_RELEVANCE_THRESHOLD",
    "GATE_TOP_N",
    "HALF_HELD_TERMS",
    "MIN_HELD_TERMS",
    "GateDecision",
    "question_terms",
    "relevance_decision",
    "unheld_names",
]

# The best passage must hold MORE than this share of the question's weighted content terms. On
# claude-docs-qa (60 questions, BM25 top-5 section passages) answerable questions score a median 0.78 and
# 2 of 60 are at or below 0.5; of 16 hand-written off-topic questions 2 pass (median 0.33). Many short
# off-topic questions score exactly 0.5 (one of two terms matched), hence "more than".
DEFAULT_RELEVANCE_THRESHOLD = 0.5
# Only the first passages count: the gate should pass on what the model will actually read.
GATE_TOP_N = 5
# A passage that holds this many of the question's terms passes it at any share. With hybrid top-5 passages
# (bench/studies/bench_gate.py) the 2 claude-docs questions the share refused, answerable from passages holding 5 of
# 10 and 6 of 12 of their terms, pass; of 1,109 SciFact claims (long off-topic sentences) 17 pass instead of
# 10, of 40 hand-written off-topic questions 1 as before. 6 would pass only one of the two; 4 lets 48 claims in.
MIN_HELD_TERMS = 5
# A passage that holds exactly the threshold's share passes when that is at least this many terms: half of a
# long question is not the one of two that makes short off-topic questions score 0.5. Japanese questions are cut
# into more words and were refused at 3 of 6 (`ITP`, `バグ`, `パッケージ`) once passages were sized in real
# tokens. bench/studies/bench_gate.py: Japanese answerable 27 -> 30 of 30, keyword and hybrid; claude-docs
# answerable 60, off-topic 0 and hand-written off-topic 1 of 40 as before; SciFact claims (long off-topic
# sentences) 17 -> 31 of 1,109. At 4 terms: 19 claims, and Japanese 28.
HALF_HELD_TERMS = 3
# Words that ask rather than say what about, and the same in Japanese (方法 "way", 必要 "need", 違い
# "difference": 良い, 欲しい and こと are not content words there at all); analysed like every other word.
_ASKING_WORDS = extract_terms(
    "best better good great explain describe difference differences tell know need want way ways work works "
    "use using used make makes thing things happen happens mean means possible example examples recommend "
    "please help list show give find question "
    "必要 方法 仕方 やり方 違い 例 可能 意味 一覧 質問 推奨 おすすめ"
).words


# A name the question writes (an identifier: a parameter, field, file or version).
_NAME_RE = re.compile(r"[A-Za-z_][\w]*(?:[-./:@][\w]+)+|\w*_\w+|[A-Za-z]+\d[\w]*")
_NAME_MARK_RE = re.compile(r"[_./@:\d]")


def unheld_names(question: str, hits: Sequence[Hit]) -> list[str]:
    """The names the question writes (`top_k`, `file_id`, `Rules-Requires-Root`, `v1.2`: with `_ . / @ :`,
    a digit, or capitals between hyphens; not a hyphenated word like "pre-filling") that no passage holds
    (its file name, heading or text)."""
    texts = [f"{hit.path.rsplit('/', 1)[-1]}\n{hit.heading}\n{hit.text}".casefold() for hit in hits]
    names = dict.fromkeys(m.group(0).rstrip(".:/") for m in _NAME_RE.finditer(question))
    return [
        name
        for name in names
        if (_NAME_MARK_RE.search(name) or (name != name.lower() and "-" in name))
        and not any(name.casefold() in text for text in texts)
    ]


@dataclass(frozen=True, slots=True)
class GateDecision:
    """Whether to call the model; `best` is the raw score, `reason` says why in words a user can read."""

    allowed: bool
    reason: str
    best: float
    best_n: int | None = None
    # the question's names no passage writes (`unheld_names`), when refused for them
    missing: tuple[str, ...] = ()


# A heading's outline number ("4.6.4.1. 安定版", "3) Setup"): where a section stands, not what it says. Counted, the
# "4" of "4.6.4.1." held the weightiest term of "フルマラソンで 4 時間を切るための練習メニューは？" and let it through.
_OUTLINE_RE = re.compile(r"(?:^|(?<= > ))\d+(?:\.\d+)*[.)]\s+")


def _unnumbered(heading: str) -> str:
    return _OUTLINE_RE.sub("", heading)


def question_terms(question: str) -> Terms:
    terms = extract_terms(question)
    words = terms.words - _ASKING_WORDS if terms.words - _ASKING_WORDS or terms.identifiers else terms.words
    return Terms(terms.numbers, terms.identifiers, words)


def relevance_decision(
    question: str,
    hits: Sequence[Hit],
    threshold: float = DEFAULT_RELEVANCE_THRESHOLD,
    *,
    idf: Mapping[str, float] | None = None,
    top_n: int = GATE_TOP_N,
    min_held: int = MIN_HELD_TERMS,
    half_held: int = HALF_HELD_TERMS,
    names: bool = True,
) -> GateDecision:
    """Allow the model call only if one of the first `top_n` hits holds more than `threshold` of the question,
    or at least `min_held` of its terms (0 turns that second test off), or exactly `threshold` of them when that
    is at least `half_held` terms (0 turns it off); and, with `names`, none of the question's names is missing
    from all of those hits (`unheld_names`).

    `idf` (stemmed word or lowercased identifier -> weight) lets rare terms count more; a term missing from
    it keeps its default weight. A threshold of 0 or less turns the gate off.
    """
    if not hits:
        return GateDecision(False, "No indexed passage matches the question.", 0.0)
    terms = question_terms(question)
    if not terms:
        return GateDecision(threshold <= 0, "The question has no searchable words.", 0.0)
    weights = terms.weighted()
    if idf is not None:
        weights = {term: weight * idf.get(term, 1.0) for term, weight in weights.items()}
    best, best_n, most, most_n = 0.0, 1, 0, 1
    half: tuple[int, int] | None = None
    for n, hit in enumerate(hits[:top_n], start=1):
        name = hit.path.rstrip("/").rsplit("/", 1)[-1]
        present = extract_terms(f"{name}\n{_unnumbered(hit.heading)}\n{hit.text}", keep_parts=True)
        held = coverage(terms, present, weights)
        if held > best:
            best, best_n = held, n
        count = len(held_terms(terms, present))
        if half is None and half_held > 0 and count >= half_held and held >= threshold:
            half = (n, count)
        if count > most:
            most, most_n = count, n
    unheld = unheld_names(question, hits[:top_n]) if threshold > 0 and names else []
    if unheld:
        missing = ", ".join(f"`{name}`" for name in unheld)
        return GateDecision(
            False,
            f"None of the passages found mentions {missing}, which the question asks about. Check the spelling "
            f"(as the documents write it), or add documents that cover it.",
            best,
            best_n,
            tuple(unheld),
        )
    if threshold <= 0 or best > threshold:
        return GateDecision(
            True, f"Passage [{best_n}] holds {best:.0%} of the question's terms.", best, best_n
        )
    if min_held > 0 and most >= min_held:
        return GateDecision(
            True, f"Passage [{most_n}] holds {most} of the question's {len(terms.all)} terms.", best, most_n
        )
    if half is not None:
        return GateDecision(
            True,
            f"Passage [{half[0]}] holds {half[1]} of the question's {len(terms.all)} terms.",
            best,
            half[0],
        )
    return GateDecision(
        False,
        f"The indexed documents do not seem to cover this question (the best passage holds {best:.0%} of "
        f"its terms, not above {threshold:.0%}). Rephrase it with the documents' own terms, or add documents "
        f"that cover it.",
        best,
        best_n,
    )
