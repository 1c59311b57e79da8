"""The `citedocs mcp` and `citedocs ask` processes end to end: what a user piping into them sees.

`citedocs mcp` whose stdin closes at once or after a burst of requests, with the real (packaged) embedding
model loading in the background; `citedocs ask` against the scripted OpenAI server on a real socket.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fakes.openai_server import FakeOpenAI, RecordedRequest, Reply

QUESTION = "Which port does the server listen on by default?"
ANSWER = ["The server listens", " on port 8765", " by default [1]."]


def env_for(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "CITEDOCS_DB": str(tmp_path / "index.sqlite3"), **extra}


def docs_folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "install.md").write_text(
        "# Installation\n\n## Linux\n\nInstall citedocs with `pipx install citedocs`. The server listens on "
        "port 8765 by default.\n",
        encoding="utf-8",
    )
    (docs / "config.md").write_text(
        "# Configuration\n\nSet CITEDOCS_MAX_CONCURRENT to limit answers.\n", encoding="utf-8"
    )
    return docs


def rpc(n: int, method: str, **params: Any) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params})


HANDSHAKE = [
    rpc(
        1,
        "initialize",
        protocolVersion="2025-06-18",
        capabilities={},
        clientInfo={"name": "pipe", "version": "1"},
    ),
    json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
]


@pytest.mark.parametrize("command", [["-m", "citedocs", "mcp"], ["-m", "citedocs.mcp"]])
def test_mcp_with_stdin_closed_at_once_exits_0(tmp_path: Path, command: list[str]) -> None:
    proc = subprocess.run(
        [sys.executable, *command],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env_for(tmp_path),
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "terminate called" not in proc.stderr and "Traceback" not in proc.stderr


def run_mcp(tmp_path: Path, lines: list[str]) -> dict[Any, dict[str, Any]]:
    """Pipe `lines` into `citedocs mcp` (stdin closes right after them); the replies by id."""
    proc = subprocess.run(
        [sys.executable, "-m", "citedocs", "mcp"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        env=env_for(tmp_path),
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0 and "terminate called" not in proc.stderr, proc.stderr
    replies = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return {reply.get("id"): reply for reply in replies}


def test_mcp_answers_every_piped_request_before_it_exits(tmp_path: Path) -> None:
    docs = docs_folder(tmp_path)
    replies = run_mcp(
        tmp_path,
        [
            *HANDSHAKE,
            rpc(2, "tools/call", name="add_folder", arguments={"path": str(docs)}),
            rpc(3, "tools/call", name="list_folders", arguments={}),
            rpc(4, "tools/list"),
            rpc(5, "prompts/get", name="summarize"),
        ],
    )
    assert set(replies) == {1, 2, 3, 4, 5}
    assert replies[2]["result"]["isError"] is False
    assert any(tool["name"] == "read_file" for tool in replies[4]["result"]["tools"])
    error = replies[5]["error"]
    assert (
        error["code"] == -32602 and "'summarize'" in error["message"] and "prompts/list" in error["message"]
    )


def test_mcp_refuses_nul_bytes_in_paths_with_a_tool_error_that_says_what_to_do(tmp_path: Path) -> None:
    docs = docs_folder(tmp_path)
    replies = run_mcp(
        tmp_path,
        [
            *HANDSHAKE,
            rpc(2, "tools/call", name="add_folder", arguments={"path": str(docs)}),
            rpc(3, "tools/call", name="read_file", arguments={"path": f"{docs}/install.md\x00.png"}),
            rpc(4, "tools/call", name="add_folder", arguments={"path": f"{docs}\x00"}),
            rpc(5, "tools/call", name="search", arguments={"query": "port", "folder": f"{docs}\x00"}),
        ],
    )
    assert replies[2]["result"]["isError"] is False
    for n, name in ((3, "path"), (4, "path"), (5, "folder")):
        result = replies[n]["result"]
        text = result["content"][0]["text"]
        assert result["isError"] is True and name in text and "control character" in text, text
        assert "plain text" in text


@pytest.fixture
def indexed(tmp_path: Path) -> Path:
    docs = docs_folder(tmp_path)
    env = env_for(tmp_path, CITEDOCS_EMBEDDER="none")
    subprocess.run(
        [sys.executable, "-m", "citedocs", "add", str(docs)],
        env=env,
        capture_output=True,
        check=True,
        timeout=120,
    )
    return docs


def ask(tmp_path: Path, url: str, *args: str, question: str = QUESTION) -> subprocess.CompletedProcess[str]:
    env = env_for(tmp_path, CITEDOCS_EMBEDDER="none", CITEDOCS_LLM_BASE_URL=url)
    return subprocess.run(
        [sys.executable, "-m", "citedocs", "ask", question, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_ask_streams_the_answer_and_prints_the_checked_citation(tmp_path: Path, indexed: Path) -> None:
    with FakeOpenAI([Reply(tokens=ANSWER)]) as fake:
        proc = ask(tmp_path, fake.base_url)
        prompt = json.dumps(fake.requests[0].body)
    assert proc.returncode == 0, proc.stderr
    # The best sentences first, while the model reads (marked as not the answer), then the streamed tokens.
    evidence, streamed = proc.stdout.split("\n\n", 1)
    assert evidence.startswith("While the model reads") and "(not the answer)" in evidence
    assert "[1] " in evidence and "install.md:" in evidence, proc.stdout
    assert streamed.startswith("".join(ANSWER)), proc.stdout  # the streamed tokens, as they came
    assert "Answer (citations checked): The server listens on port 8765 by default [1]." in proc.stdout
    assert f"[1] {indexed / 'install.md'} · lines" in proc.stdout
    assert "listens on port 8765" in prompt


def test_ask_json_prints_one_answer_object(tmp_path: Path, indexed: Path) -> None:
    with FakeOpenAI([Reply(tokens=ANSWER)]) as fake:
        proc = ask(tmp_path, fake.base_url, "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["answer"].endswith("[1].") and data["citations"] == [1] and not data["refused"]
    assert data["sources"][0]["path"] == str(indexed / "install.md")


def test_ask_withholds_an_answer_its_sources_do_not_hold_and_says_why(tmp_path: Path, indexed: Path) -> None:
    made_up = "Clone the repository from GitHub [1]. Then run python server.py in a terminal [1]."
    with FakeOpenAI(default=Reply(tokens=[made_up])) as fake:
        proc = ask(tmp_path, fake.base_url)
        as_json = ask(tmp_path, fake.base_url, "--json")
    assert proc.returncode == 0, proc.stderr
    assert made_up in proc.stdout  # streamed as it came; the checked answer below replaces it
    assert "Answer (citations checked): I can't answer that from the indexed documents." in proc.stdout
    assert "(withheld: only 0 of 2 checked sentences" in " ".join(proc.stdout.split())
    data = json.loads(as_json.stdout)
    assert data["refused"] and not data["refused_before_model"] and data["raw_answer"] == made_up
    # no synthesis: what the sources say is the answer, quoted verbatim with its source and line
    assert "What the sources say:" in proc.stdout
    assert "[1] “The server listens on port 8765 by default.”  (install.md:5)" in proc.stdout
    assert data["quotes_label"] == "What the sources say"
    assert [(q["text"], q["n"], q["line"]) for q in data["quotes"]] == [
        ("The server listens on port 8765 by default.", 1, 5)
    ]


def test_ask_leaves_out_a_sentence_the_model_does_not_find_in_its_source_and_says_so(
    tmp_path: Path, indexed: Path
) -> None:
    """The model, asked after its answer whether the passage says each sentence (answer/model_check.py), says
    no to one: the checked answer leaves it out, the terminal says so, the JSON lists it."""
    said = "The server listens on port 8765 by default [1]. Install citedocs with pipx to get port 9999 [1]."

    def respond(request: RecordedRequest) -> Reply:
        if request.body.get("stream"):
            return Reply(tokens=[said])
        return Reply(tokens=["no" if "9999" in json.dumps(request.body) else "yes"])

    with FakeOpenAI(responder=respond) as fake:
        proc = ask(tmp_path, fake.base_url)
        as_json = ask(tmp_path, fake.base_url, "--json")
    assert proc.returncode == 0, proc.stderr
    printed = " ".join(proc.stdout.split())
    assert "Answer (citations checked): The server listens on port 8765 by default [1]." in printed
    assert "(1 sentence of the model's answer left out: asked, it did not find it in the sources)" in printed
    data = json.loads(as_json.stdout)
    assert data["left_out"] == ["Install citedocs with pipx to get port 9999 [1]."]
    assert "9999" not in data["answer"] and not data["refused"]


def test_ask_refuses_a_question_naming_what_no_passage_writes_and_says_which(
    tmp_path: Path, indexed: Path
) -> None:
    question = "Which port does the server listen on for listen_backlog?"
    with FakeOpenAI(default=Reply(tokens=ANSWER)) as fake:
        proc = ask(tmp_path, fake.base_url, question=question)
        assert fake.chat_requests == []  # refused before the model
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    assert "Answer (citations checked): I can't answer that from the indexed documents." in text
    assert "(refused before asking the model: None of the passages found mentions `listen_backlog`" in text
    assert "Check the spelling" in text


def test_ask_on_an_embedded_index_exits_cleanly_after_loading_the_model(tmp_path: Path) -> None:
    """The packaged model is loaded for the question's hybrid retrieval; the process must not exit while its
    runtime is still starting ("terminate called", exit 134, as the smoke run once found)."""
    docs = docs_folder(tmp_path)
    env = env_for(tmp_path)
    subprocess.run(
        [sys.executable, "-m", "citedocs", "add", str(docs), "--wait"],
        env=env,
        capture_output=True,
        check=True,
        timeout=300,
    )
    with FakeOpenAI([Reply(tokens=ANSWER)]) as fake:
        proc = subprocess.run(
            [sys.executable, "-m", "citedocs", "ask", QUESTION, "--json"],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
            env={**env, "CITEDOCS_LLM_BASE_URL": fake.base_url},
        )
    assert proc.returncode == 0 and "terminate called" not in proc.stderr, proc.stderr
    data = json.loads(proc.stdout)
    assert data["note"] is None and data["citations"] == [1]  # hybrid retrieval: no "keyword results" note
    assert data["evidence"] and data["evidence"][0]["n"] >= 1 and "line_start" in data["evidence"][0]


def test_mcp_server_info_carries_the_package_version(tmp_path: Path) -> None:
    from importlib import metadata

    replies = run_mcp(tmp_path, HANDSHAKE)
    info = replies[1]["result"]["serverInfo"]
    assert info["name"] == "citedocs" and info["version"] == metadata.version("citedocs")


def test_out_of_range_mcp_arguments_are_a_plain_tool_error(tmp_path: Path) -> None:
    replies = run_mcp(
        tmp_path,
        [
            *HANDSHAKE,
            rpc(2, "tools/call", name="search", arguments={"query": "port", "top_k": 999}),
            rpc(3, "tools/call", name="search", arguments={"query": "port", "top_k": 0}),
            rpc(4, "tools/call", name="search", arguments={"query": "port", "top_k": "many"}),
        ],
    )
    texts = [replies[n]["result"]["content"][0]["text"] for n in (2, 3, 4)]
    assert all(replies[n]["result"]["isError"] for n in (2, 3, 4))
    assert "top_k must be at most 50 (got 999)" in texts[0] and "top_k must be at least 1 (got 0)" in texts[1]
    assert texts[2].startswith("Invalid arguments: top_k") and "corrected arguments" in texts[2]
    assert not any("pydantic" in text or "http" in text for text in texts)


def test_ask_stops_a_model_that_repeats_itself_and_says_so(tmp_path: Path, indexed: Path) -> None:
    looping = Reply(tokens=["The server listens on port 8765 by default [1].\n"] * 400, delay_s=0.01)
    with FakeOpenAI(default=looping) as fake:
        proc = ask(tmp_path, fake.base_url)
        sent = fake.chat_requests[0].tokens_sent
    assert proc.returncode == 0, proc.stderr
    assert "Answer (citations checked): The server listens on port 8765 by default [1]." in proc.stdout
    assert "the model began repeating itself and was stopped" in " ".join(proc.stdout.split())
    assert sent < 40
