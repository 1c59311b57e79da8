"""The model checks its own answer: each sentence against the passage it cites, and what it cannot find goes.

The citation check (answer/citations.py) is lexical: a sentence that reuses a passage's words passes, even
when it adds a consequence the passage never states ("leading to more efficient support") or glues two facts
wrongly. Hand grades found about a third of the 1.5B model's checked sentences unsupported (faithfulness
0.65-0.71 a case). The same model, shown one passage and one sentence and asked the evaluation judge's
question (answer/support.py), says no to most of those: on the hand-graded sentences of four committed
claude-docs runs (bench/studies/model_check.py), leaving out the sentences it says no to for every passage
they cite raised hand-graded faithfulness from 0.674 to 0.808 on average (0.680 -> 0.812 on the latest),
while what a reader sees kept 0.792 of the key facts against 0.818 (the quotes take up what went). Live
(`answer-quotes-9`, all 81 cases): 0.680 -> 0.800 faithful, 0.853 -> 0.836 of the key facts, 1.9 s more a
reply at the median; Japanese (`answer-ja-12`) unchanged at 0.800, 5 of 119 sentences left out.

The model is strict (it said yes to 64% of pairs the grader found 79% supported), so a sentence the lexical
check finds almost wholly in its passages (`SPARE_SUPPORT`) is kept without asking; an uncited sentence no
passage holds goes without asking. When no checked sentence is left, the synthesis is withheld and the quotes
are the answer. Asks are short (one passage window, 3 tokens, temperature 0), made after the last token, at
most `MAX_ASKS` within `BUDGET_S`: a sentence not asked about, a failed ask or an unclear reply keeps the
sentence as the citation check left it. A passage is a document's text: the most it can do is talk the model
into "yes", which keeps a sentence the citation check already let through, or into "no", which leaves a
sentence out (still shown, struck through) or withholds the answer (the quotes, verbatim, answer instead).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from citedocs.answer.asks import Asker
from citedocs.answer.citations import UNVERIFIED_MARK, SentenceCheck, check_citations
from citedocs.answer.prepared import PreparedAnswer
from citedocs.answer.prompt import question_language, refusal_sentence
from citedocs.answer.support import copied_from, judge_messages, parse_verdict
from citedocs.answer.verdict import Verdict
from citedocs.hits import Hit
from citedocs.llm.chat import ChatModel

__all__ = [
    "BUDGET_S",
    "MAX_ASKS",
    "SPARE_SUPPORT",
    "WITHHELD_REASON",
    "ModelCheck",
    "after_check",
    "check_answer",
    "checked_by_model",
    "without_sentences",
]


# Kept without asking: the share of a sentence's content its passages hold (citations.SUPPORT_THRESHOLD is
# 0.6). Measured on four hand-graded runs: dropping every "no" kept 0.775 of the key facts a reader sees at
# faithfulness 0.827; sparing 0.9 kept 0.792 at 0.808; sparing 0.8 kept 0.800 at 0.767.
SPARE_SUPPORT = 0.9
# In answer-quotes-8 (live, 10 s and 8 asks) the check took 1.9 s median, 3.7 s P90, and 2 of 49 answers ran
# out of time with sentences the model would have said no to unasked (hand-graded faithfulness 0.792; with every
# sentence asked, 0.800). Long answers need more asks; short ones stop long before either bound.
MAX_ASKS = 12
BUDGET_S = 20.0
WITHHELD_REASON = (
    "asked about each sentence of its answer, the model found none of them in the passages they cite, "
    "so the answer was withheld"
)
_MARKS = re.compile(rf"(?:[ \t]*(?:\[\d+(?:\s*[,-]\s*\d+)*\]|{re.escape(UNVERIFIED_MARK)}))*")
_BARE_LINE = re.compile(r"^\s*(?:[-*+]|\d+[.)])?\s*$")
_BLANK_RUNS = re.compile(r"\n{3,}")


@dataclass(frozen=True, slots=True)
class ModelCheck:
    """`answer` without the sentences left out (`left_out`, as the answer wrote them); `withheld` when every
    checked sentence went; how many asks were made and how long the check took."""

    answer: str
    left_out: tuple[str, ...]
    withheld: bool
    asked: int
    ms: float


def without_sentences(answer: str, sentences: Sequence[SentenceCheck]) -> str:
    """`answer` without `sentences` (spans of it), lines left empty or holding only a list marker removed."""
    for sentence in sorted(sentences, key=lambda s: s.start, reverse=True):
        before, after = answer[: sentence.start], answer[sentence.end :]
        marks = _MARKS.match(after)  # its marks after its full stop ("？ [unverified]")
        after = after[marks.end() if marks else 0 :]
        if not before or before[-1] in " \t\n":
            after = after.lstrip(" \t")
        answer = before + after
    lines = [line.rstrip() for line in answer.split("\n")]
    kept = [line for line in lines if not (line and _BARE_LINE.match(line))]
    return _BLANK_RUNS.sub("\n\n", "\n".join(kept)).strip()


def after_check(checked: Verdict, check: ModelCheck, question: str) -> Verdict:
    """The verdict a reader gets once the model checked its sentences: without those it left out; withheld
    (the refusal sentence, the quotes as the answer) when it left out every one."""
    if not check.left_out:
        return checked
    if check.withheld:
        refusal = refusal_sentence(question_language(question))
        return replace(checked, answer=refusal, refused=True, reason=WITHHELD_REASON, left_out=check.left_out)
    return replace(checked, answer=check.answer, left_out=check.left_out)


async def check_answer(
    llm: ChatModel,
    answer: str,
    hits: Sequence[Hit],
    *,
    seed: int | None = None,
    budget_s: float = BUDGET_S,
) -> ModelCheck:
    """Check each sentence of `answer` (as delivered: citations repaired) against the passages it cites."""
    asks = Asker(llm, MAX_ASKS, budget_s, seed)
    report = check_citations(answer, hits)
    checked = [s for s in report.sentences if s.checked]
    gone: list[SentenceCheck] = []
    for sentence in checked:
        if sentence.supported and sentence.support >= SPARE_SUPPORT:
            continue
        cited = [n for n in sentence.cited if 1 <= n <= len(hits)]
        if not cited or await _says_no_to_each(asks, sentence.sentence, [hits[n - 1].text for n in cited]):
            gone.append(sentence)
    withheld = bool(checked) and len(gone) == len(checked)
    return ModelCheck(
        answer="" if withheld else without_sentences(answer, gone),
        left_out=tuple(
            s.sentence.replace(f" {UNVERIFIED_MARK}", "").replace(UNVERIFIED_MARK, "") for s in gone
        ),
        withheld=withheld,
        asked=asks.asked,
        ms=asks.ms,
    )


async def _says_no_to_each(asks: Asker, sentence: str, passages: Sequence[str]) -> bool:
    """Whether the model says a clear no for every passage (a copied sentence is held without asking; no ask
    left, or an unclear reply, is not a no)."""
    for passage in passages:
        if copied_from(sentence, passage):
            return False
        reply = await asks.ask(judge_messages(sentence, passage), "check a sentence")
        if reply is None or parse_verdict(reply) is not False:
            return False
    return True


async def checked_by_model(llm: ChatModel, prepared: PreparedAnswer, checked: Verdict) -> Verdict:
    """The answer service's step after an answer (not a refusal): `check_answer` on `prepared`'s passages,
    traced, and the verdict the reader gets (`after_check`)."""
    check = await check_answer(llm, checked.answer, prepared.hits, seed=prepared.seed)
    prepared.trace.event(
        "sentences_checked",
        {"asked": check.asked, "left_out": len(check.left_out), "withheld": check.withheld, "ms": check.ms},
    )
    return after_check(checked, check, prepared.question)
