"""Answers outside a server: one question (`citedocs ask`, the MCP `ask` tool) or a conversation
(`citedocs ask --chat`).

It starts the configured model (an external endpoint, or a llama.cpp server for a GGUF file) only when the
relevance gate lets a question through, keeps it for the rest of a conversation, and stops what it started.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Sequence
from typing import Any

from citedocs.answer.conversation import MAX_HISTORY_CHARS, MAX_TURNS, Turn, parse_history
from citedocs.answer.retriever import Retriever
from citedocs.answer.service import AnswerEvent, AnswerService, collect
from citedocs.errors import CitedocsError, LLMError
from citedocs.llm.model import ModelHandle
from citedocs.settings import Settings

__all__ = ["AskSession", "ask_async", "ask_blocking", "chat_blocking", "keep_within_bounds"]

MODEL_START_TIMEOUT_S = 600.0


class AskSession:
    """One model handle and answer service for any number of questions; `close` stops what it started."""

    def __init__(self, retriever: Retriever, settings: Settings) -> None:
        self.handle = ModelHandle.from_settings(settings)
        self.service = AnswerService(retriever, self.handle.client, settings)
        self._started = False

    async def _start_model(self) -> None:
        if self.handle.server is not None and not self._started:
            self._started = True
            ready = asyncio.Event()

            def on_ready(client: Any) -> None:
                self.service.llm = client
                ready.set()

            await self.handle.start(on_ready)
            waited = 0.0
            while (
                not ready.is_set() and self.handle.state not in ("failed",) and waited < MODEL_START_TIMEOUT_S
            ):
                await asyncio.sleep(0.25)
                waited += 0.25
        problem = self.handle.unavailable()
        if problem is not None:
            _, message, hint = problem
            raise LLMError(message, hint)

    async def ask(
        self,
        question: str,
        *,
        k: int | None = None,
        mode: str | None = None,
        on_event: Callable[[AnswerEvent], None] | None = None,
        history: Sequence[Any] | None = None,
    ) -> dict[str, Any]:
        prepared = await self.service.prepare(question, k=k, mode=mode, history=history)
        if prepared.gate.allowed:
            await self._start_model()

        async def events() -> Any:
            async for event in self.service.generate(prepared):
                if on_event is not None:
                    on_event(event)
                yield event

        return await collect(events())

    async def close(self) -> None:
        await self.handle.stop()


async def ask_async(
    retriever: Retriever,
    settings: Settings,
    question: str,
    *,
    k: int | None = None,
    mode: str | None = None,
    on_event: Callable[[AnswerEvent], None] | None = None,
    history: Sequence[Any] | None = None,
) -> dict[str, Any]:
    session = AskSession(retriever, settings)
    try:
        return await session.ask(question, k=k, mode=mode, on_event=on_event, history=history)
    finally:
        await session.close()


def ask_blocking(retriever: Retriever, settings: Settings, question: str, **kwargs: Any) -> dict[str, Any]:
    """Run `ask_async` on a fresh event loop in its own thread, so callers inside a loop can use it too."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, ask_async(retriever, settings, question, **kwargs)).result()


def keep_within_bounds(history: list[Turn]) -> int:
    """Drop the oldest question-and-answer pairs until `history` fits the bounds; returns how many turns went
    (an interactive session says so: nothing is dropped silently)."""
    dropped = 0
    while history and (len(history) > MAX_TURNS or sum(len(t.content) for t in history) > MAX_HISTORY_CHARS):
        del history[: min(2, len(history))]
        dropped += 2
    return dropped


async def _chat(
    retriever: Retriever,
    settings: Settings,
    read_question: Callable[[], str | None],
    on_answer: Callable[[dict[str, Any] | CitedocsError, int], None],
    *,
    k: int | None = None,
    mode: str | None = None,
    on_event: Callable[[AnswerEvent], None] | None = None,
) -> list[Turn]:
    session = AskSession(retriever, settings)
    history: list[Turn] = []
    try:
        while True:
            question = await asyncio.to_thread(read_question)
            if question is None:
                return history
            if not question.strip():
                continue
            try:
                data = await session.ask(question, k=k, mode=mode, on_event=on_event, history=history)
            except CitedocsError as exc:
                on_answer(exc, 0)
                continue
            history += [Turn("user", question.strip()), Turn("assistant", str(data.get("answer") or ""))]
            dropped = keep_within_bounds(history)
            parse_history(history)
            on_answer(data, dropped)
    finally:
        await session.close()


def chat_blocking(
    retriever: Retriever,
    settings: Settings,
    read_question: Callable[[], str | None],
    on_answer: Callable[[dict[str, Any] | CitedocsError, int], None],
    **kwargs: Any,
) -> list[Turn]:
    """A conversation: `read_question()` (None ends it) answered with the turns so far, each answer (or the
    error that stopped it) and the count of oldest turns dropped to stay within bounds to `on_answer`."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(
            asyncio.run, _chat(retriever, settings, read_question, on_answer, **kwargs)
        ).result()
