"""Nothing a document, a file name or a model writes reaches the terminal as control: `citedocs search` and
`citedocs ask` (in real processes) print escapes, carriage returns, bells and bidi overrides visibly, a newline
in a file name cannot forge an output line, and `--json` stays the exact JSON of the text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from citedocs.cli.terminal import one_line, shown
from fakes.openai_server import FakeOpenAI, Reply

CLEAR = "\x1b[2J\x1b[H"
TITLE = "\x1b]0;pwned\x07"
CONTROL_BYTES = ("\x1b", "\x07", "\x9b", "\r", "\u202e")
# A file name that tries to set the window title and to print a forged hit line of its own.
EVIL_NAME = "evil\x1b]0;pwned\x07\n2. forged.md  lines 1-1.md"


def env_for(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "CITEDOCS_DB": str(tmp_path / "index.sqlite3"),
        "CITEDOCS_EMBEDDER": "none",
        "CITEDOCS_LLM_BASE_URL": "",
        **extra,
    }


def citedocs(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "citedocs", *args], env=env, capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def hostile(tmp_path: Path) -> dict[str, str]:
    docs = tmp_path / "docs"
    docs.mkdir()
    text = f"# Heron{TITLE}\n\nThe heron{CLEAR} wades \x9b31m in\r the reeds \u202etxt.exe.\n"
    (docs / EVIL_NAME).write_text(text, encoding="utf-8")
    env = env_for(tmp_path)
    assert citedocs(env, "add", str(docs)).returncode == 0
    return env


def test_controls_are_written_visibly() -> None:
    assert shown(f"a{CLEAR}b\tc\nd\re\x9bf\u202eg") == "a\\x1b[2J\\x1b[Hb\tc\nd\\x0de\\x9bf\\u202eg"
    assert one_line("a\nb\tc") == "a\\x0ab\\x09c"
    assert shown("日本語 ü — “quotes” 😀") == "日本語 ü — “quotes” 😀"


def test_search_prints_names_and_snippets_without_control(hostile: dict[str, str]) -> None:
    proc = citedocs(hostile, "search", "heron", "--mode", "keyword")
    assert proc.returncode == 0, proc.stderr
    for byte in CONTROL_BYTES:
        assert byte not in proc.stdout, (byte, proc.stdout)
    assert "\\x1b]0;pwned\\x07" in proc.stdout
    lines = proc.stdout.splitlines()
    assert not any(line.startswith("2. forged") for line in lines), proc.stdout  # no forged hit line
    assert [line for line in lines if line[:2] == "1."] and "\\x0a2. forged.md" in proc.stdout


def test_search_json_keeps_the_exact_text(hostile: dict[str, str]) -> None:
    proc = citedocs(hostile, "search", "heron", "--mode", "keyword", "--json")
    (hit,) = json.loads(proc.stdout)["hits"]
    assert Path(hit["path"]).name == EVIL_NAME and CLEAR in hit["snippet"] + hit.get("text", "")


def test_ask_prints_streamed_model_output_without_control(tmp_path: Path, hostile: dict[str, str]) -> None:
    tokens = ["The heron wades", "\x1b", "[2J", f" in the reeds{TITLE}", "\r\x9b [1]."]
    with FakeOpenAI([Reply(tokens=tokens)]) as fake:
        proc = citedocs(
            {**hostile, "CITEDOCS_LLM_BASE_URL": fake.base_url}, "ask", "Where does the heron wade?"
        )
    assert proc.returncode == 0, proc.stderr
    for byte in CONTROL_BYTES:
        assert byte not in proc.stdout + proc.stderr, (byte, proc.stdout)
    assert "The heron wades\\x1b[2J in the reeds\\x1b]0;pwned\\x07" in proc.stdout
