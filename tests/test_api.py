"""The HTTP API over a real socket (uvicorn in a thread) with httpx, and in-process for the input checks."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from citedocs.api import create_app
from citedocs.api.limits import MAX_BODY_BYTES
from citedocs.llm.client import LLMClient
from citedocs.service import Citedocs
from citedocs.settings import Settings
from fakes.live_server import live_server
from fakes.openai_server import FakeOpenAI, Reply

QUESTION = "Which port does the server listen on by default?"
ANSWER = ["The server listens", " on port 8765", " by default [1]."]
OFF_TOPIC = "What is a good lasagna recipe with spinach?"
SLOW = Reply(tokens=[f"word{i} " for i in range(300)], delay_s=0.05)


def make_library(tmp_path: Path, **options: Any) -> Citedocs:
    docs = tmp_path / "docs"
    docs.mkdir(exist_ok=True)
    (docs / "install.md").write_text(
        "# Installation\n\n## Linux\n\nInstall citedocs with `pipx install citedocs`. The server listens on "
        "port 8765 by default.\n",
        encoding="utf-8",
    )
    (docs / "config.md").write_text(
        "# Configuration\n\n## Limits\n\nSet CITEDOCS_MAX_CONCURRENT to limit the answers in flight.\n",
        encoding="utf-8",
    )
    settings = Settings(db=str(tmp_path / "index.sqlite3"), embedder="none", **options)
    library = Citedocs(settings)
    library.add_folder(docs)
    library.index()
    return library


@contextlib.contextmanager
def running_api(tmp_path: Path, script: list[Reply], **options: Any) -> Iterator[tuple[str, FakeOpenAI]]:
    library = make_library(tmp_path, **options)
    with FakeOpenAI(script) as fake:
        llm = LLMClient(fake.base_url, "fake", read_timeout_s=0.5, backoff_s=0.01)
        with live_server(create_app(library.settings, library, llm)) as url:
            yield url, fake
        asyncio.run(llm.aclose())
    library.close()


def read_sse(response: httpx.Response) -> list[tuple[str, dict[str, Any]]]:
    events, name, data = [], "message", []
    for line in response.iter_lines():
        if not line:
            if data:
                events.append((name, json.loads("\n".join(data))))
            name, data = "message", []
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
    return events


def test_ask_streams_sources_tokens_done_over_a_socket(tmp_path: Path) -> None:
    with running_api(tmp_path, [Reply(tokens=ANSWER)]) as (url, _), httpx.Client(base_url=url) as client:
        with client.stream("POST", "/ask", json={"question": QUESTION}) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            events = read_sse(response)
        names = [name for name, _ in events]
        assert names == ["sources", "evidence", "token", "token", "token", "done"]
        evidence = events[1][1]
        assert "not the answer" in evidence["note"] and "8765" in evidence["evidence"][0]["text"]
        done = events[-1][1]
        assert done["answer"].endswith("[1].") and done["citations"] == [1]
        assert events[0][1]["sources"][0]["path"].endswith("install.md")
        stats = client.get("/stats").json()
        assert stats["answered"] == 1 and stats["timings_ms"]["ttft_ms"]["n"] == 1


def test_ask_json_mode_returns_one_envelope(tmp_path: Path) -> None:
    with running_api(tmp_path, [Reply(tokens=ANSWER)]) as (url, _):
        response = httpx.post(f"{url}/ask?stream=false", json={"question": QUESTION, "k": 3})
    body = response.json()
    assert response.status_code == 200 and body["success"] is True and body["error"] is None
    assert body["data"]["sources"][0]["n"] == 1 and body["data"]["citations"] == [1]
    assert {
        "answer",
        "invalid_citations",
        "refused",
        "truncated",
        "usage",
        "timings",
        "cost_usd",
        "trace_id",
    } <= set(body["data"])


def test_off_topic_is_refused_with_no_model_request(tmp_path: Path) -> None:
    with running_api(tmp_path, []) as (url, fake):
        body = httpx.post(f"{url}/ask?stream=false", json={"question": OFF_TOPIC}).json()
        assert fake.chat_requests == []
    assert body["data"]["refused"] is True and body["data"]["refused_before_model"] is True


def test_upstream_failure_is_502_in_json_mode_and_an_error_event_in_sse(tmp_path: Path) -> None:
    script = [Reply.error(401, "bad key"), Reply(tokens=ANSWER, stall_after=1)]
    with running_api(tmp_path, script) as (url, _), httpx.Client(base_url=url) as client:
        failed = client.post("/ask?stream=false", json={"question": QUESTION})
        assert failed.status_code == 502
        error = failed.json()["error"]
        assert error["stage"] == "generation" and "401" in error["message"] and error["hint"]
        with client.stream("POST", "/ask", json={"question": QUESTION}) as response:
            events = read_sse(response)
        assert [n for n, _ in events] == ["sources", "evidence", "token", "error"]
        assert events[-1][1]["partial"] == ANSWER[0] and events[-1][1]["stage"] == "generation"
        assert client.get("/stats").json()["errors_by_stage"] == {"generation": 2}


def test_body_over_the_limit_is_413_by_content_length_and_by_bytes_received(tmp_path: Path) -> None:
    big = json.dumps({"question": "x" * (MAX_BODY_BYTES + 1000)}).encode()

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(big), 4096):
            yield big[start : start + 4096]

    with running_api(tmp_path, []) as (url, _), httpx.Client(base_url=url) as client:
        declared = client.post("/ask", content=big, headers={"content-type": "application/json"})
        assert declared.status_code == 413 and declared.json()["error"]["hint"]
        request = client.build_request(
            "POST", "/ask", content=chunks(), headers={"content-type": "application/json"}
        )
        assert "content-length" not in request.headers and request.headers["transfer-encoding"] == "chunked"
        streamed = client.send(request)
        assert streamed.status_code == 413 and streamed.json()["error"]["code"] == "body_too_large"
        assert (
            client.post("/search", content=big, headers={"content-type": "application/json"}).status_code
            == 413
        )


def test_too_many_answers_in_flight_get_503_with_retry_after(tmp_path: Path) -> None:
    with running_api(tmp_path, [SLOW], max_concurrent=1) as (url, fake), httpx.Client(base_url=url) as client:
        with client.stream("POST", "/ask", json={"question": QUESTION}) as first:
            lines = first.iter_lines()
            while next(lines) != "event: token":
                pass
            busy = client.post("/ask", json={"question": QUESTION})
            assert busy.status_code == 503 and int(busy.headers["retry-after"]) >= 1
            assert busy.json()["error"]["code"] == "busy" and "Retry" in busy.json()["error"]["hint"]
            assert client.get("/healthz").json()["in_flight"] == 1
        assert fake.wait_finished(0).disconnected
        deadline = time.monotonic() + 5
        while client.get("/healthz").json()["in_flight"] and time.monotonic() < deadline:
            time.sleep(0.02)
        assert client.get("/healthz").json()["in_flight"] == 0


def test_sse_client_disconnect_cancels_the_upstream_generation(tmp_path: Path) -> None:
    with running_api(tmp_path, [SLOW]) as (url, fake), httpx.Client(base_url=url) as client:
        with client.stream("POST", "/ask", json={"question": QUESTION}) as response:
            for line in response.iter_lines():
                if line == "event: token":
                    break
        request = fake.wait_finished(0)
        assert request.disconnected and request.tokens_sent < 300


def test_json_client_disconnect_cancels_the_upstream_generation(tmp_path: Path) -> None:
    with running_api(tmp_path, [SLOW]) as (url, fake):
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(
                f"{url}/ask?stream=false", json={"question": QUESTION}, timeout=httpx.Timeout(5, read=0.5)
            )
        request = fake.wait_finished(0)
        assert request.disconnected and request.tokens_sent < 300


@pytest.fixture
def asgi(tmp_path: Path) -> Iterator[tuple[FastAPI, FakeOpenAI]]:
    library = make_library(tmp_path)
    with FakeOpenAI([Reply(tokens=ANSWER)]) as fake:
        yield create_app(library.settings, library, LLMClient(fake.base_url, "fake")), fake
    library.close()


def call(app: FastAPI, method: str, path: str, **kwargs: Any) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return await client.request(method, path, **kwargs)

    return asyncio.run(go())


@pytest.mark.parametrize(
    "body",
    [
        {"question": ""},
        {"question": "   "},
        {"question": "x" * 2001},
        {"question": 5},
        {"question": QUESTION, "k": "3"},
        {"question": QUESTION, "k": 0},
        {"question": QUESTION, "k": 21},
        {"question": QUESTION, "mode": "fuzzy"},
        {"question": QUESTION, "surprise": True},
        {},
        ["not", "an", "object"],
    ],
)
def test_bad_input_is_422_with_a_hint(asgi: tuple[FastAPI, FakeOpenAI], body: Any) -> None:
    app, fake = asgi
    response = call(app, "POST", "/ask", json=body)
    assert response.status_code == 422
    error = response.json()["error"]
    assert (
        error["code"] == "invalid_input" and error["message"].startswith("Invalid request") and error["hint"]
    )
    assert fake.chat_requests == []


def test_malformed_json_is_422(asgi: tuple[FastAPI, FakeOpenAI]) -> None:
    response = call(asgi[0], "POST", "/ask", content=b"{nope", headers={"content-type": "application/json"})
    assert response.status_code == 422


def test_search_returns_hits_shaped_like_the_cli(asgi: tuple[FastAPI, FakeOpenAI]) -> None:
    response = call(asgi[0], "POST", "/search", json={"query": "port server", "k": 2})
    hits = response.json()["hits"]
    assert response.status_code == 200 and hits[0]["path"].endswith("install.md")
    assert set(hits[0]) == {
        "chunk_id",
        "path",
        "source",
        "heading",
        "page",
        "line_start",
        "line_end",
        "score",
        "snippet",
        "kind",
    }
    assert hits[0]["kind"] == "passage"
    assert call(asgi[0], "POST", "/search", json={"query": "port", "k": 51}).status_code == 422
    assert call(asgi[0], "POST", "/search", json={"query": "port", "source": "nowhere"}).status_code == 404


def test_unknown_source_and_unknown_route_say_what_to_do(asgi: tuple[FastAPI, FakeOpenAI]) -> None:
    missing = call(asgi[0], "POST", "/ask", json={"question": QUESTION, "source": "nowhere"})
    assert missing.status_code == 404 and "citedocs list" in missing.json()["error"]["hint"]
    route = call(asgi[0], "GET", "/nope")
    assert route.status_code == 404 and "POST /ask" in route.json()["error"]["hint"]


def test_healthz_page_and_static_files(asgi: tuple[FastAPI, FakeOpenAI]) -> None:
    health = call(asgi[0], "GET", "/healthz").json()
    assert health == {
        "status": "ok",
        "in_flight": 0,
        "max_concurrent": 4,
        "model": {
            "state": "external",
            "name": f"fake at {asgi[1].base_url}",
            "base_url": asgi[1].base_url,
            "model": "fake",
        },
    }
    page = call(asgi[0], "GET", "/")
    assert page.status_code == 200 and "<script" in page.text and "http" not in page.text.split("<body")[0]
    assert call(asgi[0], "GET", "/static/app.js").status_code == 200


def test_without_a_model_search_and_refusals_work_and_answers_get_503(tmp_path: Path) -> None:
    library = make_library(tmp_path)
    app = create_app(library.settings, library)
    on_topic = call(app, "POST", "/ask", json={"question": QUESTION})
    hint = on_topic.json()["error"]["hint"]
    assert (
        on_topic.status_code == 503 and "CITEDOCS_LLM_BASE_URL" in hint and "citedocs model install" in hint
    )
    refused = call(app, "POST", "/ask?stream=false", json={"question": OFF_TOPIC})
    assert refused.status_code == 200 and refused.json()["data"]["refused"] is True
    assert call(app, "GET", "/healthz").json()["model"] == {"state": "none", "name": None}
    assert call(app, "GET", "/stats").json()["model"] == {"state": "none", "name": None}
    library.close()


def test_extra_mounts_run_their_lifespan_and_skip_the_body_limit(tmp_path: Path) -> None:
    started: list[str] = []

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> Any:
        started.append("up")
        yield

    async def echo(request: Any) -> PlainTextResponse:
        return PlainTextResponse(str(len(await request.body())))

    mcp = Starlette(routes=[Route("/", echo, methods=["POST"])], lifespan=lifespan)
    library = make_library(tmp_path)
    with live_server(create_app(library.settings, library, extra_mounts={"/mcp": mcp})) as url:
        response = httpx.post(f"{url}/mcp/", content=b"x" * 20_000)
    assert started == ["up"] and response.text == "20000"
    library.close()
