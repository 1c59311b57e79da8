"""The LLM client against a scripted OpenAI-compatible server on a real socket: every failure mode."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator

import httpx
import pytest

from citedocs.errors import LLMError
from citedocs.llm.client import Finish, LLMClient, LLMEvent, LLMStreamError, Prices, TokenDelta
from fakes.openai_server import FakeOpenAI, Reply

KEY = "sk-very-secret-key-123"
MESSAGES = [{"role": "user", "content": "What port does the server use?"}]


def client_for(server: FakeOpenAI, **options: object) -> LLMClient:
    defaults: dict[str, object] = {"read_timeout_s": 2.0, "backoff_s": 0.01, "max_retries": 2}
    defaults.update(options)
    return LLMClient(server.base_url, "fake-model", KEY, **defaults)  # type: ignore[arg-type]


async def collect(client: LLMClient) -> tuple[str, Finish | None, list[LLMEvent]]:
    events = [event async for event in client.stream_chat(MESSAGES, max_tokens=64, temperature=0.0)]
    text = "".join(e.text for e in events if isinstance(e, TokenDelta))
    finishes = [e for e in events if isinstance(e, Finish)]
    return text, (finishes[0] if finishes else None), events


async def failing(client: LLMClient) -> tuple[LLMStreamError, str]:
    """Run a stream expected to fail; the error and the text yielded before it."""
    got: list[str] = []
    with pytest.raises(LLMStreamError) as info:
        async for event in client.stream_chat(MESSAGES, max_tokens=64, temperature=0.0):
            if isinstance(event, TokenDelta):
                got.append(event.text)
    assert KEY not in str(info.value)
    return info.value, "".join(got)


def test_stream_yields_tokens_then_finish_with_usage_and_cost() -> None:
    reply = Reply(
        tokens=["The ", "port ", "is ", "8080", "."], usage={"prompt_tokens": 1000, "completion_tokens": 5}
    )
    with FakeOpenAI([reply]) as server:
        client = client_for(server, prices=Prices(prompt_per_mtok=2.0, completion_per_mtok=10.0))
        text, finish, events = asyncio.run(collect(client))
        request = server.wait_finished(0)
    assert text == "The port is 8080."
    assert isinstance(events[-1], Finish) and finish is not None
    assert finish.finish_reason == "stop" and not finish.truncated
    assert finish.usage.prompt_tokens == 1000 and not finish.usage.estimated
    assert finish.cost_usd == pytest.approx((1000 * 2.0 + 5 * 10.0) / 1e6)
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.body["stream"] is True
    assert request.body["stream_options"] == {"include_usage": True}
    assert request.body["max_tokens"] == 64 and request.body["temperature"] == 0.0
    assert request.body["model"] == "fake-model" and request.body["messages"] == MESSAGES
    assert request.completed and not request.disconnected


def test_usage_is_estimated_when_the_server_sends_none() -> None:
    with FakeOpenAI([Reply(tokens=["a", "b", "c"], usage=None)]) as server:
        _, finish, _ = asyncio.run(collect(client_for(server)))
    assert finish is not None and finish.usage.estimated
    assert finish.usage.completion_tokens == 3 and finish.usage.prompt_tokens > 0


def test_no_authorization_header_without_a_key() -> None:
    with FakeOpenAI() as server:
        asyncio.run(collect(LLMClient(server.base_url, "m", "", backoff_s=0.01)))
        assert "authorization" not in server.wait_finished(0).headers


def test_5xx_before_the_first_token_is_retried() -> None:
    with FakeOpenAI([Reply.error(500), Reply.error(503), Reply(tokens=["ok", "."])]) as server:
        text, finish, _ = asyncio.run(collect(client_for(server)))
        assert len(server.chat_requests) == 3
    assert text == "ok." and finish is not None


def test_5xx_past_max_retries_is_an_error_without_the_key() -> None:
    with FakeOpenAI(default=Reply.error(500, message=f"boom (key was {KEY})")) as server:
        error, text = asyncio.run(failing(client_for(server, max_retries=2)))
        assert len(server.chat_requests) == 3
    assert error.status == 500 and error.stage == "generation" and not error.partial
    assert "HTTP 500" in str(error) and "boom" in str(error) and text == ""


def test_429_waits_for_retry_after() -> None:
    with FakeOpenAI([Reply.error(429, retry_after="0.3"), Reply(tokens=["fine"])]) as server:
        started = time.monotonic()
        text, _, _ = asyncio.run(collect(client_for(server, backoff_s=0.0)))
        elapsed = time.monotonic() - started
        assert len(server.chat_requests) == 2
    assert text == "fine" and elapsed >= 0.3


def test_401_is_not_retried_and_says_what_to_check() -> None:
    with FakeOpenAI([Reply.error(401, message="invalid api key")]) as server:
        error, _ = asyncio.run(failing(client_for(server)))
        assert len(server.chat_requests) == 1
    assert error.status == 401 and "CITEDOCS_LLM_API_KEY" in str(error)


def test_unreachable_server_is_retried_then_reported() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = LLMClient(f"http://user:{KEY}@127.0.0.1:{port}/v1", "m", KEY, backoff_s=0.01, max_retries=1)
    error, _ = asyncio.run(failing(client))
    assert "Cannot reach" in str(error) and f"127.0.0.1:{port}/v1" in str(error)


def test_stall_after_tokens_is_a_read_timeout_and_not_retried() -> None:
    with FakeOpenAI([Reply(tokens=["one ", "two ", "three"], stall_after=2)], stall_limit_s=10) as server:
        error, text = asyncio.run(failing(client_for(server, read_timeout_s=0.3)))
        request = server.wait_finished(0)
        assert len(server.chat_requests) == 1
    assert text == "one two " and error.partial and "sent nothing for 0.3 s" in str(error)
    assert request.disconnected


def test_stream_without_done_is_an_error_not_a_short_answer() -> None:
    with FakeOpenAI([Reply(tokens=["half", " an"], send_done=False)]) as server:
        error, text = asyncio.run(failing(client_for(server)))
        assert len(server.chat_requests) == 1
    assert text == "half an" and error.partial and "[DONE]" in str(error)


def test_stream_without_finish_reason_is_an_error() -> None:
    with FakeOpenAI([Reply(tokens=["a"], finish_reason=None)]) as server:
        error, _ = asyncio.run(failing(client_for(server)))
    assert "finish reason" in str(error)


def test_error_chunk_mid_stream_is_an_error() -> None:
    with FakeOpenAI([Reply(tokens=["a", "b", "c"], error_after=1)]) as server:
        error, text = asyncio.run(failing(client_for(server)))
        assert len(server.chat_requests) == 1
    assert text == "a" and "scripted mid-stream failure" in str(error)


def test_malformed_chunk_is_an_error() -> None:
    with FakeOpenAI([Reply(tokens=["a", "b"], malformed_after=1)]) as server:
        error, text = asyncio.run(failing(client_for(server)))
    assert text == "a" and "malformed" in str(error)


def test_dropped_connection_after_a_token_is_not_retried() -> None:
    with FakeOpenAI([Reply(tokens=["a", "b"], abort_after=1), Reply(tokens=["never"])]) as server:
        error, text = asyncio.run(failing(client_for(server)))
        assert len(server.chat_requests) == 1
    assert text == "a" and error.partial


def test_dropped_connection_before_any_token_is_retried() -> None:
    with FakeOpenAI([Reply(tokens=["a"], abort_after=0), Reply(tokens=["second", " try"])]) as server:
        text, finish, _ = asyncio.run(collect(client_for(server)))
        assert len(server.chat_requests) == 2
    assert text == "second try" and finish is not None


def test_length_finish_is_truncated() -> None:
    with FakeOpenAI([Reply(tokens=["cut"], finish_reason="length")]) as server:
        _, finish, _ = asyncio.run(collect(client_for(server)))
    assert finish is not None and finish.truncated and finish.finish_reason == "length"


def test_cancelling_the_consumer_closes_the_upstream_response() -> None:
    reply = Reply(tokens=["first"] + ["x"] * 50, delay_s=0.2)
    with FakeOpenAI([reply]) as server:

        async def consume(first_token: asyncio.Event) -> None:
            async for event in client_for(server).stream_chat(MESSAGES, max_tokens=64, temperature=0.0):
                if isinstance(event, TokenDelta):
                    first_token.set()

        async def main() -> None:
            first_token = asyncio.Event()
            task = asyncio.create_task(consume(first_token))
            await first_token.wait()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

        started = time.monotonic()
        asyncio.run(main())
        request = server.wait_finished(0, timeout=3)
        assert time.monotonic() - started < 3
    assert request.disconnected and not request.completed and request.tokens_sent < 5


def test_aclose_closes_the_upstream_response() -> None:
    with FakeOpenAI([Reply(tokens=["a"] * 50, delay_s=0.2)]) as server:

        async def main() -> None:
            stream = client_for(server).stream_chat(MESSAGES, max_tokens=64, temperature=0.0)
            assert isinstance(stream, AsyncIterator)
            async with contextlib.aclosing(stream):
                async for _ in stream:
                    break

        asyncio.run(main())
        request = server.wait_finished(0, timeout=3)
    assert request.disconnected and request.tokens_sent < 5


def test_complete_returns_the_whole_answer_after_a_retry() -> None:
    with FakeOpenAI(
        [Reply.error(502), Reply(tokens=["Yes", "."], usage={"prompt_tokens": 7, "completion_tokens": 2})]
    ) as server:
        client = client_for(server)
        result = asyncio.run(client.complete(MESSAGES, max_tokens=8, temperature=0.0))
        assert server.chat_requests[-1].body["stream"] is False
    assert result.text == "Yes." and result.finish.usage.prompt_tokens == 7 and not result.truncated


def test_complete_without_finish_reason_is_an_error() -> None:
    with (
        FakeOpenAI([Reply(tokens=["Yes"], finish_reason=None)]) as server,
        pytest.raises(LLMError, match="finish reason"),
    ):
        asyncio.run(client_for(server).complete(MESSAGES, max_tokens=8, temperature=0.0))


def test_injected_transport_is_used() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        body = (
            'data: {"choices":[{"delta":{"content":"hi"},"finish_reason":null}]}\n\n'
            'data: {"choices":[{"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
        )
        return httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})

    client = LLMClient("http://llm.invalid/v1", "m", KEY, transport=httpx.MockTransport(handler))
    text, finish, _ = asyncio.run(collect(client))
    assert (
        text == "hi" and finish is not None and str(seen[0].url) == "http://llm.invalid/v1/chat/completions"
    )


def test_missing_base_url_says_what_to_set() -> None:
    with pytest.raises(LLMError, match="CITEDOCS_LLM_BASE_URL"):
        LLMClient("", "m")


def test_fake_server_answers_models_and_health() -> None:
    with FakeOpenAI(model="tiny") as server:
        models = httpx.get(f"{server.base_url}/models", timeout=5).json()
        health = httpx.get(f"http://127.0.0.1:{server.port}/health", timeout=5).json()
    assert models["data"][0]["id"] == "tiny" and health == {"status": "ok"}
