"""An OpenAI-compatible chat client that never passes off a broken stream as a short answer.

Streaming: token deltas, then one `Finish` with finish reason, usage and cost. Failures are bounded: a
per-chunk read timeout, retries with exponential backoff only before the first token (connect errors, 5xx,
429 honouring Retry-After), none after; a stream without a finish reason or `[DONE]`, or with an error object,
raises LLMStreamError. Closing or cancelling the iterator closes the upstream response at once, so the server
stops generating; wrap it in `contextlib.aclosing` when you may stop early. The API key is sent as a Bearer
token and never appears in a message or a log line.

Prompt cache: once a server has shown itself to be llama.cpp (its stream carries `timings`), or when told so
(`llama_cpp=True`, a server we started), requests carry `cache_prompt: true` so it reuses the longest prefix
it already read; other servers never see the field (OpenAI answers 400 to unknown fields). The server's own
`timings` (prompt tokens read, prompt tokens taken from its cache) come back on the `Finish`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping, Sequence
from typing import Any

import httpx

from citedocs.errors import LLMError, LLMStreamError
from citedocs.llm.chat import ChatModel, Completion, Finish, LLMEvent, Prices, TokenDelta, Usage
from citedocs.llm.wire import (
    error_detail,
    error_text,
    parse_usage,
    prompt_estimate,
    redact_url,
    retry_after_seconds,
    sse_data,
)
from citedocs.settings import Settings
from citedocs.text.tokens import estimate_tokens

__all__ = [
    "ChatModel",
    "Completion",
    "Finish",
    "LLMClient",
    "LLMEvent",
    "LLMStreamError",
    "Prices",
    "TokenDelta",
    "Usage",
]

RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
# A Retry-After longer than this is not waited for: the caller hears "busy" at once instead.
MAX_RETRY_AFTER_S = 30.0


class LLMClient:
    """One OpenAI-compatible endpoint (llama.cpp, Ollama, vLLM, OpenAI)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "",
        *,
        connect_timeout_s: float = 10.0,
        read_timeout_s: float = 60.0,
        request_timeout_s: float = 300.0,
        prices: Prices | None = None,
        max_retries: int = 2,
        backoff_s: float = 0.5,
        max_backoff_s: float = 8.0,
        client: httpx.AsyncClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        llama_cpp: bool = False,
    ) -> None:
        if not base_url:
            raise LLMError(
                "No LLM endpoint is configured.", "Set CITEDOCS_LLM_BASE_URL or CITEDOCS_LLM_GGUF."
            )
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.prices = prices or Prices()
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.read_timeout_s = read_timeout_s
        self._api_key = api_key
        self._stream_timeout = httpx.Timeout(
            connect=connect_timeout_s, read=read_timeout_s, write=30.0, pool=10.0
        )
        self._request_timeout = httpx.Timeout(
            connect=connect_timeout_s, read=request_timeout_s, write=30.0, pool=10.0
        )
        self._owns_client = client is None
        self._client = client or httpx.AsyncClient(transport=transport, trust_env=False)
        self._shown_url = redact_url(self.base_url)
        self.llama_cpp = llama_cpp
        self.in_flight = 0  # requests not finished yet (`drained`)
        self._idle = asyncio.Event()
        self._idle.set()

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> LLMClient:
        options: dict[str, Any] = {
            "read_timeout_s": settings.llm_read_timeout_s,
            "prices": Prices.from_settings(settings),
        }
        options.update(overrides)
        return cls(
            settings.llm_base_url, settings.llm_model, settings.llm_api_key.get_secret_value(), **options
        )

    @contextlib.contextmanager
    def _counted(self) -> Iterator[None]:
        self.in_flight += 1
        self._idle.clear()
        try:
            yield
        finally:
            self.in_flight -= 1
            if self.in_flight == 0:
                self._idle.set()

    async def drained(self) -> None:
        """Return once no request is in flight (a replaced model server is stopped after its last answer)."""
        await self._idle.wait()

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> LLMClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _headers(self, stream: bool) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "text/event-stream" if stream else "application/json",
        }
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _body(self, messages: Sequence[Mapping[str, str]], stream: bool, **options: Any) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "stream": stream,
        }
        if stream:
            body["stream_options"] = {"include_usage": True}
        if self.llama_cpp:
            body["cache_prompt"] = True
        body.update({k: v for k, v in options.items() if v is not None})
        return body

    def _clean(self, text: str) -> str:
        if self._api_key and len(self._api_key) >= 4:
            text = text.replace(self._api_key, "***")
        return text

    def _error(self, message: str, hint: str = "", **kwargs: Any) -> LLMStreamError:
        return LLMStreamError(self._clean(message), self._clean(hint), **kwargs)

    async def stream_chat(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        max_tokens: int,
        temperature: float,
        stop: Sequence[str] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> AsyncIterator[LLMEvent]:
        """Token deltas, then one Finish. Raises LLMStreamError; never yields a Finish for a broken stream."""
        with self._counted():
            stream = self._stream_chat(
                messages, max_tokens=max_tokens, temperature=temperature, stop=stop, extra=extra
            )
            async with contextlib.aclosing(stream) as events:
                async for event in events:
                    yield event

    async def _stream_chat(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        max_tokens: int,
        temperature: float,
        stop: Sequence[str] | None,
        extra: Mapping[str, Any] | None,
    ) -> AsyncGenerator[LLMEvent, None]:
        body = self._body(
            messages, True, max_tokens=max_tokens, temperature=temperature, stop=stop, **(extra or {})
        )
        url = f"{self.base_url}/chat/completions"
        attempt = 0
        while True:
            request = self._client.build_request(
                "POST", url, json=body, headers=self._headers(True), timeout=self._stream_timeout
            )
            try:
                response = await self._client.send(request, stream=True)
            except httpx.TransportError as exc:
                error = self._transport_error(exc, partial=False)
                delay = self._next_delay(attempt, retryable=not isinstance(exc, httpx.ReadTimeout))
                if delay is None:
                    raise error from None
                attempt += 1
                await asyncio.sleep(delay)
                continue
            yielded = False
            try:
                if response.status_code != 200:
                    error, delay = await self._status_failure(response, attempt)
                    if delay is None:
                        raise error
                else:
                    async for event in self._events(response, body):
                        yielded = yielded or isinstance(event, TokenDelta)
                        yield event
                    return
            except httpx.TransportError as exc:
                error = self._transport_error(exc, partial=yielded)
                retryable = not yielded and not isinstance(exc, httpx.ReadTimeout)
                delay = self._next_delay(attempt, retryable=retryable)
                if delay is None:
                    raise error from None
            except _EarlyEnd as exc:
                error = exc.error
                delay = self._next_delay(attempt, retryable=not yielded)
                if delay is None:
                    raise error from None
            finally:
                await response.aclose()
            attempt += 1
            await asyncio.sleep(delay)

    async def _events(self, response: httpx.Response, body: Mapping[str, Any]) -> AsyncIterator[LLMEvent]:
        finish_reason: str | None = None
        usage: Usage | None = None
        model = ""
        chunks = 0
        timings: dict[str, float] | None = None
        completion_text: list[str] = []
        async for data in sse_data(response):
            if data.strip() == "[DONE]":
                if finish_reason is None:
                    raise self._error(
                        "The model stream ended without a finish reason.", _RETRY_HINT, partial=chunks > 0
                    )
                final = usage or Usage(
                    prompt_estimate(body), max(chunks, estimate_tokens("".join(completion_text))), True
                )
                yield Finish(finish_reason, final, self.prices.cost(final), model, timings)
                return
            try:
                payload = json.loads(data)
            except json.JSONDecodeError:
                raise self._error(
                    "The model sent a malformed stream chunk.", _RETRY_HINT, partial=chunks > 0
                ) from None
            if not isinstance(payload, dict):
                raise self._error("The model sent a malformed stream chunk.", _RETRY_HINT, partial=chunks > 0)
            if payload.get("error"):
                raise self._error(
                    f"The model reported an error: {error_text(payload['error'])}",
                    _RETRY_HINT,
                    partial=chunks > 0,
                )
            model = payload.get("model") or model
            if isinstance(payload.get("timings"), dict):
                timings = _server_timings(payload["timings"])
                self.llama_cpp = True
            if isinstance(payload.get("usage"), dict):
                usage = _to_usage(payload["usage"]) or usage
            for choice in payload.get("choices") or []:
                delta = choice.get("delta") or {}
                text = delta.get("content")
                if text:
                    chunks += 1
                    completion_text.append(text)
                    yield TokenDelta(text)
                if choice.get("finish_reason"):
                    finish_reason = str(choice["finish_reason"])
        early = self._error(
            "The model stream ended before it finished (no [DONE]).", _RETRY_HINT, partial=chunks > 0
        )
        if chunks == 0:
            raise _EarlyEnd(early)
        raise early

    async def complete(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        max_tokens: int,
        temperature: float,
        stop: Sequence[str] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> Completion:
        """One non-streamed answer (for the judge), with the same retries and checks."""
        with self._counted():
            return await self._complete(
                messages, max_tokens=max_tokens, temperature=temperature, stop=stop, extra=extra
            )

    async def _complete(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        max_tokens: int,
        temperature: float,
        stop: Sequence[str] | None,
        extra: Mapping[str, Any] | None,
    ) -> Completion:
        body = self._body(
            messages, False, max_tokens=max_tokens, temperature=temperature, stop=stop, **(extra or {})
        )
        url = f"{self.base_url}/chat/completions"
        attempt = 0
        while True:
            try:
                response = await self._client.post(
                    url, json=body, headers=self._headers(False), timeout=self._request_timeout
                )
            except httpx.TransportError as exc:
                delay = self._next_delay(attempt, retryable=not isinstance(exc, httpx.ReadTimeout))
                if delay is None:
                    raise self._transport_error(exc, partial=False) from None
            else:
                if response.status_code == 200:
                    return self._parse_completion(response, body)
                error, delay = await self._status_failure(response, attempt)
                if delay is None:
                    raise error
            attempt += 1
            await asyncio.sleep(delay)

    def _parse_completion(self, response: httpx.Response, body: Mapping[str, Any]) -> Completion:
        try:
            payload = response.json()
            choice = payload["choices"][0]
            text = choice["message"].get("content") or ""
            reason = choice.get("finish_reason")
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise self._error("The model sent a malformed response.", _RETRY_HINT) from None
        if payload.get("error"):
            raise self._error(f"The model reported an error: {error_text(payload['error'])}", _RETRY_HINT)
        if not reason:
            raise self._error("The model response has no finish reason.", _RETRY_HINT)
        usage = _to_usage(payload.get("usage")) or Usage(prompt_estimate(body), estimate_tokens(text), True)
        return Completion(
            text, Finish(str(reason), usage, self.prices.cost(usage), payload.get("model") or "")
        )

    def _next_delay(self, attempt: int, *, retryable: bool, retry_after: float | None = None) -> float | None:
        """Seconds to wait before the next try, or None to give up."""
        if not retryable or attempt >= self.max_retries:
            return None
        if retry_after is not None:
            return retry_after if retry_after <= MAX_RETRY_AFTER_S else None
        base = min(self.max_backoff_s, self.backoff_s * 2.0**attempt)
        return base * (0.5 + random.random() / 2)

    async def _status_failure(
        self, response: httpx.Response, attempt: int
    ) -> tuple[LLMStreamError, float | None]:
        status = response.status_code
        try:
            raw = (await response.aread())[:4096].decode("utf-8", "replace")
        except httpx.HTTPError:
            raw = ""
        detail = error_detail(raw)
        retry_after = retry_after_seconds(response.headers.get("retry-after")) if status == 429 else None
        delay = self._next_delay(attempt, retryable=status in RETRY_STATUSES, retry_after=retry_after)
        hint = {
            401: "Check CITEDOCS_LLM_API_KEY.",
            403: "Check CITEDOCS_LLM_API_KEY and that it may use this model.",
            404: "Check CITEDOCS_LLM_BASE_URL (it usually ends in /v1) and CITEDOCS_LLM_MODEL.",
            429: "The model server is busy; try again shortly or lower CITEDOCS_MAX_CONCURRENT.",
        }.get(
            status,
            "Check the model server's log." if status >= 500 else "Check the request size and settings.",
        )
        tries = f" after {attempt + 1} tries" if attempt else ""
        message = f"The model server at {self._shown_url} answered HTTP {status}{tries}"
        return self._error(f"{message}: {detail}" if detail else f"{message}.", hint, status=status), delay

    def _transport_error(self, exc: httpx.TransportError, *, partial: bool) -> LLMStreamError:
        if isinstance(exc, httpx.ReadTimeout):
            return self._error(
                f"The model at {self._shown_url} sent nothing for {self.read_timeout_s:g} s.",
                "Check that the model server is not overloaded, or raise CITEDOCS_LLM_READ_TIMEOUT_S.",
                partial=partial,
            )
        if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
            return self._error(
                f"Cannot reach the model server at {self._shown_url}.",
                "Start it, or check CITEDOCS_LLM_BASE_URL.",
            )
        return self._error(
            f"The connection to the model server at {self._shown_url} broke ({type(exc).__name__}).",
            "Check the model server's log.",
            partial=partial,
        )


def _server_timings(raw: Mapping[str, Any]) -> dict[str, float]:
    return {k: v for k, v in raw.items() if isinstance(v, int | float) and not isinstance(v, bool)}


def _to_usage(raw: Any) -> Usage | None:
    counts = parse_usage(raw)
    return Usage(*counts) if counts else None


_RETRY_HINT = "Try again; if it persists, check the model server's log."


class _EarlyEnd(Exception):
    """A stream that broke before its first token: safe to retry."""

    def __init__(self, error: LLMStreamError) -> None:
        super().__init__(str(error))
        self.error = error
