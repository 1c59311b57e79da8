"""A CLI search asks a `citedocs serve` running on the same index, and searches by itself when there is none."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from citedocs.cli.app import ONE_OFF_NOTE
from citedocs.cli.remote import running_server, server_file

OFF = "semantic search is off"


def _env(db: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "CITEDOCS_DB": str(db), **extra}


def _search(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "citedocs", "search", "rotate the logs", *args],
        capture_output=True,
        text=True,
        env=_env(db),
        timeout=120,
        check=False,
    )


@pytest.fixture
def index(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "logs.md").write_text("# Logs\n\nRotate the logs weekly with logrotate; keep 4 weeks.\n")
    db = tmp_path / "index.sqlite3"
    subprocess.run(
        [sys.executable, "-m", "citedocs", "add", str(docs)],
        env=_env(db, CITEDOCS_EMBEDDER="none"),
        check=True,
        capture_output=True,
        timeout=120,
    )
    return db


def test_a_running_server_answers_the_cli_and_its_absence_is_noticed(index: Path) -> None:
    # The server runs keyword-only; the CLI's own default would add the one-off note: the note tells who answered.
    server = subprocess.Popen(
        [sys.executable, "-m", "citedocs", "serve", "--port", "0"],
        text=True,
        env=_env(index, CITEDOCS_EMBEDDER="none"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        assert server.stdout is not None
        for line in server.stdout:
            if "serving http" in line:
                break
        url = running_server(index.resolve())
        assert url is not None and url.startswith("http://127.0.0.1:")
        served = json.loads(_search(index, "--json").stdout)
        assert served["hits"][0]["path"].endswith("logs.md")
        assert OFF in (served["note"] or "") and ONE_OFF_NOTE not in (served["note"] or "")
        text = _search(index)
        assert text.returncode == 0 and "logs.md" in text.stdout
        traced = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "citedocs", "search", "rotate the logs", "--json"],
            capture_output=True,
            text=True,
            env=_env(index),
            timeout=120,
            check=True,
        )
        assert (
            json.loads(traced.stdout) == served
        )  # answered before typer, pydantic or the library were imported
        assert not [m for m in ("typer", "pydantic", "citedocs.service") if f" {m}\n" in traced.stderr]
        bad = _search(index, "-k", "0")  # the server's refusal is the CLI's error, with the right exit code
        assert bad.returncode == 1 and "error:" in bad.stderr
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(30)
    assert server.returncode == 0
    assert not server_file(index.resolve()).exists()
    alone = json.loads(_search(index, "--json").stdout)
    assert alone["mode"] == "keyword" and ONE_OFF_NOTE in alone["note"]


def test_a_stale_server_file_is_ignored(index: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    server_file(index.resolve()).write_text(
        json.dumps({"url": "http://127.0.0.1:9", "pid": int(dead.stdout), "db": str(index.resolve())})
    )
    assert running_server(index.resolve()) is None
    result = _search(index, "--json")
    assert result.returncode == 0 and json.loads(result.stdout)["hits"]


def test_an_explicit_mode_in_a_one_off_command_is_honoured(index: Path) -> None:
    result = json.loads(_search(index, "--json", "--mode", "hybrid").stdout)
    # the index holds no vectors (it was built keyword-only): hybrid was tried and says why it fell back
    assert ONE_OFF_NOTE not in result["note"] and "no vectors yet" in result["note"]
