"""What a reader is shown of the model's reply: the answer as checked, or the refusal sentence.

A reply is refused when the model refused, or when its sources mostly do not hold it (`withheld_reason`);
an underspecified follow-up may be answered with a question back, which cites nothing and is no refusal.
Otherwise the answer is the reply with its citations repaired and unsupported sentences marked. Pure: the
same reply, passages and question give the same verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from citedocs.answer.citations import (
    UNVERIFIED_MARK,
    CitationReport,
    check_citations,
    is_refusal,
    repair_answer,
    withheld_reason,
)
from citedocs.answer.conversation import is_asking_back
from citedocs.answer.prompt import question_language, refusal_sentence
from citedocs.answer.sentences import parse_citations, strip_markers
from citedocs.hits import Hit

__all__ = ["Verdict", "verdict"]


@dataclass(frozen=True, slots=True)
class Verdict:
    """The checked reply: `answer` is what the reader sees, `citations` what it cites (none when refused);
    `left_out`: sentences the model's own check removed (answer/model_check.py)."""

    report: CitationReport
    answer: str
    refused: bool
    reason: str | None  # why a reply was withheld (None when the model refused or it was kept)
    asks_back: bool
    left_out: tuple[str, ...] = ()

    @property
    def citations(self) -> list[int]:
        if self.refused:
            return []
        if self.left_out:
            return [n for n in parse_citations(self.answer) if 1 <= n <= self.report.source_count]
        return self.report.citations

    def report_dict(self) -> dict[str, Any]:
        """The citation report as the `done` event carries it: each sentence of the model's words flagged
        `left_out` when the check removed it (matched by text, in order), so a page can show which."""
        data = self.report.to_dict()
        pending = [_plain(s) for s in self.left_out]
        sentences = []
        for sentence in data["sentences"]:
            text = _plain(str(sentence["sentence"]))
            gone = text in pending
            if gone:
                pending.remove(text)
            sentences.append({**sentence, "left_out": gone})
        data["sentences"] = sentences
        return data


def _plain(sentence: str) -> str:
    """A sentence without its citation marks, the unverified mark and white space (a mark's space is left
    before the full stop), to match a delivered sentence with the model's."""
    return "".join(strip_markers(sentence.replace(UNVERIFIED_MARK, "")).split())


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
