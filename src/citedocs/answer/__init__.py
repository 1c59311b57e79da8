"""Answering: the relevance gate, the fenced prompt, the LLM client and the citation check."""

from __future__ import annotations

from citedocs.answer.citations import (
    CitationReport,
    SentenceCheck,
    check_citations,
    is_refusal,
    repair_answer,
)
from citedocs.answer.gate import DEFAULT_RELEVANCE_THRESHOLD, GateDecision, relevance_decision
from citedocs.answer.llm import (
    ChatModel,
    Completion,
    Finish,
    LLMClient,
    LLMEvent,
    LLMStreamError,
    Prices,
    TokenDelta,
    Usage,
)
from citedocs.answer.pool import LLMPool
from citedocs.answer.prompt import REFUSAL_SENTENCE, build_messages
from citedocs.answer.sentences import parse_citations

__all__ = [
    "DEFAULT_RELEVANCE_THRESHOLD",
    "REFUSAL_SENTENCE",
    "ChatModel",
    "CitationReport",
    "Completion",
    "Finish",
    "GateDecision",
    "LLMClient",
    "LLMEvent",
    "LLMPool",
    "LLMStreamError",
    "Prices",
    "SentenceCheck",
    "TokenDelta",
    "Usage",
    "build_messages",
    "check_citations",
    "is_refusal",
    "parse_citations",
    "relevance_decision",
    "repair_answer",
]
