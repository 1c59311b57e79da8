"""The watcher in real processes: a `citedocs serve` keeps its folder current (HTTP /search, /stats),
`citedocs status` in another process shows it watching, a `citedocs mcp` on the same index stands by (its
`index_status` names the watcher) and takes over when the server stops."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from citedocs.llm.llama import free_port
from fakes.live_server import live_process

BOUND_S = 10.0  # debounce (100 ms) + indexing + a request, on a shared 2-core machine


def env_for(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "CITEDOCS_DB": str(tmp_path / "index.sqlite3"),
        "CITEDOCS_EMBEDDER": "none",
        "CITEDOCS_WATCH_DEBOUNCE_S": "0.1",
    }


def wait_until(check: Callable[[], bool], what: str, timeout: float = BOUND_S) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        time.sleep(0.05)


def search(url: str, query: str) -> list[str]:
    reply = httpx.post(f"{url}/search", json={"query": query, "mode": "keyword", "k": 20}, timeout=10)
    assert reply.status_code == 200, reply.text
    return sorted(Path(hit["path"]).name for hit in reply.json()["hits"])


def heron_folder(tmp_path: Path) -> tuple[Path, int, str, dict[str, str]]:
    """A folder with one note about a heron, a free port, its URL and the processes' environment."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nThe heron wades.\n", encoding="utf-8")
    port = free_port()
    return docs, port, f"http://127.0.0.1:{port}", env_for(tmp_path)


@pytest.mark.slow
def test_serve_keeps_its_folder_current_and_status_elsewhere_says_so(tmp_path: Path) -> None:
    docs, port, url, env = heron_folder(tmp_path)
    command = [sys.executable, "-m", "citedocs", "serve", "--folder", str(docs), "--port", str(port)]
    with live_process(command, env, tmp_path / "serve.log", url) as server:
        wait_until(lambda: search(url, "heron") == ["a.md"], "the start-up index")
        wait_until(lambda: httpx.get(f"{url}/stats").json()["watch"][0]["state"] == "watching", "/stats")

        (docs / "a.md").write_text("# A\n\nThe egret wades.\n", encoding="utf-8")
        (docs / "b.md").write_text("# B\n\nA bittern booms.\n", encoding="utf-8")
        wait_until(lambda: search(url, "egret") == ["a.md"] and search(url, "bittern") == ["b.md"], "edits")
        assert search(url, "heron") == []
        os.rename(docs / "b.md", docs / "c.md")
        wait_until(lambda: search(url, "bittern") == ["c.md"], "the rename")
        (docs / "a.md").unlink()
        wait_until(lambda: search(url, "egret") == [], "the deletion")

        watch = httpx.get(f"{url}/stats").json()["watch"][0]
        assert watch["here"] is True and watch["pid"] == server.pid and watch["last_change"]["paths"] >= 1

        status = subprocess.run(
            [sys.executable, "-m", "citedocs", "status", "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        (entry,) = json.loads(status.stdout)["watch"]
        assert entry["state"] == "watching" and entry["here"] is False and entry["pid"] == server.pid
        text = subprocess.run(
            [sys.executable, "-m", "citedocs", "status"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
        assert f"watch {docs}: watching (by pid {server.pid}" in " ".join(text.split())
        assert "last change" in text
    log = (tmp_path / "serve.log").read_text(encoding="utf-8")
    assert "Traceback" not in log
    after = subprocess.run(
        [sys.executable, "-m", "citedocs", "status", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    (entry,) = json.loads(after.stdout)["watch"]
    assert entry["state"] == "off" and entry["last_change"] is not None


async def call(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    data: dict[str, Any] = result.structured_content
    return data


async def until(check: Callable[[], Any], what: str, timeout: float = BOUND_S) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        await anyio.sleep(0.05)


@pytest.mark.slow
def test_mcp_stands_by_while_serve_watches_and_takes_over_when_it_stops(tmp_path: Path) -> None:
    docs, port, url, env = heron_folder(tmp_path)
    serve = [sys.executable, "-m", "citedocs", "serve", "--folder", str(docs), "--port", str(port)]
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "citedocs", "mcp"], env=env, cwd=str(tmp_path)
    )
    errlog = tmp_path / "mcp-stderr.txt"

    async def hits(client: Client, query: str) -> list[str]:
        found = await call(client, "search", query=query, mode="keyword")
        return sorted(Path(h["path"]).name for h in found["hits"])

    async def main() -> None:
        with errlog.open("w", encoding="utf-8") as err:
            async with Client(stdio_client(params, errlog=err)) as client:
                with live_process(serve, env, tmp_path / "serve.log", url) as server:
                    wait_until(lambda: search(url, "heron") == ["a.md"], "the start-up index")

                    async def owner_shown() -> bool:
                        watch = (await call(client, "index_status"))["watch"]
                        return (
                            bool(watch) and watch[0]["state"] == "watching" and watch[0]["pid"] == server.pid
                        )

                    await until(owner_shown, "index_status shows the serve process watching")
                    (docs / "a.md").write_text("# A\n\nThe avocet wades.\n", encoding="utf-8")

                    async def seen() -> bool:
                        return await hits(client, "avocet") == ["a.md"]

                    await until(seen, "the MCP process searches what serve indexed")

                # serve stopped (SIGTERM): the MCP process takes the lease and watches
                async def took_over() -> bool:
                    watch = (await call(client, "index_status"))["watch"][0]
                    return watch["state"] == "watching" and watch["here"] is True

                await until(took_over, "the MCP process takes over", 20)
                (docs / "b.md").write_text("# B\n\nA dunlin runs.\n", encoding="utf-8")

                async def indexed_by_mcp() -> bool:
                    return await hits(client, "dunlin") == ["b.md"]

                await until(indexed_by_mcp, "the MCP process indexes new changes")

    anyio.run(main)
    assert "Traceback" not in errlog.read_text(encoding="utf-8")


def test_one_shot_commands_never_watch(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nThe heron wades.\n", encoding="utf-8")
    env = env_for(tmp_path)
    for args in (["add", str(docs)], ["search", "heron", "--json"], ["status", "--json"], ["reindex"]):
        subprocess.run(
            [sys.executable, "-m", "citedocs", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
    assert not list(tmp_path.glob("index.sqlite3.watch-*.lock"))  # nobody ever asked for the watch lease
