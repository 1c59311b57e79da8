"""Answering: the relevance gate, the fenced prompt, the answer service and the citation check."""

from __future__ import annotations

from citedocs.answer.citations import (
    CitationReport,
    SentenceCheck,
    check_citations,
    is_refusal,
    repair_answer,
)
from citedocs.answer.gate import DEFAULT_RELEVANCE_THRESHOLD, GateDecision, relevance_decision
from citedocs.answer.prompt import REFUSAL_SENTENCE, build_messages
from citedocs.answer.sentences import parse_citations

__all__ = [
    "DEFAULT_RELEVANCE_THRESHOLD",
    "REFUSAL_SENTENCE",
    "CitationReport",
    "GateDecision",
    "SentenceCheck",
    "build_messages",
    "check_citations",
    "is_refusal",
    "parse_citations",
    "relevance_decision",
    "repair_answer",
]
