"""One question, answered outside a server: for `citedocs ask` when no `citedocs serve` runs on the index.

It starts the configured model (an external endpoint, or a llama.cpp server for a GGUF file) only when the
relevance gate lets the question through (`AnswerEngine`), and stops what it started.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable
from typing import Any

from citedocs.answer.engine import AnswerEngine, Library
from citedocs.answer.service import AnswerEvent


async def ask_async(
    app: Library,
    question: str,
    *,
    k: int | None = None,
    mode: str | None = None,
    on_event: Callable[[AnswerEvent], None] | None = None,
) -> dict[str, Any]:
    engine = AnswerEngine(app)
    try:
        return await engine.ask(question, k=k, mode=mode, on_event=on_event)
    finally:
        await engine.stop()


def ask_blocking(app: Library, question: str, **kwargs: Any) -> dict[str, Any]:
    """Run `ask_async` on a fresh event loop in its own thread, so callers inside a loop can use it too."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, ask_async(app, question, **kwargs)).result()
