"""Talking to language models: the OpenAI-compatible client, the endpoint pool, the llama.cpp supervisor.

Names load on first use: `citedocs mcp` reads `llm.readiness` for its handshake without importing the client
(httpx, asyncio).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'citedocs.llm' has no attribute {name!r}")
    module = importlib.import_module("citedocs.llm.pool" if name == "LLMPool" else "citedocs.llm.client")
    return getattr(module, name)
