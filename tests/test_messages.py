"""What a new user reads in the first hour (issue 15): each message of the real `citedocs` command, and what it
says to do next."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from citedocs.api import create_app
from citedocs.errors import UnsafeURLError
from citedocs.search.engine import not_indexed_error
from citedocs.service import Citedocs
from citedocs.settings import Settings
from citedocs.sources.ssrf import check_url
from fakes.docs_site import serve_docs
from fakes.embeddings_server import FakeEmbeddings

DOC = "# Logs\n\nRotate the logs with `citedocs logs --rotate`; old logs are kept for 7 days.\n"


def citedocs(*args: str, db: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "CITEDOCS_DB": str(db), "CITEDOCS_EMBEDDER": "none", **env}
    return subprocess.run(
        [sys.executable, "-m", "citedocs", *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=120,
        check=False,
    )


def flat(text: str) -> str:
    """Text without the line breaks the 80-column console puts into long messages."""
    return " ".join(text.split())


def docs_folder(root: Path) -> Path:
    folder = root / "docs"
    folder.mkdir(parents=True)
    (folder / "logs.md").write_text(DOC, encoding="utf-8")
    return folder


def new_index(tmp_path: Path) -> Path:
    """An index with nothing registered (read-only commands create none)."""
    db = tmp_path / "i.db"
    Citedocs(Settings(db=str(db), embedder="none")).close()
    return db


def test_k_out_of_range_says_the_range_and_how_to_ask(tmp_path: Path) -> None:
    proc = citedocs("search", "logs", "-k", "0", db=new_index(tmp_path))
    assert proc.returncode == 1
    assert flat(proc.stderr).startswith("error: k must be between 1 and 50, got 0.")
    assert "`-k N`" in flat(proc.stderr) and "fewer" not in proc.stderr


def test_searching_an_empty_index_says_to_add_a_folder(tmp_path: Path) -> None:
    missing = citedocs("search", "rotate logs", db=tmp_path / "i.db")
    assert missing.returncode == 2 and "citedocs add FOLDER" in flat(missing.stderr)
    proc = citedocs("search", "rotate logs", db=new_index(tmp_path))
    assert proc.returncode == 0
    assert "citedocs add PATH" in flat(proc.stdout) and "No matches" not in proc.stdout
    assert "vector" not in proc.stdout + proc.stderr


def test_searching_a_registered_folder_with_nothing_indexed_says_so(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    db = tmp_path / "i.db"
    assert citedocs("add", str(tmp_path / "empty"), db=db).returncode == 0
    proc = citedocs("search", "rotate logs", db=db)
    assert "Nothing is indexed yet" in flat(proc.stdout) and "citedocs status" in flat(proc.stdout)
    assert "vector" not in proc.stdout + proc.stderr and "the index is empty" in flat(proc.stderr)


def test_a_site_url_without_scheme_suggests_the_https_url(tmp_path: Path) -> None:
    proc = citedocs("add-site", "hono", "hono.dev/llms.txt", db=tmp_path / "i.db")
    assert proc.returncode == 4
    assert flat(proc.stderr).startswith("error: refused: scheme '(none)' is not allowed")
    assert "https://hono.dev/llms.txt" in flat(proc.stderr)


@pytest.mark.parametrize(
    ("url", "suggestion"),
    [
        ("//example.com/llms.txt", "https://example.com/llms.txt"),
        ("localhost:8080/llms.txt", "https://localhost:8080/llms.txt"),
        ("javascript:alert(1)", None),
        ("mailto:someone@example.com", None),
    ],
)
def test_only_a_bare_host_gets_an_https_suggestion(url: str, suggestion: str | None) -> None:
    with pytest.raises(UnsafeURLError) as caught:
        check_url(url)
    assert ("https://" in caught.value.hint) == (suggestion is not None)
    if suggestion:
        assert caught.value.hint.endswith(suggestion)


def test_a_file_still_being_indexed_is_told_to_wait_not_to_reindex() -> None:
    waiting = not_indexed_error("docs/a.md", indexing=True)
    assert "is being indexed" in waiting.message and "Try again in a moment" in waiting.hint
    assert "reindex" not in str(waiting)
    missing = not_indexed_error("docs/a.md", indexing=False)
    assert "is not indexed" in missing.message and "citedocs reindex" in missing.hint


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("search",), 2),  # missing argument
        (("search", "-k", "many", "logs"), 2),  # not a number
        (("serach", "logs"), 2),  # no such command
        (("remove", "/nowhere"), 3),  # an error of the library
        (("search", "logs", "--mode", "fuzzy"), 1),
        (("search", "logs"), 2),  # no index yet: a read-only command creates none
    ],
)
def test_every_error_line_starts_the_same_way(tmp_path: Path, args: tuple[str, ...], code: int) -> None:
    if code == 1:  # an index to search, so that the mode is what is wrong
        (tmp_path / "docs").mkdir()
        assert citedocs("add", str(tmp_path / "docs"), db=tmp_path / "i.db").returncode == 0
    proc = citedocs(*args, db=tmp_path / "i.db")
    assert proc.returncode == code
    assert proc.stderr.startswith("error: "), proc.stderr
    assert "Error" not in proc.stderr and "╭" not in proc.stderr
    if code == 2 and "no index" not in proc.stderr:
        assert "--help" in proc.stderr.splitlines()[-1]


def test_status_names_the_embedder_and_the_llm_without_secrets(tmp_path: Path) -> None:
    env = {
        "CITEDOCS_LLM_BASE_URL": "http://user:hunter2@127.0.0.1:9/v1?token=abc",
        "CITEDOCS_LLM_MODEL": "qwen",
    }
    new_index(tmp_path)
    text = citedocs("status", db=tmp_path / "i.db", **env).stdout
    assert "embedder: none (CITEDOCS_EMBEDDER=none)" in text
    assert "LLM: http://127.0.0.1:9/v1 (model 'qwen')" in text
    data = json.loads(citedocs("status", "--json", db=tmp_path / "i.db", **env).stdout)
    assert data["llm"] == {
        "configured": True,
        "kind": "external",
        "model": "qwen",
        "base_url": "http://127.0.0.1:9/v1",
        "can_answer": True,
        "problem": None,
        "next_step": None,
    }
    assert "hunter2" not in text + json.dumps(data) and "abc" not in text
    none = citedocs("status", db=tmp_path / "i.db").stdout
    assert "LLM: none configured" in none and "CITEDOCS_LLM_BASE_URL" in none


def test_status_with_a_gguf_model_starts_no_server(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    server = tmp_path / "llama-server"
    server.write_text(f"#!/bin/sh\ntouch {marker}\nsleep 30\n")
    server.chmod(server.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "model.gguf").write_bytes(b"GGUF")
    env = {"CITEDOCS_LLM_GGUF": str(tmp_path / "model.gguf"), "CITEDOCS_LLM_SERVER": str(server)}
    new_index(tmp_path)
    data = json.loads(citedocs("status", "--json", db=tmp_path / "i.db", **env).stdout)
    assert data["llm"]["kind"] == "gguf" and data["llm"]["gguf"] == str(tmp_path / "model.gguf")
    assert data["llm"]["can_answer"] is True
    assert f"LLM: {tmp_path / 'model.gguf'}" in citedocs("status", db=tmp_path / "i.db", **env).stdout
    assert not marker.exists()


def test_add_reports_indexing_before_embedding_and_status_counts_vectors(tmp_path: Path) -> None:
    folder = docs_folder(tmp_path)
    with FakeEmbeddings().running() as fake:
        env = {
            "CITEDOCS_EMBEDDER": "http",
            "CITEDOCS_EMBED_BASE_URL": fake.base_url,
            "CITEDOCS_EMBED_MODEL": "m",
        }
        proc = citedocs("add", str(folder), db=tmp_path / "i.db", **env)
        assert proc.returncode == 0, proc.stderr
        lines = proc.stdout.splitlines()
        indexed = next(i for i, line in enumerate(lines) if "1 indexed" in line)
        background = next(i for i, line in enumerate(lines) if "in the background" in line)
        assert lines[0].startswith("registered") and indexed < background
        assert "`citedocs status` shows the progress" in flat(proc.stdout)  # what to do next
        waited = citedocs("embed", db=tmp_path / "i.db", **env)  # returns when the background pass is done
        assert waited.returncode == 0, waited.stderr
        status = citedocs("status", db=tmp_path / "i.db", **env).stdout
    assert "1/1 chunks embedded" in status and "embedder: " in status


def test_list_and_sites_print_the_path_and_url_that_remove_needs_whole(tmp_path: Path) -> None:
    folder = docs_folder(tmp_path / ("a-folder-with-a-rather-long-name-" * 3))
    db = tmp_path / "i.db"
    env = {"COLUMNS": "80", "CITEDOCS_ALLOWED_PRIVATE_HOSTS": "127.0.0.1"}
    assert len(str(folder)) > 80 and citedocs("add", str(folder), db=db, **env).returncode == 0
    with serve_docs(tmp_path / "www") as site:
        llms = "deeply/nested/documentation/for/a/product/with/a/long/url/llms.txt"
        site.write(llms, f"# Tiny\n\n- [Logs]({site.url}/logs.md): rotating logs\n")
        site.write("logs.md", DOC)
        url = f"{site.url}/{llms}"
        assert citedocs("add-site", "tiny", url, db=db, **env).returncode == 0
        listed = citedocs("list", db=db, **env).stdout.splitlines()
        sites = citedocs("sites", db=db, **env).stdout.splitlines()
    assert f"folder {folder}" in listed and f"site tiny {url}" in listed
    assert f"tiny {url}" in sites
    path = next(line.removeprefix("folder ") for line in listed if line.startswith("folder "))
    assert citedocs("remove", path, db=db).returncode == 0
    assert citedocs("remove", "tiny", db=db).returncode == 0


def test_search_json_is_the_object_the_http_api_returns(tmp_path: Path) -> None:
    db = tmp_path / "i.db"
    assert citedocs("add", str(docs_folder(tmp_path)), db=db).returncode == 0
    from_cli = json.loads(citedocs("search", "rotate logs", "--json", "-k", "3", db=db).stdout)
    library = Citedocs(Settings(db=str(db), embedder="none"))

    async def post() -> httpx.Response:
        transport = httpx.ASGITransport(app=create_app(library.settings, library))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return await client.post("/search", json={"query": "rotate logs", "k": 3})

    try:
        from_api = asyncio.run(post()).json()
    finally:
        library.close()
    assert set(from_cli) == {"query", "mode", "note", "hits"} and from_cli["hits"]
    assert from_cli == from_api


def test_every_message_quoted_in_troubleshooting_still_exists_in_the_source() -> None:
    repo = Path(__file__).resolve().parents[1]
    source = "\n".join(p.read_text(encoding="utf-8") for p in (repo / "src" / "citedocs").rglob("*.py"))
    doc = (repo / "docs" / "troubleshooting.md").read_text(encoding="utf-8")
    quotes = [
        line.strip().removeprefix(">").strip() for line in doc.splitlines() if line.strip().startswith(">")
    ]
    assert len(quotes) >= 10
    for quote in quotes:
        for fragment in (part.strip() for part in quote.split("…")):
            assert not fragment or fragment in source, f"{fragment!r} (docs/troubleshooting.md) is not in src"


def test_find_similar_on_a_folder_still_being_indexed_says_to_wait(tmp_path: Path) -> None:
    from citedocs.errors import NotFoundError
    from citedocs.service import Citedocs
    from citedocs.settings import Settings

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nalpha\n")
    app = Citedocs(Settings(db=str(tmp_path / "index.sqlite3"), embedder="none"))
    try:
        source = app.add_folder(docs)
        app.store.update_source(source.id, status="indexing")  # as while its job runs
        with pytest.raises(NotFoundError, match="is being indexed") as waiting:
            app.find_similar(str(docs / "a.md"))
        assert "Try again in a moment" in waiting.value.hint
        app.store.update_source(source.id, status="ready")
        with pytest.raises(NotFoundError, match="is not indexed"):
            app.find_similar(str(docs / "a.md"))
    finally:
        app.close()
