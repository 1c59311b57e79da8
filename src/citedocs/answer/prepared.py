"""A question after retrieval and the relevance gate, ready to generate: its passages, what the `evidence`
event shows, and the quotes a reader sees under (or in place of) the model's synthesis."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from typing import Any

from citedocs.answer.conversation import FollowUpQuery, Turn
from citedocs.answer.evidence import EvidenceWindow, ScoredSentence, score_sentences
from citedocs.answer.gate import GateDecision
from citedocs.answer.quotes import Quote, QuoteDict, choose_quotes, to_confirm
from citedocs.answer.telemetry import AnswerTrace
from citedocs.hits import Hit

__all__ = ["EVIDENCE_NOTE", "HIGHLIGHTS", "PreparedAnswer", "evidence_data", "source_dict"]

EVIDENCE_NOTE = (
    "The sentences of the sources that match the question best, shown while the model reads. "
    "This is not the answer; the answer follows, with its citations checked."
)
# Sentences in the `evidence` event.
HIGHLIGHTS = 3


def source_dict(n: int, hit: Hit) -> dict[str, Any]:
    """A passage as the `sources` event lists it; `n` is the number citations use."""
    return {
        "n": n,
        "path": hit.path,
        "source": hit.source,
        "heading": hit.heading,
        "page": hit.page,
        "line_start": hit.line_start,
        "line_end": hit.line_end,
        "chunk_id": hit.chunk_id,
        "score": hit.score,
        "text": hit.text,
    }


@dataclass(slots=True)
class PreparedAnswer:
    """A question after retrieval and the gate, ready to generate."""

    question: str
    hits: list[Hit]
    gate: GateDecision
    trace: AnswerTrace
    started: float
    retrieval_ms: float
    mode: str
    note: str | None = None
    fetch_ms: float | None = None
    # Unfetched site pages among the best candidates: fetched at the start of `generate`, which then
    # retrieves again and gates anew (until then `gate` only says "pending").
    fetch: list[str] = field(default_factory=list)
    k: int = 5
    source: str | None = None
    finished: bool = field(default=False, repr=False)
    # What the `evidence` event shows; the prompt once built.
    highlights: list[EvidenceWindow] = field(default_factory=list)
    evidence_ms: float = 0.0
    messages: list[dict[str, str]] | None = None
    # Every sentence of `hits` scored against the question (the `evidence` event and the quotes both use them).
    scored: list[list[ScoredSentence]] | None = field(default=None, repr=False)

    # The earlier turns of a follow-up (answer/conversation.py) and what retrieval searched for it.
    history: tuple[Turn, ...] = ()
    query: FollowUpQuery | None = None
    # Set by a reproducible evaluation only: the prompt's fence is drawn from it and the model samples with it.
    seed: int | None = None

    def quotes(
        self, synthesis: str, model_refused: bool = False, confirmed: Collection[str] = ()
    ) -> list[QuoteDict]:
        """The source sentences a reader sees under `synthesis` ("" when there is none: then they are the
        answer); none when the gate refused. `model_refused`: the model's answer was refused or withheld;
        `confirmed`: the quotes the model then said answer the question (`to_confirm`)."""
        for query, scored in self._queries():
            chosen = choose_quotes(
                query, self.hits, synthesis, scored=scored, model_refused=model_refused, confirmed=confirmed
            )
            if chosen:
                return [q.to_dict() for q in chosen]
        return []

    def to_confirm(self) -> tuple[str, list[Quote]]:
        """After the model refused: the query and the sentences it is asked about (answer/confirm.py)."""
        for query, scored in self._queries():
            pending = to_confirm(query, self.hits, scored=scored)
            if pending:
                return query, pending
        return self.question, []

    def _queries(self) -> Iterator[tuple[str, list[list[ScoredSentence]]]]:
        """What answers the question as asked; a follow-up too short to stand alone, with its context. None
        when the gate refused."""
        if not self.gate.allowed or not self.hits:
            return
        asked = self.searched.context
        for query in dict.fromkeys((self.question, asked)):
            scored = self.scored if query == asked and self.scored is not None else None
            yield query, scored or score_sentences(query, self.hits)

    @property
    def searched(self) -> FollowUpQuery:
        return self.query or FollowUpQuery(self.question)

    @property
    def sources(self) -> list[dict[str, Any]]:
        return [source_dict(n, hit) for n, hit in enumerate(self.hits, start=1)]


def evidence_data(prepared: PreparedAnswer) -> dict[str, Any]:
    """The `evidence` event: the best sentences (none when the gate refused), each with its citation."""
    return {
        "evidence": [w.to_dict() for w in prepared.highlights],
        "note": EVIDENCE_NOTE,
        "ms": round(prepared.evidence_ms + prepared.retrieval_ms, 1),
        "query": prepared.searched.to_dict(),
    }
