"""The web page in headless Chromium (Debian's, driven by Playwright) against the API on a real socket."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from citedocs.api import create_app
from citedocs.llm.client import LLMClient
from citedocs.service import Citedocs
from citedocs.settings import Settings
from fakes.live_server import live_server
from fakes.openai_server import FakeOpenAI, Reply

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip
QUESTION = "Which port does the server listen on by default?"
TOKENS = [
    "The server ",
    "listens on ",
    "port 8765 ",
    "by default [1]",
    " and starts with ",
    "`citedocs serve` [2].",
]


def make_library(tmp_path: Path) -> Citedocs:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "install.md").write_text(
        "# Installation\n\n## Linux\n\nInstall citedocs with `pipx install citedocs`. The server listens on "
        "port 8765 by default.\n",
        encoding="utf-8",
    )
    (docs / "serve.md").write_text(
        "# Serving\n\n## Start\n\nStart the server with `citedocs serve`. It listens on 127.0.0.1.\n",
        encoding="utf-8",
    )
    library = Citedocs(Settings(db=str(tmp_path / "index.sqlite3"), embedder="none"))
    library.add_folder(docs)
    library.index()
    return library


def test_ask_watch_the_stream_and_open_a_citation(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs the playwright package")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"needs Chromium at {CHROMIUM} (apt-get install -y chromium)")
    library = make_library(tmp_path)
    with FakeOpenAI([Reply(tokens=TOKENS, delay_s=0.15)]) as fake:
        llm = LLMClient(fake.base_url, "fake")
        with live_server(create_app(library.settings, library, llm)) as url, sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
            page = browser.new_page(viewport={"width": 1200, "height": 800})
            page.goto(url + "/")
            page.fill("#question", QUESTION)
            page.click("#ask")
            page.wait_for_selector("#answer.streaming")
            # the page showed the answer while it streamed (the class is set only between sources and done)
            page.wait_for_function("document.querySelector('#answer').textContent.includes('listens on')")
            page.wait_for_selector("#answer:not(.streaming)")
            assert "port 8765" in page.inner_text("#answer")
            assert page.locator("#source-list li").count() >= 1
            citation = page.locator("#answer button.cite").first
            number = citation.inner_text()
            citation.click()
            page.wait_for_selector("#passage:not([hidden])")
            passage_file = page.inner_text("#passage-file")
            assert passage_file.startswith(f"[{number}]") and passage_file.endswith(".md")
            assert "lines" in page.inner_text("#passage-loc") and ">" in page.inner_text("#passage-loc")
            assert "port 8765" in page.inner_text("#passage-text") or "citedocs serve" in page.inner_text(
                "#passage-text"
            )
            assert "first token" in page.inner_text("#meta")
            shot = tmp_path / "citedocs-page.png"
            page.screenshot(path=str(shot), full_page=True)
            browser.close()
        asyncio.run(llm.aclose())
    library.close()
    print(f"screenshot: {shot}")
    assert shot.stat().st_size > 10_000
