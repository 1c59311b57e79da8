"""Read-only commands (search, ask, read, status, list, sites, search-docs) never create or migrate an index, and
`citedocs status` reports the running server's embedder and model when one serves the index. Real processes."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from citedocs.llm.llama import free_port
from citedocs.store.migrate import latest_version
from fakes.live_server import live_process
from fakes.openai_server import FakeOpenAI

READ_ONLY = [
    ("search", "rotation"),
    ("ask", "How are logs rotated?"),
    ("read", "/etc/hostname"),
    ("status",),
    ("list",),
    ("sites",),
    ("search-docs", "rotation"),
]


def citedocs(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "CITEDOCS_EMBEDDER": "none", "COLUMNS": "200", **env}
    return subprocess.run(
        [sys.executable, "-m", "citedocs", *args],
        capture_output=True,
        text=True,
        env=full,
        timeout=120,
        check=False,
    )


def one_file_index(tmp_path: Path) -> Path:
    """An index of one markdown file about log rotation, made by `citedocs add`."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Logs\n\nLogs rotate nightly.\n", encoding="utf-8")
    db = tmp_path / "index.sqlite3"
    assert citedocs("add", str(docs), "--db", str(db)).returncode == 0
    return db


@pytest.mark.parametrize("args", READ_ONLY, ids=lambda args: args[0])
def test_a_read_only_command_on_a_missing_index_creates_nothing_and_names_the_command_that_does(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    db = tmp_path / "nonexistent" / "dir" / "x.db"
    proc = citedocs(*args, "--db", str(db))
    message = " ".join(proc.stderr.split())  # the console folds long lines
    assert proc.returncode == 2, proc.stderr
    assert message.startswith(f"error: There is no index at {db}.") and "citedocs add FOLDER" in message
    assert proc.stdout == "" and not (tmp_path / "nonexistent").exists()


def test_a_file_that_is_no_index_is_left_as_it_was(tmp_path: Path) -> None:
    other = tmp_path / "notes.db"
    other.write_bytes(b"")
    proc = citedocs("status", "--db", str(other))
    assert proc.returncode == 2 and "is not a citedocs index" in proc.stderr
    assert other.read_bytes() == b"" and sorted(p.name for p in tmp_path.iterdir()) == ["notes.db"]


def test_an_older_index_is_not_migrated_by_a_read_only_command(tmp_path: Path) -> None:
    db = one_file_index(tmp_path)
    with sqlite3.connect(db) as conn:
        conn.execute(f"PRAGMA user_version = {latest_version() - 1}")
    proc = citedocs("search", "rotate", "--db", str(db))
    assert proc.returncode == 5 and "older citedocs" in proc.stderr and "citedocs reindex" in proc.stderr
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == latest_version() - 1


def test_status_asks_the_running_server_for_its_embedder_and_model(tmp_path: Path) -> None:
    db = one_file_index(tmp_path)
    alone = json.loads(citedocs("status", "--json", "--db", str(db)).stdout)
    assert alone["server"] is None and alone["llm"]["kind"] == "none"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with FakeOpenAI() as model:
        env = {
            **os.environ,
            "CITEDOCS_DB": str(db),
            "CITEDOCS_EMBEDDER": "none",
            "CITEDOCS_WATCH": "false",
            "CITEDOCS_LLM_BASE_URL": model.base_url,
            "CITEDOCS_LLM_MODEL": "served-model",
        }
        command = [sys.executable, "-m", "citedocs", "serve", "--port", str(port)]
        with live_process(command, env, tmp_path / "serve.log", url) as server:
            shown = citedocs("status", "--db", str(db))
            data = json.loads(citedocs("status", "--json", "--db", str(db)).stdout)
    assert shown.returncode == 0, shown.stderr
    assert f"server: {url} (pid {server.pid}) serves this index" in shown.stdout
    assert f"LLM: served-model at {model.base_url}" in shown.stdout  # the server's, not this command's (none)
    assert data["server"] == {"url": url, "pid": server.pid} and data["llm"]["model"] == "served-model"
    assert data["totals"]["indexed"] == 1
    after = json.loads(citedocs("status", "--json", "--db", str(db)).stdout)
    assert after["server"] is None and after["llm"]["kind"] == "none"  # it stopped: this command's own again
