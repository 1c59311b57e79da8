"""Text that is not valid Unicode (a lone surrogate, which JSON's \\uXXXX escapes can carry) gets one answer
everywhere: the HTTP API's JSON error envelope (422 invalid_input, naming the field) for every JSON body, and
an invalid-params reply under the request's own id over MCP stdio (which used to send no reply at all)."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from citedocs.api import create_app
from citedocs.errors import InputError
from citedocs.service import Citedocs
from citedocs.settings import Settings
from citedocs.text.invalid import invalid_text, refuse_invalid_text
from fakes.live_server import live_server

BODIES = [
    ("/search", '{"query": "heron", "source": "docs\\ud800"}', "body.source"),
    ("/search", '{"query": "he\\udfffron"}', "body.query"),
    ("/ask", '{"question": "why\\ud83d?"}', "body.question"),
    ("/sources", '{"path": "/tmp/x\\udcff"}', "body.path"),
    ("/sites", '{"name": "n", "url": "https://example.com/llms.txt\\ud800"}', "body.url"),
    ("/search", '{"query": "heron", "\\ud800": 1}', "body.\ud800"),
]


def test_the_rule_finds_a_lone_surrogate_anywhere_and_passes_pairs() -> None:
    assert invalid_text({"a": ["ok", {"b": "x\ud800"}]}) == ("a[1].b", 1)
    assert invalid_text({"a": "emoji \U0001f600 and 日本語"}) is None
    with pytest.raises(InputError, match="q holds text that is not valid Unicode"):
        refuse_invalid_text("a\udcff", "q")


def test_every_json_body_with_a_lone_surrogate_gets_the_json_error(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nThe heron wades.\n", encoding="utf-8")
    settings = Settings(db=str(tmp_path / "index.sqlite3"), embedder="none")
    library = Citedocs(settings)
    library.add_folder(docs)
    library.index()
    try:
        with live_server(create_app(settings, library)) as url:
            for route, body, field in BODIES:
                reply = httpx.post(url + route, content=body, headers={"content-type": "application/json"})
                assert reply.status_code == 422, (route, reply.text)
                error = reply.json()["error"]
                assert error["code"] == "invalid_input" and error["message"].startswith(field), error
                assert error["hint"]
            fine = httpx.post(url + "/search", json={"query": "heron \U0001f600", "mode": "keyword"})
            assert fine.status_code == 200 and fine.json()["hits"], fine.text
    finally:
        library.close()


def _read_line(proc: subprocess.Popen[bytes], timeout: float = 30) -> bytes:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if select.select([proc.stdout], [], [], 0.2)[0]:
            return proc.stdout.readline()
    raise AssertionError(f"no reply within {timeout} s")


def test_mcp_stdio_answers_a_call_with_a_lone_surrogate_under_its_id(tmp_path: Path) -> None:
    env = {**os.environ, "CITEDOCS_DB": str(tmp_path / "index.sqlite3"), "CITEDOCS_EMBEDDER": "none"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "citedocs", "mcp"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None
    try:
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        lines = [
            json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}),
            json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search","arguments":{"query":"a\\ud800"}}}',
            '{"jsonrpc":"2.0","id":"r8","method":"tools/call","params":{"name":"read_file","arguments":{"path":"/x\\udcff"}}}',
            json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}),
        ]
        proc.stdin.write("\n".join(lines).encode() + b"\n")
        proc.stdin.flush()
        replies = [json.loads(_read_line(proc)) for _ in range(4)]
    finally:
        proc.stdin.close()
        proc.terminate()
        proc.wait(30)
    by_id = {r["id"]: r for r in replies}
    for request_id, field in ((7, "params.arguments.query"), ("r8", "params.arguments.path")):
        error = by_id[request_id]["error"]
        assert error["code"] == -32602 and error["message"].startswith(field), error
    assert by_id[9]["result"]["tools"]  # the session goes on
