"""Two `citedocs serve` processes on one PostgreSQL behave as one service: the same search answers, a folder
added through one replica's MCP is searchable through the other, and each keeps its own /stats and
concurrency limit. Both answer through a pool of two OpenAI-compatible endpoints."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.client import Client

from citedocs.llm.llama import free_port
from fakes.live_server import live_process
from fakes.openai_server import FakeOpenAI, Reply

QUERIES = ["nightly backups rotate", "certificates renew early", "daemon port", "zeppelin"]


@contextlib.contextmanager
def serve(env: dict[str, str], log: Path) -> Iterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with live_process(
        [sys.executable, "-m", "citedocs", "serve", "--port", str(port)], env, log, url, timeout=90
    ):
        yield url


def hits(url: str, query: str) -> list[tuple[str, str, float]]:
    response = httpx.post(f"{url}/search", json={"query": query, "k": 5}, timeout=30)
    assert response.status_code == 200, response.text
    return [(h["path"], h["heading"], h["score"]) for h in response.json()["hits"]]


def stats(url: str) -> dict[str, Any]:
    data: dict[str, Any] = httpx.get(f"{url}/stats", timeout=10).json()
    return data


@pytest.mark.slow
def test_two_replicas_on_one_postgres_answer_as_one_service(pg_url: str, tmp_path: Path) -> None:
    docs, more = tmp_path / "docs", tmp_path / "more"
    docs.mkdir()
    more.mkdir()
    (docs / "runbook.md").write_text("# Backups\n\nNightly backups rotate after fourteen days.\n")
    (docs / "tls.md").write_text("# Certificates\n\nCertificates renew thirty days early.\n")
    (docs / "net.md").write_text("# Network\n\nThe daemon listens on port 7420.\n")
    (more / "airships.md").write_text("# Airships\n\nThe zeppelin mooring mast is on the roof.\n")
    env = {
        **os.environ,
        "CITEDOCS_DB": pg_url,
        "CITEDOCS_EMBEDDER": "none",
        "CITEDOCS_INDEX_ON_START": "false",
        "CITEDOCS_RELEVANCE_THRESHOLD": "0",
        "CITEDOCS_MAX_CONCURRENT": "3",
        "CITEDOCS_CONFIG": str(tmp_path / "none.toml"),
    }
    added = subprocess.run(
        [sys.executable, "-m", "citedocs", "add", str(docs)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert added.returncode == 0, added.stderr
    reply = Reply(tokens=["Backups rotate after fourteen days [1]."])
    with FakeOpenAI(default=reply) as llm_1, FakeOpenAI(default=reply) as llm_2:
        env["CITEDOCS_LLM_BASE_URL"] = f"{llm_1.base_url},{llm_2.base_url}"
        with serve(env, tmp_path / "r1.log") as r1, serve(env, tmp_path / "r2.log") as r2:
            for query in QUERIES[:3]:
                first = hits(r1, query)
                assert first and first == hits(r2, query), query
            assert hits(r2, "zeppelin") == []

            for _ in range(2):
                answer = httpx.post(
                    f"{r1}/ask?stream=false", json={"question": "When do backups rotate?"}, timeout=60
                )
                assert answer.status_code == 200, answer.text
            assert stats(r1)["answers_since_start"] == 2 and stats(r2)["answers_since_start"] == 0
            assert stats(r1)["max_concurrent"] == stats(r2)["max_concurrent"] == 3  # per replica
            assert len(llm_1.requests) + len(llm_2.requests) == 2
            health = httpx.get(f"{r2}/healthz", timeout=10).json()
            assert health["status"] == "ok" and len(health["model"]["endpoints"]) == 2

            async def add_through_mcp() -> None:
                async with Client(f"{r1}/mcp") as client:
                    result = await client.call_tool("add_folder", {"path": str(more)})
                    assert not result.is_error, result.content
                    for _ in range(100):
                        status = (await client.call_tool("index_status", {})).structured_content or {}
                        if not status.get("indexing", {}).get("active", True):
                            break
                        await anyio.sleep(0.2)

            anyio.run(add_through_mcp)
            deadline = time.monotonic() + 30
            while not hits(r2, "zeppelin") and time.monotonic() < deadline:
                time.sleep(0.2)
            assert hits(r2, "zeppelin")[0][0].endswith("airships.md")
            assert hits(r1, "zeppelin") == hits(r2, "zeppelin")
