"""What a reader is shown of the model's reply: the answer as checked, or the refusal sentence.

A reply is refused when the model refused, or when its sources mostly do not hold it (`withheld_reason`);
an underspecified follow-up may be answered with a question back, which cites nothing and is no refusal.
Otherwise the answer is the reply with its citations repaired and unsupported sentences marked. Pure: the
same reply, passages and question give the same verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from citedocs.answer.citations import (
    CitationReport,
    check_citations,
    is_refusal,
    repair_answer,
    withheld_reason,
)
from citedocs.answer.conversation import is_asking_back
from citedocs.answer.prompt import question_language, refusal_sentence
from citedocs.hits import Hit

__all__ = ["Verdict", "verdict"]


@dataclass(frozen=True, slots=True)
class Verdict:
    """The checked reply: `answer` is what the reader sees, `citations` what it cites (none when refused)."""

    report: CitationReport
    answer: str
    refused: bool
    reason: str | None  # why a reply was withheld (None when the model refused or it was kept)
    asks_back: bool

    @property
    def citations(self) -> list[int]:
        return [] if self.refused else self.report.citations


def verdict(raw: str, hits: Sequence[Hit], question: str, *, follow_up: bool) -> Verdict:
    """The reply `raw` checked against `hits` ([1]..[n]), for `question` (a `follow_up` may ask back)."""
    report = check_citations(raw, hits)
    refused = is_refusal(raw)
    asks_back = follow_up and not refused and not report.citations and is_asking_back(raw)
    reason = None if refused or asks_back else withheld_reason(report)
    refused = refused or reason is not None
    if refused:
        answer = refusal_sentence(question_language(question))
    elif asks_back:
        answer = raw.strip()
    else:
        answer = repair_answer(raw, report, mark_unverified=True)
    return Verdict(report, answer, refused, reason, asks_back)
