"""The web page's routes (api/sources.py, api/page_routes.py) over a real socket: sources, jobs, read, status."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from citedocs.answer.conversation import MAX_HISTORY_CHARS, MAX_TURNS
from citedocs.api import create_app
from citedocs.llm.client import LLMClient
from citedocs.service import Citedocs
from citedocs.settings import Settings
from fakes.live_server import live_server
from fakes.openai_server import FakeOpenAI

CORRUPT_PDF = b"%PDF-1.7\n1 0 obj << /Type /Catalog >> garbage that is not a PDF at all\n"
NEW_ROUTES = [
    ("GET", "/sources"),
    ("GET", "/jobs"),
    ("GET", "/status"),
    ("GET", "/read?path=/x"),
    ("GET", "/help/models"),
    ("POST", "/sources"),
    ("POST", "/sites"),
    ("POST", "/sources/remove"),
    ("POST", "/sources/reindex"),
]


def write_docs(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["# Installation", "", "## Linux", ""] + [f"Line {i} of filler text." for i in range(5, 30)]
    lines[14] = "The server listens on port 8765 by default."
    (folder / "install.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "serve.md").write_text("# Serving\n\nStart it with `citedocs serve`.\n", encoding="utf-8")
    (folder / "broken.pdf").write_bytes(CORRUPT_PDF)
    return folder


@contextlib.contextmanager
def serving(
    tmp_path: Path, index: bool = True, llm: LLMClient | None = None, **options: Any
) -> Iterator[str]:
    settings = Settings(db=str(tmp_path / "index.sqlite3"), embedder="none", **options)
    library = Citedocs(settings)
    if index:
        library.add_folder(write_docs(tmp_path / "docs"))
        library.index()
    try:
        with live_server(create_app(settings, library, llm)) as url:
            yield url
    finally:
        library.close()


def wait_idle(url: str, timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        jobs = httpx.get(url + "/jobs").json()
        if not jobs["active"]:
            return jobs
        assert time.monotonic() < deadline, jobs
        time.sleep(0.05)


def test_sources_list_counts_status_and_each_failed_file_with_its_reason(tmp_path: Path) -> None:
    with serving(tmp_path) as url:
        body = httpx.get(url + "/sources").json()
    assert body["writable"] is True and body["read_only_reason"] is None
    (folder,) = body["sources"]
    assert folder["kind"] == "folder" and folder["docs"] == 2 and folder["failed"] == 1
    assert folder["status"] == "ready" and folder["last_indexed"] > 0
    (failure,) = folder["failures"]
    assert failure["path"].endswith("broken.pdf") and failure["reason"]
    assert body["file_types"] == {"markdown": 2}


def test_add_a_folder_from_the_page_indexes_it_in_the_background(tmp_path: Path) -> None:
    extra = tmp_path / "more"
    extra.mkdir()
    for i in range(30):
        (extra / f"note{i}.md").write_text(f"# Note {i}\n\nThe zebra number {i} grazes.\n", encoding="utf-8")
    with serving(tmp_path) as url:
        added = httpx.post(url + "/sources", json={"path": str(extra)})
        assert added.status_code == 202 and added.json()["source"]["path"] == str(extra.resolve())
        jobs = wait_idle(url)
        index_jobs = [j for j in jobs["jobs"] if j["kind"] == "index"]
        assert index_jobs[0]["state"] == "done" and index_jobs[0]["done"] == 30
        hits = httpx.post(url + "/search", json={"query": "zebra grazes", "source": str(extra)}).json()[
            "hits"
        ]
        assert hits and all(h["path"].startswith(str(extra.resolve())) for h in hits)
        again = httpx.post(url + "/sources", json={"path": str(extra)})  # idempotent, like the CLI
        assert again.status_code == 202
        wait_idle(url)
        reindexed = httpx.post(url + "/sources/reindex", json={"name": str(extra), "force": True})
        assert reindexed.status_code == 202
        wait_idle(url)
        removed = httpx.post(url + "/sources/remove", json={"name": str(extra)})
        assert removed.status_code == 200 and removed.json()["kind"] == "folder"
        names = [s["uri"] for s in httpx.get(url + "/sources").json()["sources"]]
        assert str(extra.resolve()) not in names
        assert not httpx.post(url + "/search", json={"query": "zebra grazes"}).json()["hits"]
    assert extra.joinpath("note0.md").exists()  # the files are untouched


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"path": "relative/docs"}, 422, "invalid_input"),
        ({"path": "/no/such/folder/anywhere"}, 404, "not_found"),
        ({"path": "/"}, 403, "access_denied"),
        ({"path": "/etc"}, 403, "access_denied"),
        ({"path": "/tmp/a\x00b"}, 422, "invalid_input"),
        ({"path": "/tmp", "allow_system_folder": True}, 422, "invalid_input"),
        ({"path": 5}, 422, "invalid_input"),
    ],
)
def test_bad_folders_are_refused_with_what_to_do(tmp_path: Path, body: Any, status: int, code: str) -> None:
    with serving(tmp_path, index=False) as url:
        response = httpx.post(url + "/sources", json=body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code and error["hint"]


def test_writes_take_json_only(tmp_path: Path) -> None:
    """A cross-site form post (text/plain, no preflight) cannot register a folder."""
    with serving(tmp_path, index=False) as url:
        response = httpx.post(
            url + "/sources", content=f'{{"path": "{tmp_path}"}}', headers={"content-type": "text/plain"}
        )
        assert response.status_code == 422
        assert httpx.get(url + "/sources").json()["sources"] == []


@pytest.mark.parametrize(
    ("options", "writable"),
    [
        ({"read_only": True}, False),
        ({"host": "0.0.0.0"}, False),
        ({"host": "0.0.0.0", "read_only": False}, True),
        ({"host": "::1"}, True),
    ],
)
def test_read_only_servers_refuse_every_write(
    tmp_path: Path, options: dict[str, Any], writable: bool
) -> None:
    with serving(tmp_path, **options) as url:
        listed = httpx.get(url + "/sources").json()
        assert listed["writable"] is writable
        assert httpx.get(url + "/status").json()["writable"] is writable
        for path, body in [
            ("/sources", {"path": str(tmp_path)}),
            ("/sources/remove", {"name": "x"}),
            ("/sources/reindex", {}),
            ("/sites", {"name": "a", "url": "https://a.example/llms.txt"}),
        ]:
            response = httpx.post(url + path, json=body)
            if writable:
                assert response.status_code != 403, response.text
                continue
            assert response.status_code == 403 and response.json()["error"]["code"] == "read_only"
            assert "CITEDOCS_READ_ONLY" in response.json()["error"]["hint"]
        if not writable:
            assert len(httpx.get(url + "/sources").json()["sources"]) == 1


def test_read_gives_a_passage_in_its_context_and_stays_confined(tmp_path: Path) -> None:
    outside = tmp_path / "secret.md"
    outside.write_text("# Secret\n\npassword\n", encoding="utf-8")
    with serving(tmp_path) as url:
        docs = tmp_path / "docs"
        os.symlink(outside, docs / "link.md")
        ok = httpx.get(url + "/read", params={"path": str(docs / "install.md"), "start": 10, "end": 20})
        assert ok.status_code == 200
        body = ok.json()
        assert body["start_line"] == 10 and body["end_line"] == 20 and body["total_lines"] >= 29
        assert "port 8765" in body["text"] and body["text"].count("\n") == 10
        for path in [str(outside), str(docs / ".." / "secret.md"), str(docs / "link.md"), "/etc/passwd"]:
            refused = httpx.get(url + "/read", params={"path": path})
            assert refused.status_code in (403, 404), (path, refused.text)
            assert "password" not in refused.text
        backwards = httpx.get(url + "/read", params={"path": str(docs / "install.md"), "start": 9, "end": 3})
        assert backwards.status_code == 422 and backwards.json()["error"]["hint"].startswith("Ask like")
        past = httpx.get(url + "/read", params={"path": str(docs / "install.md"), "start": 900})
        assert past.status_code == 422
        site = httpx.get(url + "/read", params={"path": "https://unregistered.example/page.md"})
        assert site.status_code in (403, 404)


def test_read_page_renders_a_pdf_page_with_the_passage_marked_and_stays_confined(tmp_path: Path) -> None:
    from conftest import shared

    fixture = shared("parser-fixtures", "pdf", "markitdown_REPAIR-2022-INV-001_multipage.pdf")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "estimate.pdf").write_bytes(fixture.read_bytes())
    outside = tmp_path / "outside.pdf"
    outside.write_bytes(fixture.read_bytes())
    with serving(tmp_path) as url:
        os.symlink(outside, docs / "link.pdf")
        path = str(docs / "estimate.pdf")
        passage = (
            "Insured name Gabriel Diaz Year 2022\nClaim # SF-1008 Make Jeep\nNot on this page at all, no"
        )
        marked = httpx.get(url + "/read/page", params={"path": path, "page": 1, "text": passage})
        assert marked.status_code == 200 and marked.headers["content-type"] == "image/png"
        assert marked.content.startswith(b"\x89PNG") and len(marked.content) > 20_000
        assert marked.headers["x-citedocs-marked"] == "2" and marked.headers["x-citedocs-pages"] == "3"
        plain = httpx.get(url + "/read/page", params={"path": path, "page": 1})
        assert plain.headers["x-citedocs-marked"] == "0" and plain.content != marked.content
        past = httpx.get(url + "/read/page", params={"path": path, "page": 9})
        assert past.status_code == 422 and "Ask for a page 1-3" in past.json()["error"]["hint"]
        not_pdf = httpx.get(url + "/read/page", params={"path": str(docs / "install.md"), "page": 1})
        assert not_pdf.status_code == 422 and "not a PDF" in not_pdf.json()["error"]["message"]
        for refused_path in [str(outside), str(docs / "link.pdf"), str(docs / ".." / "outside.pdf")]:
            refused = httpx.get(url + "/read/page", params={"path": refused_path, "page": 1})
            assert refused.status_code in (403, 404), (refused_path, refused.text)
            assert not refused.content.startswith(b"\x89PNG")


def test_topics_are_headings_one_per_section_without_numbers(tmp_path: Path) -> None:
    with serving(tmp_path) as url:
        docs = tmp_path / "docs"
        (docs / "notes.md").write_text(
            "# Installation\n\n## Windows\n\nRun the installer.\n\n# 2.0.1 (2 May 2023)\n\nFixed.\n",
            encoding="utf-8",
        )
        httpx.post(url + "/sources/reindex", json={"name": str(docs)})
        wait_idle(url)
        topics = httpx.get(url + "/topics").json()["topics"]
        assert "Serving" in topics and "2.0.1 (2 May 2023)" not in topics
        assert len([t for t in topics if t in ("Linux", "Windows")]) == 1  # one per top-level section


def test_status_without_a_model_says_so(tmp_path: Path) -> None:
    with serving(tmp_path) as url:
        body = httpx.get(url + "/status").json()
    assert body["version"] and body["llm"]["configured"] is False and body["llm"]["state"] == "none"
    assert body["embedder"]["state"] == "disabled" and body["totals"]["indexed"] == 2
    assert body["db_bytes"] > 0 and body["sources"] == 1 and body["active"] is False
    assert body["stats"]["answers"] == 0 and body["stats"]["max_concurrent"] >= 1
    # the page's thread keeps its history within the server's bounds, read from here
    assert body["conversation"] == {"max_turns": MAX_TURNS, "max_history_chars": MAX_HISTORY_CHARS}


def test_status_names_the_model_and_whether_it_answers(tmp_path: Path) -> None:
    with FakeOpenAI([]) as fake:
        llm = LLMClient(fake.base_url, "scripted-model")
        with serving(tmp_path, llm=llm) as url:
            up = httpx.get(url + "/status").json()["llm"]
        asyncio.run(llm.aclose())
    assert up == {
        "configured": True,
        "state": "external",
        "model": "scripted-model",
        "base_url": fake.base_url,
        "reachable": True,
        "error": None,
        "can_answer": True,
        "problem": None,
        "next_step": None,
    }
    gone = LLMClient("http://127.0.0.1:9/v1", "nobody-home")
    with serving(tmp_path / "b", index=False, llm=gone) as url:
        down = httpx.get(url + "/status").json()["llm"]
    asyncio.run(gone.aclose())
    assert down["configured"] is True and down["reachable"] is False and "did not answer" in down["error"]


def test_ask_without_a_model_still_returns_the_sources(tmp_path: Path) -> None:
    with serving(tmp_path) as url:
        response = httpx.post(url + "/ask", json={"question": "Which port does the server listen on?"})
    assert response.status_code == 503
    error = response.json()["error"]
    assert error["code"] == "model_unavailable" and "CITEDOCS_LLM_BASE_URL" in error["hint"]
    assert error["sources"][0]["path"].endswith("install.md") and error["sources"][0]["n"] == 1
    # no model, no synthesis: the sentences that answer, quoted verbatim, are the answer
    assert error["quotes_label"] == "What the sources say"
    assert any(
        "port" in q["text"] and q["text"] in error["sources"][q["n"] - 1]["text"] for q in error["quotes"]
    )


def test_help_pages_serve_the_docs_and_nothing_else(tmp_path: Path) -> None:
    with serving(tmp_path, index=False) as url:
        models = httpx.get(url + "/help/models")
        assert models.status_code == 200 and "CITEDOCS_LLM_BASE_URL" in models.text
        for name in ["nope", "..%2Fpyproject", "%2E%2E"]:
            assert httpx.get(url + f"/help/{name}").status_code == 404


def test_every_new_route_refuses_a_foreign_host_and_origin(tmp_path: Path) -> None:
    with serving(tmp_path, index=False) as url:
        for method, path in NEW_ROUTES:
            foreign = httpx.request(method, url + path, headers={"Host": "evil.example"}, json={})
            assert foreign.status_code == 421, (path, foreign.text)
            assert foreign.json()["error"]["code"] == "host_not_allowed"
            cross = httpx.request(method, url + path, headers={"Origin": "http://evil.example"}, json={})
            assert cross.status_code == 403, (path, cross.text)
        assert httpx.get(url + "/sources").json()["sources"] == []


def test_post_sites_registers_a_site_searchable_at_once_and_can_prefetch(tmp_path: Path) -> None:
    from conftest import shared
    from fakes.claude_site import write_claude_site
    from fakes.docs_site import serve_docs

    data = shared("claude-docs-qa")
    with serve_docs(tmp_path / "www") as site, serving(tmp_path, allowed_private_hosts=["127.0.0.1"]) as url:
        llms_txt, _ = write_claude_site(site, data)
        added = httpx.post(url + "/sites", json={"name": "claude", "url": llms_txt, "fetch_pages": 3})
        assert added.status_code == 201 and added.json()["prefetch"] is True
        hits = httpx.post(url + "/search", json={"query": "ticket routing", "mode": "keyword"}).json()["hits"]
        assert any(h["kind"] == "link" and h["heading"] == "Ticket Routing" for h in hits) or any(
            h["kind"] == "passage" and "ticket-routing" in h["path"] for h in hits
        )
        deadline = time.monotonic() + 30
        while len([r for r in site.requests if r.path.startswith("/en/")]) < 3:
            assert time.monotonic() < deadline, "the prefetch did not run"
            time.sleep(0.1)
        wait_idle(url)
        [claude] = [s for s in httpx.get(url + "/sources").json()["sources"] if s["name"] == "claude"]
        assert claude["kind"] == "site"
        bad = httpx.post(url + "/sites", json={"name": "x", "url": llms_txt, "fetch_pages": -2})
        assert bad.status_code == 422
