"""The MCP server as a third-party client sees it: scripted with the MCP Inspector CLI (Node)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import shared

pytestmark = pytest.mark.slow

INSPECTOR = "@modelcontextprotocol/inspector@1.0.3"


@pytest.fixture(scope="module")
def npx() -> str:
    found = shutil.which("npx")
    if found is None:
        pytest.skip("needs Node's npx to run the MCP Inspector CLI (install Node 20+)")
    try:
        probe = subprocess.run(
            [found, "-y", INSPECTOR, "--help"], capture_output=True, text=True, timeout=300
        )
    except subprocess.TimeoutExpired:
        pytest.skip(f"npx could not fetch {INSPECTOR} within 5 minutes")
    if probe.returncode != 0 or "--cli" not in probe.stdout + probe.stderr:
        pytest.skip(f"npx could not run {INSPECTOR}: {(probe.stderr or probe.stdout)[-300:]}")
    return found


def inspector(npx: str, *target: str, method: str, tool: str | None = None, **args: Any) -> dict[str, Any]:
    command = [npx, "-y", INSPECTOR, "--cli", *target, "--method", method]
    if tool:
        command += ["--tool-name", tool]
        for key, value in args.items():
            command += ["--tool-arg", f"{key}={value}"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    start = done.stdout.index("{")  # after the deprecation banner
    data: dict[str, Any] = json.loads(done.stdout[start:])
    return data


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    env = {**os.environ, "CITEDOCS_EMBEDDER": "none", "CITEDOCS_CONFIG": str(tmp_path / "none.toml")}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "citedocs.mcp",
            "--db",
            str(tmp_path / "index.sqlite3"),
            "--http",
            "--port",
            "0",
        ],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert proc.stderr is not None
    match = re.search(r"(http://127\.0\.0\.1:\d+/mcp)", proc.stderr.readline())
    try:
        assert match, "the HTTP server did not print its URL"
        yield match.group(1)
    finally:
        proc.terminate()
        proc.wait(10)


def test_inspector_lists_tools_and_reports_errors_over_stdio(npx: str, tmp_path: Path) -> None:
    server = [
        "-e",
        "CITEDOCS_EMBEDDER=none",
        "-e",
        f"CITEDOCS_CONFIG={tmp_path / 'none.toml'}",
        sys.executable,
        "-m",
        "citedocs.mcp",
        "--db",
        str(tmp_path / "index.sqlite3"),
    ]
    tools = {t["name"]: t for t in inspector(npx, *server, method="tools/list")["tools"]}
    assert {"search", "read_file", "add_folder", "search_docs", "fetch_doc"} <= set(tools)
    assert tools["search"]["annotations"]["readOnlyHint"] is True
    assert tools["remove_folder"]["annotations"]["destructiveHint"] is True
    refused = inspector(npx, *server, method="tools/call", tool="read_file", path="/etc/hosts")
    assert refused["isError"] is True and "add_folder" in refused["content"][0]["text"]


def test_inspector_scripts_a_folder_session_over_http(npx: str, http_server: str) -> None:
    docs = shared("claude-docs-qa", "docs")
    target = [http_server, "--transport", "http"]

    def tool(name: str, **args: Any) -> dict[str, Any]:
        result = inspector(npx, *target, method="tools/call", tool=name, **args)
        assert result["isError"] is False, result["content"]
        data: dict[str, Any] = result["structuredContent"]
        return data

    assert tool("add_folder", path=str(docs))["indexing"] is True
    deadline = time.monotonic() + 60
    while tool("index_status")["indexing"]["active"]:
        assert time.monotonic() < deadline
    hit = tool("search", query="rate limits", top_k=3)["hits"][0]
    assert "rate-limits" in hit["path"]
    read = tool("read_file", path=hit["path"], start_line=hit["line_start"], end_line=hit["line_end"])
    assert read["text"].split("\n")[0] == hit["text"].split("\n")[0]
    assert tool("find_similar", path=hit["path"], top_k=2)["hits"]
    assert tool("remove_folder", path=str(docs))["removed"] == str(docs.resolve())
