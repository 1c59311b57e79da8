"""What MCP costs on top of a search: the `search` tool over real stdio next to the in-process library call.

    .venv/bin/python bench/bench_mcp.py [--calls 100] [--embedder none]

Indexes ../shared/data/claude-docs-qa/docs into a temporary index, then times the questions of its cases.jsonl
(cycled to --calls) three ways: `Citedocs.search` in-process, the `search` tool through the SDK's in-process
client, and the `search` tool over stdio to a `python -m citedocs.mcp` subprocess. Also times the subprocess
from spawn to its tool list (what a desktop client waits for at start).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from _env import SHARED_DATA, median, pct, print_header
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from citedocs.mcp import build_server
from citedocs.service import Citedocs
from citedocs.settings import Settings


def questions(limit: int) -> list[str]:
    lines = (SHARED_DATA / "claude-docs-qa" / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    asked = [json.loads(line)["question"] for line in lines if line.strip()]
    return [asked[i % len(asked)] for i in range(limit)]


def row(name: str, ms: list[float]) -> str:
    return f"| {name} | {len(ms)} | {median(ms):.2f} | {pct(ms, 95):.2f} | {max(ms):.2f} |"


async def timed_calls(call: Callable[[str], Awaitable[Any]], asked: list[str]) -> list[float]:
    await call(asked[0])  # warm-up
    out = []
    for question in asked:
        start = time.perf_counter()
        await call(question)
        out.append((time.perf_counter() - start) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--embedder", default="none", help="CITEDOCS_EMBEDDER for both sides (default none).")
    args = parser.parse_args()
    docs = SHARED_DATA / "claude-docs-qa" / "docs"
    if not docs.exists():
        sys.exit(f"needs {docs}")
    print_header("MCP search latency: stdio vs in-process (claude-docs-qa, 45 pages)")
    asked = questions(args.calls)
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "index.sqlite3")
        app = Citedocs(Settings(db=db, embedder=args.embedder))
        app.add_folder(docs)
        start = time.perf_counter()
        app.index()
        app.wait_for_embeddings()
        print(f"indexed in {time.perf_counter() - start:.2f} s; embedder={args.embedder}\n")

        def library(question: str) -> Any:
            return app.search(question, k=5)

        async def run_all() -> tuple[list[float], list[float], list[float], float]:
            async def lib_call(q: str) -> Any:
                return library(q)

            lib = await timed_calls(lib_call, asked)
            async with Client(build_server(app)) as local:
                inproc = await timed_calls(
                    lambda q: local.call_tool("search", {"query": q, "top_k": 5}), asked
                )
            env = {"CITEDOCS_EMBEDDER": args.embedder, "CITEDOCS_CONFIG": str(Path(tmp) / "none.toml")}
            params = StdioServerParameters(
                command=sys.executable, args=["-m", "citedocs.mcp", "--db", db], env=env, cwd=tmp
            )
            spawn = time.perf_counter()
            with open(os.devnull, "w", encoding="utf-8") as quiet:
                async with Client(stdio_client(params, errlog=quiet)) as remote:
                    await remote.list_tools()
                    ready = time.perf_counter() - spawn
                    stdio = await timed_calls(
                        lambda q: remote.call_tool("search", {"query": q, "top_k": 5}), asked
                    )
            return lib, inproc, stdio, ready

        lib, inproc, stdio, ready = anyio.run(run_all)
        app.close()
    print("| path | calls | P50 ms | P95 ms | max ms |")
    print("|---|---|---|---|---|")
    print(row("Citedocs.search (library)", lib))
    print(row("search tool, in-process MCP client", inproc))
    print(row("search tool, stdio subprocess", stdio))
    print(f"\nstdio server spawn → initialized → tools/list: {ready:.2f} s")
    print(f"MCP overhead over stdio (P50): {median(stdio) - median(lib):.2f} ms per call")


if __name__ == "__main__":
    main()
