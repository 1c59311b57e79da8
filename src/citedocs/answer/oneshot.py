"""One question, answered outside a server: for `citedocs ask` and the MCP `ask` tool.

It starts the configured model (an external endpoint, or a llama.cpp server for a GGUF file) only when the
relevance gate lets the question through, and stops what it started.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable
from typing import Any

from citedocs.answer.retriever import Retriever
from citedocs.answer.service import AnswerEvent, AnswerService, collect
from citedocs.errors import LLMError
from citedocs.llm.model import ModelHandle
from citedocs.settings import Settings

MODEL_START_TIMEOUT_S = 600.0


async def ask_async(
    retriever: Retriever,
    settings: Settings,
    question: str,
    *,
    k: int | None = None,
    mode: str | None = None,
    on_event: Callable[[AnswerEvent], None] | None = None,
) -> dict[str, Any]:
    handle = ModelHandle.from_settings(settings)
    service = AnswerService(retriever, handle.client, settings)
    prepared = await service.prepare(question, k=k, mode=mode)
    ready = asyncio.Event()
    try:
        if prepared.gate.allowed:
            if handle.server is not None:

                def on_ready(client: Any) -> None:
                    service.llm = client
                    ready.set()

                await handle.start(on_ready)
                waited = 0.0
                while (
                    not ready.is_set() and handle.state not in ("failed",) and waited < MODEL_START_TIMEOUT_S
                ):
                    await asyncio.sleep(0.25)
                    waited += 0.25
            problem = handle.unavailable()
            if problem is not None:
                _, message, hint = problem
                raise LLMError(message, hint)

        async def events() -> Any:
            async for event in service.generate(prepared):
                if on_event is not None:
                    on_event(event)
                yield event

        return await collect(events())
    finally:
        await handle.stop()


def ask_blocking(retriever: Retriever, settings: Settings, question: str, **kwargs: Any) -> dict[str, Any]:
    """Run `ask_async` on a fresh event loop in its own thread, so callers inside a loop can use it too."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, ask_async(retriever, settings, question, **kwargs)).result()
