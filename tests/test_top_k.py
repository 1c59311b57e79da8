"""CITEDOCS_TOP_K is how many results every front end gives when the caller names no number: the CLI (in
process and through a running server), MCP's search tools and HTTP's /search and /ask."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
from mcp.client import Client

from citedocs.api import create_app
from citedocs.llm.client import LLMClient
from citedocs.llm.llama import free_port
from citedocs.mcp import build_server
from citedocs.service import Citedocs
from citedocs.settings import Settings
from fakes.live_server import live_process
from fakes.openai_server import FakeOpenAI, Reply

TOP_K = 3


def library(tmp_path: Path) -> Citedocs:
    docs = tmp_path / "docs"
    docs.mkdir()
    topics = ["gateway", "billing", "archive", "mailer", "scheduler", "ledger", "uploader", "indexer"]
    for i, topic in enumerate(topics):  # each says something the others do not (repeats are left out)
        text = f"# The {topic}\n\nThe {topic} logs rotate nightly; {topic} keeps {i + 2} old {topic} files.\n"
        (docs / f"{topic}.md").write_text(text, encoding="utf-8")
    app = Citedocs(Settings(db=str(tmp_path / "index.sqlite3"), embedder="none", top_k=TOP_K))
    app.add_folder(docs)
    app.index()
    return app


def test_the_cli_in_process_and_through_a_server(tmp_path: Path) -> None:
    library(tmp_path).close()
    env = {
        **os.environ,
        "CITEDOCS_DB": str(tmp_path / "index.sqlite3"),
        "CITEDOCS_EMBEDDER": "none",
        "CITEDOCS_TOP_K": str(TOP_K),
        "CITEDOCS_WATCH": "false",
    }

    def hits(*extra: str) -> int:
        proc = subprocess.run(
            [sys.executable, "-m", "citedocs", "search", "rotate logs", "--json", *extra],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=True,
        )
        return len(json.loads(proc.stdout)["hits"])

    assert hits() == TOP_K and hits("-k", "5") == 5
    port = free_port()
    command = [sys.executable, "-m", "citedocs", "serve", "--port", str(port)]
    with live_process(
        command, {**env, "CITEDOCS_TOP_K": "7"}, tmp_path / "serve.log", f"http://127.0.0.1:{port}"
    ):
        assert hits() == TOP_K  # the server answers, with this command's k (not its own 7)


def test_mcp_and_http(tmp_path: Path) -> None:
    app = library(tmp_path)
    try:

        async def mcp() -> None:
            async with Client(build_server(app)) as client:
                found = (await client.call_tool("search", {"query": "rotate logs"})).structured_content
                assert found is not None and len(found["hits"]) == TOP_K

        anyio.run(mcp)
        with FakeOpenAI(default=Reply(tokens=["Nightly [1]."])) as fake:
            api = create_app(app.settings, app, LLMClient(fake.base_url, "fake"))

            async def http() -> tuple[httpx.Response, httpx.Response]:
                transport = httpx.ASGITransport(app=api)
                async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
                    searched = await client.post("/search", json={"query": "rotate logs"})
                    asked = await client.post("/ask?stream=false", json={"question": "How do logs rotate?"})
                    return searched, asked

            searched, asked = asyncio.run(http())
        assert len(searched.json()["hits"]) == TOP_K
        assert len(asked.json()["data"]["sources"]) == TOP_K, asked.text
    finally:
        app.close()
