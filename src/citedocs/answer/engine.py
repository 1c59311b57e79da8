"""One warm model per process: the answer engine over one `ModelHandle`.

`citedocs serve` makes one handle and gives it to the HTTP API (POST /ask, the page) and to this engine for
MCP `ask` on /mcp, so the model server starts once for all of them. A stand-alone `citedocs mcp` makes an
engine that owns its handle: the model server starts on the first question that needs it, stays up for the
process's life and is stopped on exit. `citedocs ask` (no server running) makes one for one question.

The handle's client and server belong to the event loop that started them: `ask` runs there (`ask_from_thread`
brings a worker thread's call to it, as the MCP SDK runs sync tools in worker threads).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any, Protocol

from citedocs.answer.events import AnswerEvent, collect
from citedocs.answer.retriever import LocalRetriever, Retriever, Searcher
from citedocs.answer.service import AnswerService
from citedocs.errors import LLMError
from citedocs.llm.chat import ChatModel
from citedocs.llm.model import ModelHandle
from citedocs.settings import Settings

__all__ = ["MODEL_START_TIMEOUT_S", "AnswerEngine", "Library"]

MODEL_START_TIMEOUT_S = 600.0


class Library(Searcher, Protocol):
    """What the engine needs of the `Citedocs` facade: its settings, its search and its answer service."""

    settings: Settings

    def answer_service(
        self, llm: ChatModel | None, *, retriever: Retriever | None = None, **options: Any
    ) -> AnswerService: ...


class AnswerEngine:
    """Answers through one model handle; `owns` it: stops it in `stop` (else whoever made it does)."""

    def __init__(
        self, app: Library, handle: ModelHandle | None = None, *, retriever: Retriever | None = None
    ) -> None:
        self.owns = handle is None
        self.handle = handle if handle is not None else ModelHandle.from_settings(app.settings)
        self.service: AnswerService = app.answer_service(
            self.handle.client, retriever=retriever or LocalRetriever(app, wait_for_model=True)
        )

    async def ready(self) -> None:
        """Start the model server if nobody has (once per process), wait until it answers, or raise why not."""
        handle = self.handle
        if handle.server is not None and handle.client is None:
            await handle.start(lambda _client: None)  # a no-op when `serve` already started it
            waited = 0.0
            while handle.client is None and handle.state != "failed" and waited < MODEL_START_TIMEOUT_S:
                await asyncio.sleep(0.25)
                waited += 0.25
        if handle.client is not None:
            self.service.llm = handle.client
        problem = handle.unavailable()
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
        """A cited, checked answer (sources plus every field of `done`); the model starts only when the
        relevance gate lets the question through. `history`: the earlier turns of a follow-up."""
        prepared = await self.service.prepare(question, k=k, mode=mode, history=history)
        if prepared.gate.allowed:
            await self.ready()

        async def events() -> AsyncGenerator[AnswerEvent, None]:
            async for event in self.service.generate(prepared):
                if on_event is not None:
                    on_event(event)
                yield event

        return await collect(events())

    def ask_from_thread(self, question: str, history: Sequence[Any] | None = None) -> dict[str, Any]:
        """`ask` from a worker thread of the loop the engine runs on (anyio's, as MCP sync tools run)."""
        import anyio.from_thread

        return anyio.from_thread.run(lambda: self.ask(question, history=history))

    async def stop(self) -> None:
        """Stop the model server and client if this engine made them, and flush its traces."""
        if self.owns:
            await self.handle.stop()
        self.service.tracer.shutdown()
