"""What a chat model says and what any model must offer: the types shared by the client, the endpoint pool and
every caller. Kept apart from `llm.client` so that code which only handles a model's words (the answer engine,
the judge, the HTTP app) does not import httpx and the client to name them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from citedocs.settings import Settings

__all__ = ["ChatModel", "Completion", "Finish", "LLMEvent", "Prices", "TokenDelta", "Usage"]


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int
    estimated: bool = False

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True, slots=True)
class Prices:
    """USD per million tokens; zero for a local model."""

    prompt_per_mtok: float = 0.0
    completion_per_mtok: float = 0.0

    def cost(self, usage: Usage) -> float:
        return (
            usage.prompt_tokens * self.prompt_per_mtok + usage.completion_tokens * self.completion_per_mtok
        ) / 1e6

    @classmethod
    def from_settings(cls, settings: Settings) -> Prices:
        return cls(settings.llm_price_prompt_per_mtok, settings.llm_price_completion_per_mtok)


@dataclass(frozen=True, slots=True)
class TokenDelta:
    text: str


@dataclass(frozen=True, slots=True)
class Finish:
    finish_reason: str
    usage: Usage
    cost_usd: float
    model: str = ""
    # llama.cpp's `timings` (prompt_n: prompt tokens read now, cache_n: taken from its cache, *_ms); or None
    server_timings: Mapping[str, float] | None = None

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


LLMEvent = TokenDelta | Finish


@dataclass(frozen=True, slots=True)
class Completion:
    text: str
    finish: Finish = field(repr=False)

    @property
    def truncated(self) -> bool:
        return self.finish.truncated


class ChatModel(Protocol):
    """What callers need from a model: one endpoint (`LLMClient`) or several (`citedocs.llm.pool.LLMPool`)."""

    @property
    def base_url(self) -> str: ...

    @property
    def model(self) -> str: ...

    def stream_chat(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        max_tokens: int,
        temperature: float,
        stop: Sequence[str] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> AsyncIterator[LLMEvent]: ...

    async def complete(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        max_tokens: int,
        temperature: float,
        stop: Sequence[str] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> Completion: ...

    async def aclose(self) -> None: ...
