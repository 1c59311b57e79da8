"""Whether answers can run is one verdict: `status`, `model list` and MCP's tool list agree on it and on the one
step that makes answers run; and `model install` puts a prebuilt llama.cpp server in place (no compiler) that
answers through the same supervisor as a built one.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import sys
import zipfile
from pathlib import Path
from typing import Any

import anyio
import pytest

from citedocs.llm.install import install, prebuilt_supported
from citedocs.service import Citedocs
from citedocs.settings import Settings
from conftest import REPO
from fakes.package_index import FakeIndex
from test_model_install import Tiny, cli, fake_llama, models_root
from test_model_serve import QUESTION
from test_warm_model import started

TESTS = Path(__file__).resolve().parent

no_llama_on_path = pytest.mark.skipif(
    shutil.which("llama-server") is not None, reason="a llama-server on PATH would answer"
)


def mcp_tools(env: dict[str, str], db: str) -> set[str]:
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "citedocs", "mcp", "--db", db], env=env
    )

    async def main() -> set[str]:
        with open(os.devnull, "w", encoding="utf-8") as err:
            async with Client(stdio_client(params, errlog=err)) as client:
                return {tool.name for tool in (await client.list_tools()).tools}

    return anyio.run(main)


def verdicts(env: dict[str, str], db: str) -> tuple[dict[str, Any], dict[str, Any], set[str]]:
    status = cli("status", "--json", "--db", db, env=env)
    listed = cli("model", "list", "--json", env=env)
    assert status.returncode == 0 and listed.returncode == 0, status.stderr + listed.stderr
    return json.loads(status.stdout)["llm"], json.loads(listed.stdout), mcp_tools(env, db)


@pytest.mark.slow  # five CLI and two MCP server processes
@no_llama_on_path
def test_status_model_list_and_mcp_agree_whether_answers_can_run(tmp_path: Path) -> None:
    tiny = Tiny(tmp_path, size=20_000)
    with FakeIndex(tiny.files) as index:  # the model only: a configured server stands in at install time
        install(
            Settings(
                llm_index_url=index.base_url,
                llm_catalog=str(tiny.catalog),
                llm_server=str(fake_llama(tmp_path)),
            )
        )
    env = {
        **os.environ,
        "CITEDOCS_LLM_CATALOG": str(tiny.catalog),
        "CITEDOCS_EMBEDDER": "none",
        "COLUMNS": "200",
    }
    db = str(tmp_path / "index.sqlite3")
    Citedocs(Settings(db=db, embedder="none")).close()  # status reads an index and creates none

    llm, listed, tools = verdicts(env, db)  # a model, but no llama-server to run it
    assert llm["kind"] == "installed" and llm["can_answer"] is False
    assert listed["can_answer"] is False and listed["problem"] == llm["problem"]
    assert "no llama.cpp server" in llm["problem"] and "citedocs model install" in llm["next_step"]
    assert not any(row["answers"] for row in listed["models"])
    assert "ask" not in tools and "search" in tools
    text = cli("status", "--db", db, env=env).stdout
    assert "cannot answer" in text and "citedocs model install" in text

    server = models_root() / "bin" / "llama-server"  # what `model install --build` would put there
    server.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(fake_llama(tmp_path), server)
    llm, listed, tools = verdicts(env, db)
    assert llm["can_answer"] is True and listed["can_answer"] is True and "ask" in tools
    assert llm["problem"] is None and listed["problem"] is None
    assert [row["name"] for row in listed["models"] if row["answers"]] == ["tiny"]


FAKE_XLLAMACPP = """\
# A stand-in for the xllamacpp wheel: its Server serves an OpenAI-compatible fake on the port it is given.
import json, os, sys
sys.path.insert(0, {tests!r})
from fakes.openai_server import FakeOpenAI, Reply
__version__ = "0.0-test"
class _Part:
    pass
class CommonParams:
    def __init__(self):
        self.model, self.cpuparams, self.cpuparams_batch = _Part(), _Part(), _Part()
        self.hostnames, self.port, self.n_parallel, self.n_ctx, self.no_extra_bufts = ["127.0.0.1"], 0, 1, 0, False
class Server:
    def __init__(self, params):
        with open({record!r}, "a") as f:
            f.write(json.dumps({{"pid": os.getpid(), "model": params.model.path, "port": params.port,
                                "parallel": params.n_parallel, "ctx": params.n_ctx, "host": params.hostnames}}) + "\\n")
        self._fake = FakeOpenAI(default=Reply(tokens=["Prometheus metrics are served on port 9464 [1]."]),
                                port=params.port).__enter__()
        self.listening_address = "http://127.0.0.1:%d" % params.port
"""


def fake_prebuilt_wheel(record: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("xllamacpp/__init__.py", FAKE_XLLAMACPP.format(tests=str(TESTS), record=str(record)))
        archive.writestr("xllamacpp-0.0.dist-info/METADATA", "Name: xllamacpp\nVersion: 0.0\n")
    return buffer.getvalue()


@pytest.mark.slow  # CLI processes and a model server
@no_llama_on_path
@pytest.mark.skipif(not prebuilt_supported(), reason="the prebuilt server is pinned for Linux x86_64 only")
def test_install_puts_a_prebuilt_server_in_place_that_answers(tmp_path: Path) -> None:
    record = tmp_path / "xllamacpp-starts.jsonl"
    blob = fake_prebuilt_wheel(record)
    name = "xllamacpp-0.0-cp310-abi3-manylinux2014_x86_64.whl"
    tiny = Tiny(tmp_path, size=20_000)
    catalog = json.loads(tiny.catalog.read_text(encoding="utf-8"))
    catalog["llama_server_prebuilt"] = {
        "package": "xllamacpp",
        "filename": name,
        "size": len(blob),
        "sha256": hashlib.sha256(blob).hexdigest(),
        "member": "xllamacpp",
    }
    tiny.catalog.write_text(json.dumps(catalog), encoding="utf-8")
    with FakeIndex({**tiny.files, name: ("xllamacpp", blob)}) as index:
        env = {
            **os.environ,
            "CITEDOCS_LLM_INDEX_URL": index.base_url,
            "CITEDOCS_LLM_CATALOG": str(tiny.catalog),
            "CITEDOCS_EMBEDDER": "none",
            "COLUMNS": "200",
        }
        first = cli("model", "install", env=env)
        assert first.returncode == 0, first.stderr
        assert "llama-server: prebuilt" in first.stdout and "no compiler" in first.stderr
        again = cli("model", "install", env=env)
        assert "llama-server: already installed" in again.stdout
        assert index.file_requests(name) == [None]  # downloaded once
    launcher = models_root() / "bin" / "llama-server-prebuilt"
    assert json.loads(cli("model", "list", "--json", env=env).stdout)["llama_server"] == str(launcher)

    shutil.copytree(REPO / "examples" / "sample-docs", tmp_path / "docs")
    db = str(tmp_path / "index.sqlite3")
    Citedocs(Settings(db=db, embedder="none")).close()  # status reads an index and creates none
    assert cli("add", str(tmp_path / "docs"), "--db", db, env=env).returncode == 0
    answer = cli("ask", QUESTION, "--json", "--db", db, env=env)
    assert answer.returncode == 0, answer.stderr
    assert "9464" in json.loads(answer.stdout)["answer"]
    runs = started(record)
    assert len(runs) == 1 and runs[0]["model"].endswith("tiny.gguf") and runs[0]["host"] == ["127.0.0.1"]
