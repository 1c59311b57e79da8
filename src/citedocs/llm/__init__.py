"""Talking to language models: the OpenAI-compatible client, the endpoint pool, the llama.cpp supervisor.

Names load on first use: `citedocs mcp` reads `llm.readiness` for its handshake without importing the client
(httpx, asyncio).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from citedocs.llm.chat import ChatModel, Completion, Finish, LLMEvent, Prices, TokenDelta, Usage
    from citedocs.llm.client import LLMClient, LLMStreamError
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


_HOME = {
    "LLMClient": "citedocs.llm.client",
    "LLMStreamError": "citedocs.llm.client",
    "LLMPool": "citedocs.llm.pool",
}


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'citedocs.llm' has no attribute {name!r}")
    module = importlib.import_module(_HOME.get(name, "citedocs.llm.chat"))
    return getattr(module, name)
