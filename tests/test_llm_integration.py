"""The llama.cpp supervisor, and answers from the real local model.

The supervisor tests run a stand-in `llama-server` (a Python script on a real port) and need nothing else.
The model tests need the binary and GGUF that ../shared/models/get-local-llm builds into ~/.cache/citedocs-dev
(or CITEDOCS_LLM_SERVER / CITEDOCS_LLM_GGUF); they are slow (CPU generation is ~13 tokens/s).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path

import httpx
import pytest

from citedocs.answer.retriever import LocalRetriever
from citedocs.answer.service import AnswerService
from citedocs.api import create_app
from citedocs.errors import ConfigError, LLMError
from citedocs.llm.client import LLMClient
from citedocs.llm.llama import LLAMA_REPACK, LlamaServer, repack_args
from citedocs.service import Citedocs
from citedocs.settings import Settings
from conftest import OUTER_ENV, shared

CACHE = Path.home() / ".cache" / "citedocs-dev"
OFF_TOPIC = "What is a good lasagna recipe with spinach and ricotta?"

FAKE_SERVER = """\
import http.server, sys
args = sys.argv[1:]
if "--help" in args:
    print(HELP)
    sys.exit(0)
port = int(args[args.index("--port") + 1])
if "--crash" in args:
    sys.exit(3)
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b'{"status": "ok"}'
        self.send_response(200 if self.path == "/health" else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
print("fake llama-server on", port, args, flush=True)
http.server.HTTPServer(("127.0.0.1", port), Health).serve_forever()
"""


def fake_binary(tmp_path: Path, help_text: str = "usage: llama-server [options]") -> tuple[str, Path]:
    script = tmp_path / "llama-server"
    script.write_text(f"#!{sys.executable}\nHELP = {help_text!r}\n{FAKE_SERVER}", encoding="utf-8")
    script.chmod(0o755)
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    return str(script), gguf


def test_supervisor_starts_waits_restarts_and_stops(tmp_path: Path) -> None:
    binary, gguf = fake_binary(tmp_path)

    async def go() -> None:
        server = LlamaServer(gguf, binary, parallel=3, log_path=tmp_path / "llama.log")
        await server.start()
        assert server.state == "ready" and server.base_url.startswith("http://127.0.0.1:")
        command = server.command()
        assert command[command.index("--parallel") + 1] == "3" and command[command.index("-c") + 1] == "12288"
        first_pid, port = server.pid, server.port
        assert first_pid is not None
        os.kill(first_pid, signal.SIGKILL)
        deadline = time.monotonic() + 20
        while (server.pid == first_pid or server.state != "ready") and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert server.state == "ready" and server.restarts == 1 and server.port == port
        async with httpx.AsyncClient(trust_env=False) as client:
            assert (await client.get(f"http://127.0.0.1:{port}/health")).status_code == 200
        second_pid = server.pid
        assert second_pid is not None
        await server.stop()
        assert server.state == "stopped"
        with pytest.raises(ProcessLookupError):
            os.kill(second_pid, 0)

    asyncio.run(go())
    assert "fake llama-server on" in (tmp_path / "llama.log").read_text(encoding="utf-8")


def test_supervisor_reports_a_server_that_dies_at_startup(tmp_path: Path) -> None:
    binary, gguf = fake_binary(tmp_path)
    server = LlamaServer(gguf, binary, log_path=tmp_path / "llama.log", extra_args=("--crash",))
    with pytest.raises(LLMError, match="exited during startup"):
        asyncio.run(server.start())
    assert server.state == "failed"
    with pytest.raises(ConfigError, match="does not exist"):
        asyncio.run(LlamaServer(tmp_path / "missing.gguf", binary).start())
    with pytest.raises(ConfigError, match="CITEDOCS_LLM_SERVER"):
        asyncio.run(LlamaServer(gguf, str(tmp_path / "no-such-binary")).start())


def test_repack_is_turned_off_where_it_reads_prompts_slower() -> None:
    vnni = frozenset({"avx2", "avx512f", "avx512_vnni"})
    assert repack_args("auto", vnni) == ["--no-repack"]
    assert repack_args("auto", frozenset({"avx2", "fma"})) == []
    assert repack_args("auto", frozenset()) == []
    assert repack_args("on", vnni) == []
    assert repack_args("off", frozenset({"avx2"})) == ["--no-repack"]
    assert LLAMA_REPACK == "auto"


def test_the_server_gets_no_repack_only_when_its_binary_knows_the_option(tmp_path: Path) -> None:
    """A llama-server that lists --no-repack in its --help is started with it; an older one without it is
    started without it (it would refuse an unknown option and never start)."""
    knows, older = tmp_path / "knows", tmp_path / "older"
    knows.mkdir()
    older.mkdir()
    new_binary, gguf = fake_binary(knows, "--repack, -nr, --no-repack  whether to enable weight repacking")
    old_binary, _ = fake_binary(older)

    async def started(binary: str, log: Path) -> list[str]:
        server = LlamaServer(gguf, binary, log_path=log, repack="off")
        await server.start()
        try:
            return server.command()
        finally:
            await server.stop()

    assert "--no-repack" in asyncio.run(started(new_binary, tmp_path / "new.log"))
    assert "'--no-repack'" in (tmp_path / "new.log").read_text(encoding="utf-8")
    assert "--no-repack" not in asyncio.run(started(old_binary, tmp_path / "old.log"))
    assert "fake llama-server on" in (tmp_path / "old.log").read_text(encoding="utf-8")
    on = LlamaServer(gguf, new_binary, repack="on")
    on.port = 1
    assert "--no-repack" not in on.command()


def test_api_starts_the_local_server_for_a_gguf(tmp_path: Path) -> None:
    from test_api import live_server

    binary, gguf = fake_binary(tmp_path)
    settings = Settings(
        db=str(tmp_path / "index.sqlite3"),
        embedder="none",
        llm_gguf=str(gguf),
        llm_server=binary,
        max_concurrent=2,
    )
    with live_server(create_app(settings)) as url:
        deadline = time.monotonic() + 20
        while (health := httpx.get(f"{url}/healthz").json())["model"]["state"] != "ready":
            assert time.monotonic() < deadline, health
            time.sleep(0.05)
        assert health["status"] == "ok" and health["model"]["server"]["parallel"] == 2
        pid = health["model"]["server"]["pid"]
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


# -- the real model -------------------------------------------------------------------------------------------


def real_model() -> tuple[str, Path]:
    binary = OUTER_ENV.get("CITEDOCS_LLM_SERVER") or str(CACHE / "bin" / "llama-server")
    gguf = Path(
        OUTER_ENV.get("CITEDOCS_LLM_GGUF") or CACHE / "models" / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    )
    if not Path(binary).is_file() or not os.access(binary, os.X_OK):
        pytest.skip(
            f"needs llama-server at {binary} (run ../shared/models/get-local-llm or set CITEDOCS_LLM_SERVER)"
        )
    if not gguf.is_file():
        pytest.skip(f"needs the GGUF at {gguf} (run ../shared/models/get-local-llm or set CITEDOCS_LLM_GGUF)")
    return binary, gguf


@pytest.mark.slow
@pytest.mark.model
def test_real_model_answers_with_checked_citations_and_refuses_off_topic(tmp_path: Path) -> None:
    binary, gguf = real_model()
    corpus = shared("claude-docs-qa", "docs")
    cases = [
        json.loads(line)
        for line in shared("claude-docs-qa", "cases.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    case = next(
        c for c in cases if c["id"] == "feb91b26"
    )  # "What is the IPv6 address range used by Anthropic?"
    settings = Settings(
        db=str(tmp_path / "index.sqlite3"),
        embedder="none",
        max_concurrent=1,
        llm_max_tokens=96,
        llm_read_timeout_s=120,
    )
    library = Citedocs(settings)
    library.add_folder(corpus)
    library.index()

    async def go() -> tuple[dict[str, object], dict[str, object], int]:
        server = LlamaServer(gguf, binary, parallel=1, log_path=tmp_path / "llama.log")
        await server.start()
        try:
            local = settings.model_copy(update={"llm_base_url": server.base_url})
            async with LLMClient.from_settings(local) as llm:
                service = AnswerService(LocalRetriever(library), llm, local)
                answer = await service.answer(case["question"], k=3)
                refused = await service.answer(OFF_TOPIC)
                return answer, refused, service.stats.snapshot()["answers"]
        finally:
            await server.stop()

    answer, refused, count = asyncio.run(go())
    library.close()
    numbers = {s["n"] for s in answer["sources"]}  # type: ignore[attr-defined]
    print(f"\nanswer: {answer['answer']}\ntimings: {answer['timings']}\nusage: {answer['usage']}")
    assert answer["refused"] is False and answer["citations"], answer["raw_answer"]
    assert set(answer["citations"]) <= numbers  # type: ignore[arg-type]
    assert "2607:6bc0::/48" in str(answer["answer"])
    assert refused["refused_before_model"] is True and refused["usage"] == {  # type: ignore[comparison-overlap]
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "estimated": False,
    }
    assert count == 2
