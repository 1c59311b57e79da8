"""A file or folder whose name is not valid UTF-8 (Linux file names are bytes) never stops a folder: the
other files are indexed and it is listed as a failed file with its bytes shown as `\\xNN` and a hint to
rename it, through `citedocs add`, `citedocs reindex` and the watcher under `citedocs serve`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from citedocs.index.records import chunk_id_for
from citedocs.llm.llama import free_port
from citedocs.sources.folders import shown_name, walk_folder
from fakes.live_server import live_process
from test_watch_processes import env_for, search, wait_until

BAD = b"bad\xff.md"


def bad_folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("# Good\n\nThe heron wades.\n", encoding="utf-8")
    with open(os.path.join(os.fsencode(docs), BAD), "wb") as f:
        f.write(b"# Bad\n\nThe bittern booms.\n")
    os.mkdir(os.path.join(os.fsencode(docs), b"sub\xfe"))
    with open(os.path.join(os.fsencode(docs), b"sub\xfe", b"inner.md"), "wb") as f:
        f.write(b"# Inner\n\nThe egret waits.\n")
    return docs


def citedocs(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "citedocs", *args], env=env, capture_output=True, text=True, timeout=120
    )


def test_names_are_shown_as_utf8_and_ids_never_raise() -> None:
    assert shown_name(os.fsdecode(BAD)) == "bad\\xff.md"
    assert shown_name("café.md") == "café.md"
    assert shown_name("lone\ud800") == "lone\\xed\\xa0\\x80"
    assert len(chunk_id_for(os.fsdecode(BAD), "h\udc80", "t\ud800", {})) == 16


def test_the_walk_lists_bad_names_as_problems(tmp_path: Path) -> None:
    docs = bad_folder(tmp_path)
    found = {f.rel_path: f.problem for f in walk_folder(docs, supported=frozenset({".md"}))}
    assert found["good.md"] is None
    assert "not valid UTF-8" in (found["bad\\xff.md"] or "") and "rename" in (found["bad\\xff.md"] or "")
    assert "not valid UTF-8" in (found["sub\\xfe/"] or "")


def test_add_and_reindex_index_the_rest_and_report_the_bad_name(tmp_path: Path) -> None:
    docs = bad_folder(tmp_path)
    env = env_for(tmp_path)
    added = citedocs(env, "add", str(docs))
    assert added.returncode == 0, added.stderr
    assert "Traceback" not in added.stderr + added.stdout
    assert "\udcff" not in added.stdout and "bad\\xff.md" in added.stdout + added.stderr
    hits = json.loads(citedocs(env, "search", "heron", "--mode", "keyword", "--json").stdout)
    assert [Path(h["path"]).name for h in hits["hits"]] == ["good.md"]
    again = citedocs(env, "reindex", "--force")
    assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr
    status = json.loads(citedocs(env, "status", "--json").stdout)
    assert "bad\\xff.md" in json.dumps(status) or "bad\\\\xff.md" in json.dumps(status)


@pytest.mark.slow
def test_the_watcher_under_serve_keeps_going_past_a_bad_name(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nThe heron wades.\n", encoding="utf-8")
    port = free_port()
    url, env = f"http://127.0.0.1:{port}", env_for(tmp_path)
    command = [sys.executable, "-m", "citedocs", "serve", "--folder", str(docs), "--port", str(port)]
    with live_process(command, env, tmp_path / "serve.log", url):
        wait_until(lambda: httpx.get(f"{url}/stats").json()["watch"][0]["state"] == "watching", "watching")
        with open(os.path.join(os.fsencode(docs), BAD), "wb") as f:
            f.write(b"# Bad\n\nThe bittern booms.\n")
        (docs / "b.md").write_text("# B\n\nThe egret waits.\n", encoding="utf-8")
        wait_until(lambda: search(url, "egret") == ["b.md"], "the good file beside the bad one")
        os.unlink(os.path.join(os.fsencode(docs), BAD))
        (docs / "c.md").write_text("# C\n\nThe stork stands.\n", encoding="utf-8")
        wait_until(lambda: search(url, "stork") == ["c.md"], "a file after the bad one is gone")
        watch = httpx.get(f"{url}/stats").json()["watch"][0]
        assert watch["state"] == "watching" and not watch.get("reason"), watch
    assert "Traceback" not in (tmp_path / "serve.log").read_text(encoding="utf-8", errors="replace")
