"""Several OpenAI-compatible endpoints behind the one interface answering uses (`ChatModel`).

Each endpoint has `slots` (llama.cpp's `--parallel`). The pool counts its own requests in flight and sends each
new one to the healthy endpoint with the most free slots (ties take turns); when all are full it still sends,
to the least busy one, because the API's `max_concurrent` is the gate and a queue here would only hide it.

Before the first token, a connect error, a timeout, a broken stream, 408 or 5xx marks the endpoint down for
`cooldown_s`, doubled per consecutive failure up to `max_cooldown_s`, and the same request goes to another
endpoint; a 429 only moves the request on (the server is busy, not broken); any other 4xx is the request's
fault and is raised as it is. After the first token nothing is retried: the caller already has text. When a
cooldown ends the endpoint is "probing": it takes requests again (first among equals) and its first success
marks it up. Member clients are built with `max_retries=0`, so a dead endpoint costs one try, not three with
backoff, before the request moves on.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from citedocs.errors import LLMError
from citedocs.llm.chat import Completion, LLMEvent
from citedocs.llm.client import LLMClient, LLMStreamError
from citedocs.llm.readiness import split_urls
from citedocs.llm.wire import redact_url
from citedocs.settings import Settings

__all__ = ["LLMPool", "split_urls"]

COOLDOWN_S = 5.0  # a failed endpoint's first rest, doubled per consecutive failure up to the next
MAX_COOLDOWN_S = 60.0


@dataclass(eq=False)
class _Endpoint:
    client: LLMClient
    slots: int
    in_flight: int = 0
    served: int = 0
    failures: int = 0
    down_until: float = 0.0
    last_error: str = ""

    def state(self, now: float) -> str:
        if not self.failures:
            return "up"
        return "down" if now < self.down_until else "probing"


class LLMPool:
    """Spreads chat requests over several `LLMClient`s by free slots and fails over between them."""

    def __init__(
        self,
        clients: Sequence[LLMClient],
        *,
        slots: int | Sequence[int] = 4,
        cooldown_s: float = COOLDOWN_S,
        max_cooldown_s: float = MAX_COOLDOWN_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not clients:
            raise LLMError("An LLM pool needs at least one endpoint.", "Set CITEDOCS_LLM_BASE_URL.")
        counts = [slots] * len(clients) if isinstance(slots, int) else list(slots)
        if len(counts) != len(clients) or min(counts) < 1:
            raise LLMError(
                "Each pool endpoint needs a slot count of at least 1.", "Set CITEDOCS_LLM_SLOTS to 1 or more."
            )
        self._endpoints = [_Endpoint(client, n) for client, n in zip(clients, counts, strict=True)]
        self.cooldown_s = cooldown_s
        self.max_cooldown_s = max_cooldown_s
        self._clock = clock
        self._turn = 0
        self.model = clients[0].model
        self.base_url = ",".join(client.base_url for client in clients)

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> LLMPool:
        """One member client per URL in `llm_base_url`; `overrides` go to each `LLMClient.from_settings`."""
        options: dict[str, Any] = {"max_retries": 0, **overrides}
        clients = [
            LLMClient.from_settings(settings.model_copy(update={"llm_base_url": url}), **options)
            for url in split_urls(settings.llm_base_url)
        ]
        return cls(clients, slots=settings.llm_slots)

    async def aclose(self) -> None:
        for endpoint in self._endpoints:
            await endpoint.client.aclose()

    async def __aenter__(self) -> LLMPool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def stream_chat(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        max_tokens: int,
        temperature: float,
        stop: Sequence[str] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> AsyncIterator[LLMEvent]:
        """As `LLMClient.stream_chat`, on the endpoint chosen now, moving on while nothing was yielded."""
        tried: set[int] = set()
        last: LLMStreamError | None = None
        while (index := self._choose(tried)) is not None:
            tried.add(index)
            endpoint = self._endpoints[index]
            endpoint.in_flight += 1
            started = False
            try:
                stream = cast(
                    "AsyncGenerator[LLMEvent, None]",
                    endpoint.client.stream_chat(
                        messages, max_tokens=max_tokens, temperature=temperature, stop=stop, extra=extra
                    ),
                )
                async with contextlib.aclosing(stream) as events:
                    async for event in events:
                        if not started:
                            started = True
                            self._succeeded(endpoint)
                        yield event
                return
            except LLMStreamError as exc:
                if started:
                    endpoint.last_error = exc.message
                    raise
                if not self._failed(endpoint, exc):
                    raise
                last = exc
            finally:
                endpoint.in_flight -= 1
        raise self._exhausted(last)

    async def complete(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        max_tokens: int,
        temperature: float,
        stop: Sequence[str] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> Completion:
        """As `LLMClient.complete`, moving on to another endpoint after an endpoint's failure."""
        tried: set[int] = set()
        last: LLMStreamError | None = None
        while (index := self._choose(tried)) is not None:
            tried.add(index)
            endpoint = self._endpoints[index]
            endpoint.in_flight += 1
            try:
                completion = await endpoint.client.complete(
                    messages, max_tokens=max_tokens, temperature=temperature, stop=stop, extra=extra
                )
            except LLMStreamError as exc:
                if not self._failed(endpoint, exc):
                    raise
                last = exc
                continue
            finally:
                endpoint.in_flight -= 1
            self._succeeded(endpoint)
            return completion
        raise self._exhausted(last)

    def all_down_error(self) -> LLMStreamError | None:
        """The error a request gets now because every endpoint is cooling down, or None if one may take it."""
        now = self._clock()
        if any(endpoint.state(now) != "down" for endpoint in self._endpoints):
            return None
        retry_in = max(0.0, min(endpoint.down_until for endpoint in self._endpoints) - now)
        count = len(self._endpoints)
        last = max(self._endpoints, key=lambda e: e.down_until).last_error
        return LLMStreamError(
            f"All {count} model endpoints are down; the next retry is in {retry_in:.0f} s"
            + (f" (last error: {last})" if last else "."),
            "Check that the servers in CITEDOCS_LLM_BASE_URL are running and reachable; GET /healthz lists "
            "each endpoint's state and last error.",
        )

    def describe(self) -> list[dict[str, Any]]:
        """Each endpoint's state for /healthz: no API key, URLs without user info or query."""
        now = self._clock()
        rows = []
        for endpoint in self._endpoints:
            state = endpoint.state(now)
            row: dict[str, Any] = {
                "url": redact_url(endpoint.client.base_url),
                "state": state,
                "in_flight": endpoint.in_flight,
                "slots": endpoint.slots,
                "served": endpoint.served,
                "failures": endpoint.failures,
                "last_error": endpoint.last_error or None,
            }
            if state == "down":
                row["retry_in_s"] = round(endpoint.down_until - now, 1)
            rows.append(row)
        return rows

    def _choose(self, tried: set[int]) -> int | None:
        """The open endpoint with the most free slots; when all are full, the one with fewest in flight."""
        now = self._clock()
        count = len(self._endpoints)

        def rank(index: int) -> tuple[int, int, bool, int]:
            endpoint = self._endpoints[index]
            free = max(0, endpoint.slots - endpoint.in_flight)
            turn = -((index - self._turn) % count)
            return free, -endpoint.in_flight, endpoint.state(now) == "probing", turn

        open_ = [i for i, e in enumerate(self._endpoints) if i not in tried and e.state(now) != "down"]
        if not open_:
            return None
        chosen = max(open_, key=rank)
        self._turn = (chosen + 1) % count
        return chosen

    def _succeeded(self, endpoint: _Endpoint) -> None:
        endpoint.served += 1
        endpoint.failures = 0
        endpoint.down_until = 0.0

    def _failed(self, endpoint: _Endpoint, error: LLMStreamError) -> bool:
        """Record a failure before the first token; True when the request should go to another endpoint."""
        endpoint.last_error = error.message
        status = error.status
        if status == 429:
            return True
        if status is not None and status < 500 and status != 408:
            return False
        now = self._clock()
        # requests in flight when an endpoint dies all fail: one outage counts once
        if endpoint.state(now) != "down":
            endpoint.failures += 1
            backoff = self.cooldown_s * 2.0 ** (endpoint.failures - 1)
            endpoint.down_until = now + min(self.max_cooldown_s, backoff)
        return True

    def _exhausted(self, last: LLMStreamError | None) -> LLMStreamError:
        """Every endpoint was tried or is down: the all-down error, else the last endpoint's own (e.g. 429)."""
        return (
            self.all_down_error()
            or last
            or LLMStreamError(
                "No model endpoint could take the request.", "Check GET /healthz for each endpoint's state."
            )
        )
