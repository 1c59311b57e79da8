"""Read-only tool calls `citedocs mcp` answers before the SDK is imported must be the SDK's replies, byte for byte.

The oracle is the SDK server itself (`snapshot.sdk_wire`) on the same index; a real `citedocs mcp` process run
with `-X importtime` says whether the SDK was imported, so a test knows which path answered.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from citedocs.mcp.early_calls import plain_arguments
from citedocs.mcp.handshake import recorded_tool_schema, recorded_versions
from citedocs.mcp.snapshot import sdk_wire
from citedocs.service import Citedocs
from citedocs.settings import Settings

pytestmark = pytest.mark.skipif(
    not recorded_versions(), reason="handshake.json is out of date: every call goes to the SDK"
)

HOSTILE = (
    "# Rotation :smile: [bold]loud[/bold] <script>x</script>\n\nRotate the logs weekly \x1b[2J with "
    "logrotate; keep 4 weeks \u202eevil\u2066. 日本語のログもローテートする。\n\n## Size\n\nRotate the logs by "
    "size: 100 MB.\n"
)


def initialize(protocol: str = "2025-06-18") -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": protocol,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def call(request_id: int, name: str, arguments: Any, **params: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, **params},
    }


def cancel(request_id: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Two folders, one with terminal controls, bidi overrides, Japanese and markup, indexed by the real CLI."""
    home = tmp_path_factory.mktemp("early-calls")
    ops, notes = home / "ops", home / "notes"
    ops.mkdir()
    notes.mkdir()
    (ops / "logs.md").write_text(HOSTILE, encoding="utf-8")
    (notes / "rotation.txt").write_text(
        "Rotate logs before a backup; logs rotate nightly.\n", encoding="utf-8"
    )
    for folder in (ops, notes):
        subprocess.run(
            [sys.executable, "-m", "citedocs", "add", str(folder)],
            env=process_env(home),
            check=True,
            capture_output=True,
            timeout=300,
        )
    yield home


def process_env(home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "CITEDOCS_DB": str(home / "index.sqlite3"),
        "CITEDOCS_EMBEDDER": "none",
        "CITEDOCS_WATCH": "false",
        "CITEDOCS_ENV_FILE": "",
        "CITEDOCS_CONFIG": str(home / "none.toml"),
        "CITEDOCS_LLM_MODELS_DIR": str(home / "models"),
    }


def by_id(wire: bytes) -> dict[Any, bytes]:
    return {json.loads(line).get("id"): line for line in wire.splitlines() if line.strip()}


def served(home: Path, messages: list[dict[str, Any]]) -> tuple[dict[Any, bytes], bool]:
    """A real `citedocs mcp` process's replies by id, and whether it imported the MCP SDK."""
    replies, imported = traced(home, messages)
    return replies, b"mcp" in imported


def traced(home: Path, messages: list[dict[str, Any]]) -> tuple[dict[Any, bytes], set[bytes]]:
    """A real `citedocs mcp` process's replies by id, and every module it imported (`-X importtime`)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "citedocs", "mcp"],
        input=b"".join(json.dumps(m).encode() + b"\n" for m in messages),
        env=process_env(home),
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    imported = {
        line.rsplit(b"|", 1)[-1].strip() for line in done.stderr.splitlines() if b"import time:" in line
    }
    return by_id(done.stdout), imported


# What a first search must not wait for (docs/performance.md, "Seventh session"): the indexer with the parsers
# and the chunker, SudachiPy for an English query, the embedding runtime, pydantic-settings, the MCP SDK.
NOT_FOR_A_SEARCH = (
    b"citedocs.parsers",
    b"citedocs.chunker",
    b"citedocs.index.folders",
    b"sudachipy",
    b"onnxruntime",
    b"pydantic_settings",
    b"mcp",
)


def test_a_first_search_loads_only_what_searching_needs(index: Path) -> None:
    messages = [initialize(), INITIALIZED, call(2, "search", {"query": "backup nightly"})]  # an English file
    replies, imported = traced(index, messages)
    reply = json.loads(replies[2])
    assert reply["result"]["isError"] is False and "rotation.txt" in replies[2].decode()
    assert b"citedocs.search.engine" in imported  # the trace is there
    assert [m for m in NOT_FOR_A_SEARCH if m in imported] == []


def oracle(home: Path, messages: list[dict[str, Any]]) -> dict[Any, bytes]:
    """The SDK server's replies by id for the same messages on the same index."""
    app = Citedocs(
        Settings(
            db=str(home / "index.sqlite3"), embedder="none", watch=False, llm_models_dir=str(home / "models")
        )
    )
    try:
        return by_id(sdk_wire(app, messages))
    finally:
        app.close()


def calls_answered_early(home: Path) -> list[dict[str, Any]]:
    ops = str(home / "ops")
    return [
        call(10, "search", {"query": "rotate the logs"}),
        call(
            11,
            "search",
            {"query": "rotate logs", "top_k": 2, "folder": ops, "file_type": "md", "mode": "keyword"},
        ),
        call(12, "search", {"query": "zebra nothing matches"}),
        call(13, "search", {"query": "\x1b[31m ログ <b>bold</b> \u202e [red]x[/red]"}),
        call(14, "search", {"query": "rotate", "folder": "/not/registered"}),  # a library error
        call(15, "search", {"query": "rotate", "folder": "a\x00b"}),  # refused before the library
        cancel(10),  # already answered: nothing to do on either path
        call(16, "read_file", {"path": str(home / "ops" / "logs.md"), "start_line": 1, "end_line": 3}),
        call(17, "read_file", {"path": "/etc/passwd"}),  # outside every folder
        call(18, "list_folders", {}),
        call(19, "index_status", {}),
        call(20, "search", {"query": "ローテート", "top_k": 50}, _meta={"progressToken": 7}),
    ]


@pytest.mark.slow
@pytest.mark.parametrize("protocol", sorted(recorded_versions()))
def test_early_calls_are_the_sdks_replies_byte_for_byte(index: Path, protocol: str) -> None:
    messages = [initialize(protocol), INITIALIZED, *calls_answered_early(index)]
    replies, sdk_imported = served(index, messages)
    # The SDK runs calls side by side, so there the cancellation stops call 10; the early loop answers each
    # call before it reads the next line, so for it call 10 is done (both are allowed: it raced its reply).
    expected = oracle(index, [m for m in messages if m.get("method") != "notifications/cancelled"])
    assert not sdk_imported, "every call here is the early loop's to answer"
    calls = [m["id"] for m in messages if m.get("method") == "tools/call"]
    assert sorted(replies) == [1, *calls]
    for request_id in calls:
        assert replies[request_id] == expected[request_id], request_id
    errors = {i for i in calls if json.loads(replies[i])["result"]["isError"]}
    assert errors == {14, 15, 17}
    hostile = json.loads(replies[10])["result"]["structuredContent"]["hits"]
    assert any(
        "\x1b[2J" in hit["text"] and "日本語" in hit["text"] and "\u202e" in hit["text"] for hit in hostile
    )


ODD_CALLS = [
    call(10, "search", {"query": "rotate", "top_k": 0}),  # out of range: the SDK's argument error
    call(11, "search", {"query": "rotate", "top_k": "2"}),  # a string the SDK's lax validation turns into 2
    call(12, "search", {"query": "rotate", "folder": "null"}),  # the SDK reads "null" as JSON: no folder
    call(13, "search", {"query": "rotate", "top_k": True}),
    call(14, "search", {"query": "rotate", "colour": "red"}),
    call(15, "search", {}),
    call(16, "search", {"query": "rotate"}, task={"ttl": 1}),
    call(17, "docs_home", {}),
    call(19, "search", {"query": "rotate \ud800"}),  # a lone surrogate: the SDK refuses the line itself
    call(20, "search", {"query": "rotate", "top_k": float("nan")}),  # NaN is not JSON to the SDK's parser
    call(18, "search", {"query": "rotate the logs", "top_k": 3}),
]


@pytest.mark.slow
def test_calls_the_early_loop_cannot_vouch_for_go_to_the_sdk(index: Path) -> None:
    for odd in ODD_CALLS[:-1]:
        messages = [initialize(), INITIALIZED, call(9, "search", {"query": "rotate"}), odd, ODD_CALLS[-1]]
        replies, sdk_imported = served(index, messages)
        assert sdk_imported, odd
        expected = oracle(index, messages)
        assert replies.keys() == expected.keys(), odd
        for request_id in (9, odd["id"], 18):
            assert replies.get(request_id) == expected.get(request_id), odd


@pytest.mark.slow
def test_a_session_that_searches_first_then_needs_the_sdk_goes_on(index: Path) -> None:
    search = {"query": "rotate the logs", "top_k": 3}
    messages = [
        initialize(),
        INITIALIZED,
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        call(3, "search", search),  # early
        cancel(3),
        {"jsonrpc": "2.0", "id": 4, "method": "ping"},
        call(5, "list_doc_sources", {}),  # only the SDK serves it: the hand-over
        call(6, "search", search),  # the SDK's answer to the same call
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}},
        call(7, "read_file", {"path": str(index / "notes" / "rotation.txt")}),
    ]
    replies, sdk_imported = served(index, messages)
    assert sdk_imported and sorted(replies) == [1, 2, 3, 4, 5, 6, 7]
    assert replies[3].replace(b'"id":3,', b'"id":6,') == replies[6]
    assert json.loads(replies[5])["result"]["structuredContent"] == {"sources": []}
    assert json.loads(replies[1])["result"]["protocolVersion"] == "2025-06-18"
    assert "Rotate logs before a backup" in json.loads(replies[7])["result"]["structuredContent"]["text"]


@pytest.mark.slow
def test_end_of_input_right_after_a_call_answers_it_and_ends_without_the_sdk(index: Path) -> None:
    replies, sdk_imported = served(index, [initialize(), INITIALIZED, call(2, "search", {"query": "rotate"})])
    assert not sdk_imported and sorted(replies) == [1, 2]
    assert json.loads(replies[2])["result"]["isError"] is False


@pytest.mark.slow
def test_a_call_before_initialized_is_the_sdks_to_refuse(index: Path) -> None:
    messages = [
        initialize(),
        call(2, "search", {"query": "rotate"}),
        INITIALIZED,
        call(3, "list_folders", {}),
    ]
    replies, sdk_imported = served(index, messages)
    assert sdk_imported
    assert {k: json.loads(v) for k, v in replies.items() if k != 1} == {
        k: json.loads(v) for k, v in oracle(index, messages).items() if k != 1
    }


def test_only_arguments_the_sdk_takes_unchanged_are_plain() -> None:
    schema = recorded_tool_schema("2025-06-18", "search")
    assert schema is not None
    plain = [
        {"query": "x"},
        {"query": "null"},  # a plain str argument is never read as JSON
        {"query": "x", "top_k": 1, "folder": None, "file_type": "md", "mode": "hybrid"},
        {"query": "x", "top_k": 50, "folder": "notes", "mode": None},
    ]
    odd = [
        {},
        {"query": 3},
        {"query": "x", "top_k": 51},
        {"query": "x", "top_k": 2.0},
        {"query": "x", "top_k": False},
        {"query": "x", "mode": "fuzzy"},
        {"query": "x", "folder": "[1]"},
        {"query": "x", "folder": "{}"},
        {"query": "x", "extra": 1},
    ]
    assert all(plain_arguments(a, schema) for a in plain)
    assert not any(plain_arguments(a, schema) for a in odd)


@pytest.mark.slow
def test_sigterm_while_the_early_loop_answers_calls_ends_the_process_cleanly(index: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "citedocs", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=process_env(index),
    )
    assert proc.stdin is not None and proc.stdout is not None
    calls = [call(10 + n, "search", {"query": f"rotate the logs {n}"}) for n in range(2000)]
    lines = b"".join(json.dumps(m).encode() + b"\n" for m in [initialize(), INITIALIZED, *calls])
    threading.Thread(target=_write_quietly, args=(proc.stdin, lines), daemon=True).start()
    assert json.loads(proc.stdout.readline())["id"] == 1
    assert json.loads(proc.stdout.readline())["id"] == 10
    drained = threading.Thread(target=proc.stdout.read, daemon=True)  # keep it busy answering, not writing
    drained.start()
    time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)  # calls are being answered: it lands in one (or between two) of them
    assert proc.wait(timeout=60) == 0
    drained.join(timeout=60)
    assert proc.stderr is not None
    err = proc.stderr.read()
    assert b"Traceback" not in err and b"failed" not in err, err.decode()[-2000:]


def _write_quietly(pipe: Any, data: bytes) -> None:
    with contextlib.suppress(BrokenPipeError):
        pipe.write(data)
        pipe.flush()


def _threads_at_start(home: Path, **env: str) -> int:
    """The fewest threads of a real `citedocs mcp` once it has answered `initialize` (numpy is loaded by then),
    over three starts: a thread that comes and goes (the background work starts 1 s in) is not counted."""
    counts = []
    for _ in range(3):
        proc = subprocess.Popen(
            [sys.executable, "-m", "citedocs", "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**process_env(home), **env},
        )
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps(initialize()).encode() + b"\n")
            proc.stdin.flush()
            assert json.loads(proc.stdout.readline())["id"] == 1
            counts.append(len(os.listdir(f"/proc/{proc.pid}/task")))
        finally:
            proc.kill()
            proc.wait(10)
    return min(counts)


def _numpy_uses_openblas() -> bool:
    import numpy  # noqa: F401  (loads its BLAS)
    from threadpoolctl import threadpool_info

    return any(info.get("internal_api") == "openblas" for info in threadpool_info())


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc (Linux)")
@pytest.mark.skipif(
    not _numpy_uses_openblas(), reason="numpy's BLAS here is not OpenBLAS, whose threads it counts"
)
def test_the_command_runs_numpy_on_one_blas_thread_unless_the_user_chose(index: Path) -> None:
    """citedocs/blas.py: set before numpy loads, so OpenBLAS starts no worker thread (each spun ~0.1 s of CPU);
    a number the user gave is theirs (OpenBLAS starts one worker fewer than that, at most one fewer than cores)."""
    clean = {name: "" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    ours = _threads_at_start(index, **clean)
    theirs = _threads_at_start(index, **{**clean, "OPENBLAS_NUM_THREADS": "2"})
    assert theirs - ours == min(2, len(os.sched_getaffinity(0))) - 1
