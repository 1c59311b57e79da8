"""One warm model per process: however many questions arrive, and by whichever front end, a process starts
its llama.cpp server once, and stops it when it ends.

The llama-server here is a stand-in executable (an OpenAI-compatible fake on the port it is given) that
appends a line to a file each time it starts, so the tests count real process starts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from fakes.llama_server import starts as started
from fakes.llama_server import write_llama_server
from test_model_serve import QUESTION, ask_when_ready, mcp_on_sample_docs, start_serve, stop


def counting_llama(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """The environment of a process with a local GGUF configured and the counting stand-in as its server."""
    starts = tmp_path / "llama-starts.jsonl"
    server = write_llama_server(tmp_path / "bin" / "llama-server", starts)
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF" + b"\0" * 64)
    env = {
        **os.environ,
        "CITEDOCS_LLM_GGUF": str(gguf),
        "CITEDOCS_LLM_SERVER": str(server),
        "CITEDOCS_PORT": "0",
        "CITEDOCS_EMBEDDER": "none",
    }
    return env, starts


def gone(pid: int, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def text_of(result: Any) -> str:
    assert not result.is_error, result
    return " ".join(getattr(block, "text", "") for block in result.content)


@pytest.mark.slow  # an MCP server process and a stand-in model server
def test_three_asks_to_one_citedocs_mcp_start_the_model_server_once(tmp_path: Path) -> None:
    from mcp.client import Client
    from mcp.client.stdio import stdio_client

    env, starts = counting_llama(tmp_path)
    params = mcp_on_sample_docs(tmp_path, env)

    async def main() -> list[str]:
        with open(tmp_path / "mcp-stderr.txt", "w", encoding="utf-8") as err:
            async with Client(stdio_client(params, errlog=err)) as client:
                assert "ask" in {tool.name for tool in (await client.list_tools()).tools}
                assert started(starts) == []  # nothing is started before a question needs it
                return [text_of(await client.call_tool("ask", {"question": QUESTION})) for _ in range(3)]

    answers = anyio.run(main)
    assert all("9464" in answer for answer in answers), answers
    runs = started(starts)
    assert len(runs) == 1, runs  # three answers, one model server
    assert gone(runs[0]["pid"]), "the model server outlived `citedocs mcp`"


@pytest.mark.slow  # a serve process, an MCP client over HTTP and a stand-in model server
def test_five_answers_through_one_serve_over_mcp_and_http_start_the_model_server_once(tmp_path: Path) -> None:
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client

    env, starts = counting_llama(tmp_path)
    proc, url = start_serve(tmp_path, env)
    try:
        first = ask_when_ready(url, 60)["data"]  # HTTP /ask, once the model server is up
        assert "9464" in first["answer"] and first["invalid_citations"] == []

        async def main() -> list[str]:
            async with Client(streamable_http_client(url + "/mcp")) as client:
                assert "ask" in {tool.name for tool in (await client.list_tools()).tools}
                return [text_of(await client.call_tool("ask", {"question": QUESTION})) for _ in range(3)]

        answers = anyio.run(main)
        assert all("9464" in answer for answer in answers), answers
        last = ask_when_ready(url, 60)["data"]
        assert "9464" in last["answer"]
        runs = started(starts)
        assert len(runs) == 1, runs  # two HTTP answers and three MCP answers, one model server
        db = str(tmp_path / "index.sqlite3")
        cli = subprocess.run(
            [sys.executable, "-m", "citedocs", "ask", QUESTION, "--json", "--db", db],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert cli.returncode == 0, cli.stderr
        assert "9464" in json.loads(cli.stdout)["answer"]
        assert len(started(starts)) == 1  # `citedocs ask` used the running serve's model, started none
    finally:
        stop(proc)
    assert gone(runs[0]["pid"]), "the model server outlived `citedocs serve`"
