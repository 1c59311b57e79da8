"""The LLM pool against scripted OpenAI-compatible servers on real sockets, and dead ports with nothing on them."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from citedocs.api import create_app
from citedocs.llm.client import LLMClient, LLMStreamError, TokenDelta
from citedocs.llm.model import ModelHandle
from citedocs.llm.pool import LLMPool
from citedocs.service import Citedocs
from citedocs.settings import Settings
from fakes.live_server import live_server
from fakes.openai_server import FakeOpenAI, Reply

KEY = "sk-pool-secret-4242"
MESSAGES = [{"role": "user", "content": "What port does the server use?"}]
HELD = Reply(tokens=["held", " open"], stall_after=1)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def dead_url() -> str:
    """A URL on a port with nothing listening."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def pool_of(urls: Sequence[str], clock: FakeClock | None = None, slots: int | list[int] = 2) -> LLMPool:
    clients = [LLMClient(url, "fake-model", KEY, max_retries=0, read_timeout_s=10.0) for url in urls]
    return LLMPool(clients, slots=slots, cooldown_s=5.0, clock=clock or FakeClock())


async def ask(pool: LLMPool) -> str:
    events = [e async for e in pool.stream_chat(MESSAGES, max_tokens=16, temperature=0.0)]
    return "".join(e.text for e in events if isinstance(e, TokenDelta))


async def ask_failing(pool: LLMPool) -> tuple[LLMStreamError, str]:
    got: list[str] = []
    with pytest.raises(LLMStreamError) as info:
        async for event in pool.stream_chat(MESSAGES, max_tokens=16, temperature=0.0):
            if isinstance(event, TokenDelta):
                got.append(event.text)
    assert KEY not in str(info.value)
    return info.value, "".join(got)


async def hold(pool: LLMPool, count: int) -> tuple[list[Any], list[dict[str, Any]]]:
    """Open `count` streams at once, read each one's first token, and report the pool while they are held."""
    streams: list[Any] = [pool.stream_chat(MESSAGES, max_tokens=16, temperature=0.0) for _ in range(count)]
    firsts = await asyncio.gather(*(anext(stream) for stream in streams))
    assert all(isinstance(event, TokenDelta) for event in firsts)
    return streams, pool.describe()


def states(pool: LLMPool) -> list[str]:
    return [row["state"] for row in pool.describe()]


@contextlib.asynccontextmanager
async def forwarder(url: str, target: FakeOpenAI) -> AsyncIterator[None]:
    """Brings a dead URL's port to life by forwarding it to `target`, as a restarted server would."""

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", target.port)
        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))

    server = await asyncio.start_server(handle, "127.0.0.1", httpx.URL(url).port)
    try:
        yield
    finally:
        server.close()


def test_streams_spread_by_free_slots_and_closing_one_closes_its_upstream() -> None:
    with FakeOpenAI(default=HELD) as a, FakeOpenAI(default=HELD) as b:
        pool = pool_of([a.base_url, b.base_url], slots=2)

        async def scenario() -> list[dict[str, Any]]:
            streams, held = await hold(pool, 4)
            for stream in streams:
                await stream.aclose()
            return held

        held = asyncio.run(scenario())
        assert len(a.chat_requests) == 2 and len(b.chat_requests) == 2
        assert [row["in_flight"] for row in held] == [2, 2]
        assert all(a.wait_finished(i).disconnected and b.wait_finished(i).disconnected for i in (0, 1))
    after = pool.describe()
    assert [row["in_flight"] for row in after] == [0, 0] and [row["served"] for row in after] == [2, 2]


def test_more_slots_take_more_requests_and_a_full_pool_still_sends_to_the_least_busy() -> None:
    with FakeOpenAI(default=HELD) as a, FakeOpenAI(default=HELD) as b:
        pool = pool_of([a.base_url, b.base_url], slots=[3, 1])

        async def scenario() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
            streams, four = await hold(pool, 4)
            more, five = await hold(pool, 1)
            for stream in streams + more:
                await stream.aclose()
            return four, five

        four, five = asyncio.run(scenario())
        assert [row["in_flight"] for row in four] == [3, 1]
        assert [row["in_flight"] for row in five] == [3, 2]
        assert len(a.chat_requests) == 3 and len(b.chat_requests) == 2


def test_a_dead_endpoint_is_set_aside_probed_after_its_cooldown_and_back_when_it_answers() -> None:
    clock = FakeClock()
    dead = dead_url()
    with FakeOpenAI(default=Reply(tokens=["from b"])) as b, FakeOpenAI(default=Reply(tokens=["from a"])) as a:
        pool = pool_of([dead, b.base_url], clock)

        async def scenario() -> None:
            assert await ask(pool) == "from b"
            down = pool.describe()[0]
            assert down["state"] == "down" and down["failures"] == 1 and down["retry_in_s"] == 5.0
            assert "Cannot reach the model server" in down["last_error"]
            assert await ask(pool) == "from b"
            clock.now += 5.0
            assert states(pool) == ["probing", "up"]
            assert await ask(pool) == "from b"
            still = pool.describe()[0]
            assert still["state"] == "down" and still["failures"] == 2 and still["retry_in_s"] == 10.0
            clock.now += 10.0
            async with forwarder(dead, a):
                assert await ask(pool) == "from a"
                back = pool.describe()[0]
                assert back["state"] == "up" and back["failures"] == 0 and back["served"] == 1

        asyncio.run(scenario())
        assert len(b.chat_requests) == 3 and len(a.chat_requests) == 1


def test_5xx_before_the_first_token_fails_over_for_streams_and_completions() -> None:
    with FakeOpenAI([Reply.error(500), Reply.error(502)]) as a, FakeOpenAI(default=Reply(tokens=["ok"])) as b:
        clock = FakeClock()
        pool = pool_of([a.base_url, b.base_url], clock)
        assert asyncio.run(ask(pool)) == "ok"
        row = pool.describe()[0]
        assert row["state"] == "down" and "HTTP 500" in row["last_error"]
        clock.now += 5.0
        completion = asyncio.run(pool.complete(MESSAGES, max_tokens=16, temperature=0.0))
        assert completion.text == "ok" and len(a.chat_requests) == 2 and len(b.chat_requests) == 2
        assert pool.describe()[0]["failures"] == 2 and "HTTP 502" in pool.describe()[0]["last_error"]


@pytest.mark.parametrize("failure", [{"abort_after": 2}, {"error_after": 2}])
def test_a_failure_after_tokens_is_raised_partial_and_not_retried(failure: dict[str, int]) -> None:
    reply = Reply(tokens=["one ", "two ", "three"], **failure)  # type: ignore[arg-type]
    with FakeOpenAI([reply]) as a, FakeOpenAI() as b:
        pool = pool_of([a.base_url, b.base_url])
        error, text = asyncio.run(ask_failing(pool))
        assert text == "one two " and error.partial
        assert len(a.chat_requests) == 1 and b.chat_requests == []
        assert pool.describe()[0]["last_error"] == error.message


def test_a_request_error_is_raised_and_does_not_mark_the_endpoint_down() -> None:
    with FakeOpenAI([Reply.error(400, "context too long")]) as a, FakeOpenAI() as b:
        pool = pool_of([a.base_url, b.base_url])
        error, _ = asyncio.run(ask_failing(pool))
        assert error.status == 400 and "context too long" in str(error)
        assert b.chat_requests == [] and states(pool) == ["up", "up"]
        assert pool.describe()[0]["failures"] == 0


def test_429_moves_the_request_on_without_marking_the_endpoint_down() -> None:
    with FakeOpenAI([Reply.error(429, retry_after="1")]) as a, FakeOpenAI(default=Reply(tokens=["ok"])) as b:
        pool = pool_of([a.base_url, b.base_url])
        assert asyncio.run(ask(pool)) == "ok"
        assert len(a.chat_requests) == 1 and states(pool) == ["up", "up"]


def test_all_endpoints_down_is_a_clear_error_with_the_next_retry() -> None:
    clock = FakeClock()
    pool = pool_of([dead_url(), dead_url()], clock)
    first, _ = asyncio.run(ask_failing(pool))
    assert first.message.startswith("All 2 model endpoints are down; the next retry is in 5 s")
    assert "Cannot reach the model server" in first.message and "CITEDOCS_LLM_BASE_URL" in first.hint
    clock.now += 2.0
    again, _ = asyncio.run(ask_failing(pool))
    assert "the next retry is in 3 s" in again.message and not again.partial
    with pytest.raises(LLMStreamError, match="All 2 model endpoints are down"):
        asyncio.run(pool.complete(MESSAGES, max_tokens=16, temperature=0.0))


def test_describe_reports_each_endpoint_without_secrets() -> None:
    clock = FakeClock()
    dead = dead_url()
    with FakeOpenAI() as a:
        secret_url = a.base_url.replace("http://", f"http://user:{KEY}@")
        pool = pool_of([secret_url, dead.replace("http://", f"http://user:{KEY}@")], clock)
        asyncio.run(ask(pool))
        asyncio.run(ask(pool))
    rows = pool.describe()
    assert rows[0] == {
        "url": a.base_url,
        "state": "up",
        "in_flight": 0,
        "slots": 2,
        "served": 2,
        "failures": 0,
        "last_error": None,
    }
    assert rows[1] == {
        "url": dead,
        "state": "down",
        "in_flight": 0,
        "slots": 2,
        "served": 0,
        "failures": 1,
        "last_error": f"Cannot reach the model server at {dead}.",
        "retry_in_s": 5.0,
    }
    assert KEY not in json.dumps(rows) and "user" not in json.dumps(rows)


def make_library(tmp_path: Path) -> Citedocs:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "install.md").write_text(
        "# Installation\n\nThe server listens on port 8765 by default.\n", encoding="utf-8"
    )
    library = Citedocs(Settings(db=str(tmp_path / "index.sqlite3"), embedder="none"))
    library.add_folder(docs)
    library.index()
    return library


def test_healthz_shows_the_endpoints_and_is_degraded_when_all_are_down(tmp_path: Path) -> None:
    library = make_library(tmp_path)
    answer = Reply(tokens=["The server listens on port 8765 by default [1]."])
    question = {"question": "Which port does the server listen on by default?"}
    with FakeOpenAI([answer, Reply.error(500)]) as fake:
        dead = dead_url()
        pool = pool_of([dead, fake.base_url])
        with (
            live_server(create_app(library.settings, library, pool)) as url,
            httpx.Client(base_url=url) as api,
        ):
            fresh = api.get("/healthz").json()
            assert fresh["status"] == "ok" and fresh["in_flight"] == 0
            assert (
                fresh["model"]["state"] == "external"
                and fresh["model"]["base_url"] == f"{dead},{fake.base_url}"
            )
            assert [(e["url"], e["state"]) for e in fresh["model"]["endpoints"]] == [
                (dead, "up"),
                (fake.base_url, "up"),
            ]

            served = api.post("/ask?stream=false", json=question, timeout=30)
            assert served.status_code == 200 and "8765" in served.json()["data"]["answer"]
            one_down = api.get("/healthz").json()
            assert one_down["status"] == "ok"
            assert [e["state"] for e in one_down["model"]["endpoints"]] == ["down", "up"]

            failed = api.post("/ask?stream=false", json=question, timeout=30)
            assert (
                failed.status_code == 502
                and "All 2 model endpoints are down" in failed.json()["error"]["message"]
            )
            all_down = api.get("/healthz").json()
            assert all_down["status"] == "degraded"
            assert [e["state"] for e in all_down["model"]["endpoints"]] == ["down", "down"]
            assert all(e["retry_in_s"] == 5.0 for e in all_down["model"]["endpoints"])

            refused = api.post("/ask?stream=false", json=question, timeout=30)
            assert refused.status_code == 503 and refused.json()["error"]["code"] == "model_unavailable"
            assert "CITEDOCS_LLM_BASE_URL" in refused.json()["error"]["hint"]
        assert len(fake.chat_requests) == 2
    asyncio.run(pool.aclose())
    library.close()


def test_model_handle_makes_a_pool_from_comma_separated_urls(tmp_path: Path) -> None:
    with FakeOpenAI([Reply.error(503)]) as a, FakeOpenAI(default=Reply(tokens=["ok"])) as b:
        settings = Settings(
            db=str(tmp_path / "i.sqlite3"),
            llm_base_url=f"{a.base_url}, {b.base_url}",
            llm_api_key=KEY,
            llm_slots=3,
        )
        handle = ModelHandle.from_settings(settings)
        assert isinstance(handle.client, LLMPool) and handle.state == "external"
        pool = handle.client
        # member clients do not retry on their own: the 503 costs one request, then the pool moves on
        assert asyncio.run(ask(pool)) == "ok" and len(a.chat_requests) == 1
        described = handle.describe()
        assert described["base_url"] == f"{a.base_url},{b.base_url}"
        assert [(e["url"], e["slots"], e["state"]) for e in described["endpoints"]] == [
            (a.base_url, 3, "down"),
            (b.base_url, 3, "up"),
        ]
        assert 0 < described["endpoints"][0]["retry_in_s"] <= 60.0
        asyncio.run(pool.aclose())
    single = ModelHandle.from_settings(
        Settings(db=str(tmp_path / "i.sqlite3"), llm_base_url="http://h:1/v1,")
    )
    assert isinstance(single.client, LLMClient) and single.client.base_url == "http://h:1/v1"
    assert "endpoints" not in single.describe()
