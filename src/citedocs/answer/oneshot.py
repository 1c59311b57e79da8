"""Answers outside a server: one question (`citedocs ask` when no `citedocs serve` runs on the index) or a
conversation (`citedocs ask --chat`).

It starts the configured model (an external endpoint, or a llama.cpp server for a GGUF file) only when the
relevance gate lets a question through (`AnswerEngine`), keeps it for the rest of a conversation, and stops
what it started.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Sequence
from typing import Any

from citedocs.answer.conversation import Turn, keep_within_bounds, parse_history
from citedocs.answer.engine import AnswerEngine, Library
from citedocs.answer.events import AnswerEvent
from citedocs.errors import CitedocsError

__all__ = ["ask_async", "ask_blocking", "chat_blocking"]


async def ask_async(
    app: Library,
    question: str,
    *,
    k: int | None = None,
    mode: str | None = None,
    on_event: Callable[[AnswerEvent], None] | None = None,
    history: Sequence[Any] | None = None,
) -> dict[str, Any]:
    engine = AnswerEngine(app)
    try:
        return await engine.ask(question, k=k, mode=mode, on_event=on_event, history=history)
    finally:
        await engine.stop()


def ask_blocking(app: Library, question: str, **kwargs: Any) -> dict[str, Any]:
    """Run `ask_async` on a fresh event loop in its own thread, so callers inside a loop can use it too."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, ask_async(app, question, **kwargs)).result()


async def _chat(
    app: Library,
    read_question: Callable[[], str | None],
    on_answer: Callable[[dict[str, Any] | CitedocsError, int], None],
    *,
    k: int | None = None,
    mode: str | None = None,
    on_event: Callable[[AnswerEvent], None] | None = None,
) -> list[Turn]:
    engine = AnswerEngine(app)  # one model for the whole conversation
    history: list[Turn] = []
    try:
        while True:
            question = await asyncio.to_thread(read_question)
            if question is None:
                return history
            if not question.strip():
                continue
            try:
                data = await engine.ask(question, k=k, mode=mode, on_event=on_event, history=history)
            except CitedocsError as exc:
                on_answer(exc, 0)
                continue
            history += [Turn("user", question.strip()), Turn("assistant", str(data.get("answer") or ""))]
            dropped = keep_within_bounds(history)
            parse_history(history)
            on_answer(data, dropped)
    finally:
        await engine.stop()


def chat_blocking(
    app: Library,
    read_question: Callable[[], str | None],
    on_answer: Callable[[dict[str, Any] | CitedocsError, int], None],
    **kwargs: Any,
) -> list[Turn]:
    """A conversation: `read_question()` (None ends it) answered with the turns so far, each answer (or the
    error that stopped it) and the count of oldest turns dropped to stay within bounds to `on_answer`."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, _chat(app, read_question, on_answer, **kwargs)).result()
