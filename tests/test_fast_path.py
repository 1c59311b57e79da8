"""A CLI search asks a `citedocs serve` running on the same index, and searches by itself when there is none."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from citedocs.cli.one_off import ONE_OFF_NOTE
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


# -- a one-off search with no server: answered here before typer, rich and Settings, as the full command would --

# The default value, given: only Settings can read it, so `main` hands the call to the full command.
FULL = {"CITEDOCS_SEARCH_MODE": "hybrid"}
SLOW_IMPORTS = ("typer", "rich", "pydantic", "pydantic_settings", "citedocs.service")


def _traced(db: Path, *args: str, **env: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """A `citedocs search` run with `-X importtime`: the run (its stderr without the trace) and what it imported."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "citedocs", "search", *args, "--db", str(db)],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=120,
        check=False,
    )
    trace = [line for line in done.stderr.splitlines(keepends=True) if line.startswith("import time:")]
    done.stderr = "".join(line for line in done.stderr.splitlines(keepends=True) if line not in trace)
    return done, {line.rsplit("|", 1)[-1].strip() for line in trace}


@pytest.fixture
def hostile_index(tmp_path: Path) -> Path:
    """Two folders; text that rich would read as markup or emoji, terminal controls, CJK, a name with a newline."""
    ops, notes = tmp_path / "ops", tmp_path / "notes"
    ops.mkdir()
    notes.mkdir()
    (ops / "logs.md").write_text(
        "# Rotation :smile: [bold]loud[/bold]\n\nRotate the logs :thumbs_up: weekly \x1b[2J with logrotate;"
        " keep 4 weeks \u202eevil. 日本語のログもローテートする。\n\n## Size\n\nRotate the logs by size: 100 MB.\n",
        encoding="utf-8",
    )
    (ops / "odd\nname.txt").write_text("Old logs are rotated, then compressed.\n", encoding="utf-8")
    (notes / "rotation.txt").write_text(
        "Rotate logs before a backup; logs rotate nightly.\n", encoding="utf-8"
    )
    db = tmp_path / "index.sqlite3"
    for folder in (ops, notes):
        subprocess.run(
            [sys.executable, "-m", "citedocs", "add", str(folder), "--db", str(db)],
            env={**os.environ, "CITEDOCS_EMBEDDER": "none"},
            check=True,
            capture_output=True,
            timeout=120,
        )
    return db


def test_a_one_off_search_prints_what_the_full_command_prints(hostile_index: Path) -> None:
    ops = str(hostile_index.parent / "ops")
    forms = [
        ("rotate the logs",),
        ("rotate the logs", "--json"),
        ("rotate logs", "--mode", "keyword"),
        ("rotate logs", "-k", "1", "--type", "txt"),
        ("rotate logs", "--folder", ops, "--json"),
        ("ログ",),
        ("nothing matches zebra",),  # no hits: the full command says why
        ("rotate", "--folder", "/not/registered"),  # an error, with its exit code
        ("rotate", "--mode", "hybrid"),  # the model is not loaded here: the full command answers
    ]
    for form in forms:
        fast, fast_imports = _traced(hostile_index, *form)
        full, full_imports = _traced(hostile_index, *form, **FULL)
        assert "typer" in full_imports
        assert (fast.returncode, fast.stdout, fast.stderr) == (full.returncode, full.stdout, full.stderr), (
            form
        )
        answered_here = fast.returncode == 0 and "zebra" not in form[0] and "hybrid" not in form
        assert answered_here == (not fast_imports & set(SLOW_IMPORTS)), form
    shown, _ = _traced(hostile_index, "rotate the logs")
    assert "\x1b" not in shown.stdout and "\u202e" not in shown.stdout and "\\x1b" in shown.stdout
    assert ":smile: [bold]loud[/bold]" in shown.stdout and "odd\\x0aname.txt" in shown.stdout
    assert ONE_OFF_NOTE in shown.stderr and shown.stdout.count("\n") >= 4


def test_a_one_off_search_of_a_missing_index_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "index.sqlite3"
    result, _ = _traced(missing, "rotate")
    assert result.returncode == 2 and "citedocs add" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_defaults_the_fast_path_assumes_are_the_settings_defaults() -> None:
    # cli/fast.py searches without Settings only when every setting but the index and k is at its default; it
    # assumes an embedder is configured (so the one-off note applies) and the engine's and analyzer's defaults.
    check = (
        "import inspect; from citedocs.settings import Settings; from citedocs.embed.factory import make_embedder;"
        "from citedocs.search.engine import SearchEngine; from citedocs.text import cjk;"
        "s = Settings(); before = cjk.analyzer_id(); cjk.configure(s.cjk_segmenter);"
        "p = inspect.signature(SearchEngine).parameters;"
        "print(make_embedder(s) is not None, before == cjk.analyzer_id(),"
        " p['keyword_memory'].default == s.keyword_memory, p['default_mode'].default == s.search_mode)"
    )
    done = subprocess.run(
        [sys.executable, "-c", check], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split() == ["True"] * 4
