"""Talking to language models: the OpenAI-compatible client, the endpoint pool, the llama.cpp supervisor."""

from __future__ import annotations

from citedocs.llm.client import (
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
from citedocs.llm.pool import LLMPool

__all__ = [
    "ChatModel",
    "Completion",
    "Finish",
    "LLMClient",
    "LLMEvent",
    "LLMPool",
    "LLMStreamError",
    "Prices",
    "TokenDelta",
    "Usage",
]
