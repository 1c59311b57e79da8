"""The MCP server driven by the SDK's own client: in-process, over a real stdio subprocess, over real HTTP."""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import uvicorn
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from citedocs.errors import AccessDenied, NotFoundError
from citedocs.mcp import MUTATING_TOOLS, build_server, http_app, transport_security
from citedocs.mcp.budget import cut, fair_share, fit_chars, fit_items, fit_lines, json_size
from citedocs.mcp.shapes import tool_message
from citedocs.mcp.transports import bind
from citedocs.service import Citedocs
from citedocs.settings import Settings
from conftest import shared

FOLDER_TOOLS = {
    "add_folder",
    "remove_folder",
    "list_folders",
    "search",
    "read_file",
    "find_similar",
    "reindex",
    "index_status",
}
SITE_TOOLS = {
    "docs_home",
    "list_doc_sources",
    "search_docs",
    "fetch_doc",
    "add_doc_source",
    "remove_doc_source",
    "refresh_doc_source",
}
REPO = Path(__file__).resolve().parents[1]


def settings_for(tmp_path: Path, **extra: Any) -> Settings:
    return Settings(db=str(tmp_path / "index.sqlite3"), embedder="none", **extra)


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Citedocs]:
    service = Citedocs(settings_for(tmp_path))
    yield service
    service.close()


def run(fn: Callable[[], Awaitable[None]]) -> None:
    anyio.run(fn)


async def call(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    data: dict[str, Any] = result.structured_content
    return data


async def call_error(client: Client, tool: str, **args: Any) -> str:
    result = await client.call_tool(tool, args)
    assert result.is_error, result.structured_content
    text: str = result.content[0].text  # type: ignore[union-attr]
    return text


async def wait_indexed(client: Client, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        status = await call(client, "index_status")
        if not status["indexing"]["active"]:
            return status
        assert time.monotonic() < deadline, status["indexing"]
        await anyio.sleep(0.05)


async def folder_session(client: Client, docs: Path) -> None:
    """The docsonar walk-through: add, wait, search, read a hit's lines, find similar, reindex, remove."""
    added = await call(client, "add_folder", path=str(docs))
    assert added["folder"]["path"] == str(docs.resolve()) and added["indexing"] is True
    status = await wait_indexed(client)
    assert status["totals"]["indexed"] == 45 and status["totals"]["chunks"] > 100
    assert status["folders"][0]["status"] == "ready" and status["failures"] == []

    found = await call(client, "search", query="rate limits", top_k=3)
    assert 1 <= len(found["hits"]) <= 3
    hit = found["hits"][0]
    assert "rate-limits" in hit["path"] and hit["chunk_id"] and hit["line_start"] <= hit["line_end"]
    assert hit["location"].endswith(f":{hit['line_start']}-{hit['line_end']}")
    assert "**" in hit["snippet"] and hit["text"]

    read = await call(
        client, "read_file", path=hit["path"], start_line=hit["line_start"], end_line=hit["line_end"]
    )
    assert (read["start_line"], read["end_line"]) == (hit["line_start"], hit["line_end"])
    assert read["text"].split("\n")[0] == hit["text"].split("\n")[0]
    assert read["next_start_line"] is None and read["format"] == "markdown"

    similar = await call(client, "find_similar", path=hit["path"], top_k=3)
    assert similar["hits"] and all(h["path"] != hit["path"] for h in similar["hits"])

    listed = await call(client, "list_folders")
    assert [f["path"] for f in listed["folders"]] == [str(docs.resolve())]
    again = await call(client, "reindex", force=True)
    assert again["folders"] == [str(docs.resolve())]
    status = await wait_indexed(client)
    assert status["totals"]["indexed"] == 45 and status["indexing"]["jobs"][0]["state"] == "done"

    removed = await call(client, "remove_folder", path=str(docs))
    assert removed["removed"] == str(docs.resolve())
    assert (await call(client, "list_folders"))["folders"] == []
    assert (await call(client, "index_status"))["totals"]["chunks"] == 0


# -- in-process ----------------------------------------------------------------------------------------


def test_tools_list_shows_every_tool_with_annotations(app: Citedocs) -> None:
    async def main() -> None:
        async with Client(build_server(app)) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == FOLDER_TOOLS | SITE_TOOLS
            for tool in tools.values():
                hints = tool.annotations
                assert hints is not None and tool.description and tool.title
                assert hints.read_only_hint is (tool.name not in MUTATING_TOOLS)
                assert hints.destructive_hint is (
                    True if tool.name.startswith("remove_") else None if hints.read_only_hint else False
                )
                props = tool.input_schema.get("properties", {})
                assert all(p.get("description") for p in props.values()), tool.name
            assert tools["add_folder"].annotations.idempotent_hint is True  # type: ignore[union-attr]
            assert tools["fetch_doc"].annotations.open_world_hint is True  # type: ignore[union-attr]
            assert tools["search"].output_schema and "hits" in tools["search"].output_schema["properties"]
            assert (
                tools["search"].input_schema["properties"]["top_k"]["anyOf"][0]["maximum"] == 50
            )  # default: top_k

    run(main)


def test_read_only_hides_the_tools_that_change_the_registry(app: Citedocs) -> None:
    async def main() -> None:
        async with Client(build_server(app, read_only=True)) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert names == (FOLDER_TOOLS | SITE_TOOLS) - MUTATING_TOOLS
            assert "read-only" in (client.instructions or "")
            assert "Unknown tool" in await call_error(client, "add_folder", path="/tmp")

    run(main)


def test_ask_is_offered_only_when_an_llm_is_configured(tmp_path: Path) -> None:
    with_llm = Citedocs(settings_for(tmp_path, llm_base_url="http://127.0.0.1:9/v1"))

    async def main() -> None:
        async with Client(build_server(with_llm)) as client:
            assert "ask" in {t.name for t in (await client.list_tools()).tools}
            assert "ask(question)" in (client.instructions or "")

    try:
        run(main)
    finally:
        with_llm.close()


def test_ask_returns_the_synthesis_and_the_quotes_it_leaves_out(tmp_path: Path) -> None:
    from fakes.openai_server import FakeOpenAI, Reply

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "install.md").write_text(
        "# Install\n\nThe server listens on port 8765 by default.\n\nThe metrics port is 9464.\n",
        encoding="utf-8",
    )
    with FakeOpenAI([Reply(tokens=["The server listens on port 8765 by default [1]."])]) as fake:
        library = Citedocs(settings_for(tmp_path, llm_base_url=fake.base_url))
        library.add_folder(docs)
        library.index()

        async def main() -> None:
            async with Client(build_server(library)) as client:
                data = await call(
                    client, "ask", question="Which port does the server use, and the metrics port?"
                )
            assert data["answer"] == "The server listens on port 8765 by default [1]."
            assert data["quotes_label"] is None
            assert [(q["text"], q["n"], q["line"]) for q in data["quotes"]] == [
                ("The metrics port is 9464.", 1, 5)
            ]

        try:
            run(main)
        finally:
            library.close()


def test_folder_session_in_process(app: Citedocs) -> None:
    docs = shared("claude-docs-qa", "docs")

    async def main() -> None:
        async with Client(build_server(app)) as client:
            assert "none yet" in (client.instructions or "")
            await folder_session(client, docs)

    run(main)


def test_instructions_name_the_indexed_folders(app: Citedocs) -> None:
    docs = shared("claude-docs-qa", "docs")
    app.add_folder(docs)
    app.index()

    async def main() -> None:
        async with Client(build_server(app)) as client:
            text = client.instructions or ""
            assert f"{docs.resolve()} (45 docs)" in text
            assert "read_file(path, start_line, end_line)" in text and "fetch_doc(url)" in text

    run(main)


def test_model_fixable_problems_are_tool_errors_that_say_what_to_do(app: Citedocs, tmp_path: Path) -> None:
    docs = shared("claude-docs-qa", "docs")
    app.add_folder(docs)
    app.index()
    outside = tmp_path / "secret.md"
    outside.write_text("# secret\n", encoding="utf-8")

    async def main() -> None:
        async with Client(build_server(app)) as client:
            text = await call_error(client, "read_file", path=str(outside))
            assert "outside every registered folder" in text and "add_folder" in text
            assert "list_folders" in text and "citedocs" not in text.replace("citedocs add", "")
            text = await call_error(client, "read_file", path=str(docs / ".." / ".." / "cases.jsonl"))
            assert "outside every registered folder" in text
            text = await call_error(client, "search", query="limits", folder="/no/such/folder")
            assert "not a registered folder" in text and "list_folders" in text
            assert "top_k must be at most 50 (got 99)" in await call_error(
                client, "search", query="x", top_k=99
            )
            assert "empty" in await call_error(client, "search", query="   ")
            assert "not a registered" in await call_error(client, "remove_folder", path="/no/such/folder")
            text = await call_error(client, "add_folder", path=str(tmp_path / "missing"))
            assert "does not exist" in text

    run(main)


def test_read_file_pages_on_when_the_text_is_cut(app: Citedocs) -> None:
    docs = shared("claude-docs-qa", "docs")
    app.add_folder(docs)
    app.index()
    target = max(docs.glob("*.md"), key=lambda p: p.stat().st_size)

    async def main() -> None:
        async with Client(build_server(app, max_chars=3000)) as client:
            first = await call(client, "read_file", path=str(target))
            assert first["start_line"] == 1 and first["next_start_line"] == first["end_line"] + 1
            assert f"start_line={first['next_start_line']}" in first["note"]
            second = await call(client, "read_file", path=str(target), start_line=first["next_start_line"])
            assert second["start_line"] == first["end_line"] + 1
            whole = target.read_text(encoding="utf-8")
            assert len(first["text"]) < 3000 and first["text"].split("\n")[0] in whole

    run(main)


def test_search_output_stays_within_the_budget_and_says_so(app: Citedocs) -> None:
    docs = shared("claude-docs-qa", "docs")
    app.add_folder(docs)
    app.index()

    async def main() -> None:
        async with Client(build_server(app, max_chars=6000)) as client:
            found = await call(client, "search", query="claude api model", top_k=20)
            assert json_size(found) < 6000
            assert "semantic search" in found["note"]  # the degraded state, reported, not failed
            assert "budget" in found["note"] and len(found["hits"]) >= 5

    run(main)


# -- pure helpers --------------------------------------------------------------------------------------


def test_fit_items_cuts_text_then_snippets_then_drops_hits() -> None:
    items = [{"path": f"f{i}.md", "snippet": "s" * 200, "text": "t" * 2000} for i in range(10)]
    assert fit_items(items, 10**6).note is None
    shortened = fit_items(items, 8000)
    assert len(shortened.items) == 10 and all(len(i["text"]) < 2000 for i in shortened.items)
    assert json_size(shortened.items) <= 8000 and "shortened" in (shortened.note or "")
    no_text = fit_items(items, 2800)
    assert len(no_text.items) == 10 and "text" not in no_text.items[0] and json_size(no_text.items) <= 2800
    short = fit_items(items, 1500)
    assert len(short.items) == 10 and len(short.items[0]["snippet"]) <= 80 and json_size(short.items) <= 1500
    dropped = fit_items(items, 600)
    assert 1 <= len(dropped.items) < 10 and f"of {len(items)} results" in (dropped.note or "")


def test_fair_share_gives_short_texts_all_and_long_ones_the_rest() -> None:
    assert fair_share([10, 10, 1000], 220) == 200
    assert fair_share([10, 20], 1000) == 20
    assert cut("word " * 10, 23) == "word word word word…" and len(cut("x" * 50, 10)) == 10


def test_fit_lines_and_fit_chars_page_on() -> None:
    window = fit_lines(["a" * 10] * 10, 5, 14, 35)
    assert (window.end_line, window.next_start_line) == (7, 8) and window.text.count("\n") == 2
    assert fit_lines(["a" * 10] * 3, 1, 3, 100).next_start_line is None
    long = fit_lines(["x" * 500, "y"], 1, 2, 100)
    assert (
        len(long.text) == 100 and long.next_start_line == 2 and "longer than the budget" in (long.note or "")
    )
    text = "line\n" * 100
    part = fit_chars(text, 0, 52)
    assert part.text.endswith("\n") and part.next_offset == len(part.text)
    assert fit_chars(text, 480, 100).next_offset is None


def test_cli_advice_is_rewritten_as_tool_names() -> None:
    message = tool_message(AccessDenied("x is outside.", "Register it with `citedocs add PATH`."))
    assert message == "x is outside. Register it with add_folder."
    message = tool_message(
        NotFoundError("y is unknown.", "Run `citedocs list` or `citedocs reindex --force`.")
    )
    assert "list_folders" in message and "reindex with force=true" in message


def test_transport_security_allows_loopback_names_with_the_port_only() -> None:
    rules = transport_security(8765)
    assert {"127.0.0.1:8765", "localhost:8765", "[::1]:8765"} <= set(rules.allowed_hosts)
    assert "evil.example:8765" not in rules.allowed_hosts and "localhost" not in rules.allowed_hosts
    assert "http://localhost:8765" in rules.allowed_origins
    assert "docs.lan:8765" in transport_security(8765, allowed_hosts=["docs.lan"]).allowed_hosts
    proxied = transport_security(8765, allowed_hosts=["docs.example:443", "[fd00::1]:80"]).allowed_hosts
    assert {"docs.example:443", "[fd00::1]:80"} <= set(proxied)  # a name given with its port is kept as is
    assert "docs.example:443:8765" not in proxied and "docs.example:8765" not in proxied


# -- real stdio ----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_folder_session_over_a_real_stdio_subprocess(tmp_path: Path) -> None:
    docs = shared("claude-docs-qa", "docs")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "citedocs.mcp", "--db", str(tmp_path / "index.sqlite3")],
        env={"CITEDOCS_EMBEDDER": "none", "CITEDOCS_CONFIG": str(tmp_path / "none.toml")},
        cwd=str(tmp_path),
    )
    errlog = tmp_path / "stderr.txt"

    async def main() -> None:
        with errlog.open("w", encoding="utf-8") as err:
            async with Client(stdio_client(params, errlog=err)) as client:
                await folder_session(client, docs)

    run(main)
    assert "Traceback" not in errlog.read_text(encoding="utf-8")


# -- real streamable HTTP ------------------------------------------------------------------------------


@contextmanager
def serving(asgi: Any, sock: Any) -> Iterator[str]:
    """uvicorn on an already-bound loopback socket in a thread; yields the base URL."""
    server = uvicorn.Server(uvicorn.Config(asgi, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def test_folder_session_over_real_streamable_http(app: Citedocs) -> None:
    docs = shared("claude-docs-qa", "docs")
    sock = bind("127.0.0.1", 0)
    asgi = http_app(app, port=sock.getsockname()[1])

    async def main(url: str) -> None:
        async with Client(f"{url}/mcp") as client:
            await folder_session(client, docs)
        async with Client(f"{url}/mcp") as second:  # a new session shares the same loaded index
            assert (await call(second, "index_status"))["totals"]["chunks"] == 0

    with serving(asgi, sock) as url:
        run(functools.partial(main, url))


def test_http_refuses_a_foreign_host_or_origin(app: Citedocs) -> None:
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    with serving(http_app(app, port=port), sock) as url:
        ok = httpx.post(f"{url}/mcp", json=body, headers=headers)
        assert ok.status_code == 200
        rebound = httpx.post(f"{url}/mcp", json=body, headers={**headers, "host": f"evil.example:{port}"})
        assert rebound.status_code == 421
        other_port = httpx.post(f"{url}/mcp", json=body, headers={**headers, "host": f"localhost:{port + 1}"})
        assert other_port.status_code == 421
        page = httpx.post(f"{url}/mcp", json=body, headers={**headers, "origin": "http://evil.example"})
        assert page.status_code == 403


def test_http_app_mounts_inside_fastapi_at_mcp(app: Citedocs) -> None:
    from fastapi import FastAPI

    sock = bind("127.0.0.1", 0)
    mcp_app = http_app(app, read_only=True, port=sock.getsockname()[1], path="/")

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> Any:
        async with mcp_app.router.lifespan_context(mcp_app):
            yield

    api = FastAPI(lifespan=lifespan)

    @api.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    api.mount("/mcp", mcp_app)

    async def main(url: str) -> None:
        async with Client(f"{url}/mcp") as client:  # Starlette redirects /mcp to /mcp/ (307)
            names = {t.name for t in (await client.list_tools()).tools}
            assert names == (FOLDER_TOOLS | SITE_TOOLS) - MUTATING_TOOLS
        async with httpx.AsyncClient() as http:
            assert (await http.get(f"{url}/healthz")).json() == {"status": "ok"}

    with serving(api, sock) as url:
        run(functools.partial(main, url))


def test_run_http_subprocess_prints_its_url_and_serves(tmp_path: Path) -> None:
    env = {**os.environ, "CITEDOCS_EMBEDDER": "none", "CITEDOCS_CONFIG": str(tmp_path / "none.toml")}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "citedocs.mcp",
            "--db",
            str(tmp_path / "i.sqlite3"),
            "--http",
            "--port",
            "0",
            "--read-only",
        ],
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        match = re.search(r"(http://127\.0\.0\.1:\d+/mcp)", line)
        assert match, line

        async def main() -> None:
            async with Client(match.group(1)) as client:
                names = {t.name for t in (await client.list_tools()).tools}
                assert "search" in names and "add_folder" not in names

        run(main)
    finally:
        proc.terminate()
        proc.wait(10)
    assert proc.stdout is not None and proc.stdout.read() == ""


# -- documentation sites -------------------------------------------------------------------------------

LLMS_TXT = """# Widgets

> Widgets is a tiny framework for building widgets.

## Docs

- [Getting started](/docs/start.md): install widgets and build your first widget
- [Theming](/docs/theming.md): colours, fonts and dark mode for widgets
"""
PAGES = {
    "start.md": "# Getting started\n\nRun `pip install widgets`, then call `widgets.build()`.\n",
    "theming.md": "# Theming\n\nSet `dark_mode=True` to switch every widget to the dark palette.\n" * 40,
}


@contextmanager
def site_server(root: Path) -> Iterator[str]:
    (root / "docs").mkdir()
    (root / "llms.txt").write_text(LLMS_TXT, encoding="utf-8")
    for name, text in PAGES.items():
        (root / "docs" / name).write_text(text, encoding="utf-8")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_site_session_add_search_fetch_remove(tmp_path: Path) -> None:
    site_app = Citedocs(settings_for(tmp_path, allowed_private_hosts=["127.0.0.1"]))
    root = tmp_path / "site"
    root.mkdir()

    async def main(base: str) -> None:
        async with Client(build_server(site_app, max_chars=1500)) as client:
            added = await call(
                client, "add_doc_source", name="widgets", llms_txt_url=f"{base}/llms.txt", fetch_pages=0
            )
            assert added["name"] == "widgets" and added["docs"] == 2
            listed = await call(client, "list_doc_sources")
            assert [s["name"] for s in listed["sources"]] == ["widgets"]
            assert "widgets" in json.dumps(await call(client, "docs_home"))
            found = await call(client, "search_docs", query="dark mode", k=2)
            assert found["hits"][0]["url"] == f"{base}/docs/theming.md"
            assert 0 <= found["hits"][0]["score"] <= 1
            page = await call(client, "fetch_doc", url=found["hits"][0]["url"])
            assert "dark_mode=True" in page["markdown"] and page["next_offset"] is not None
            rest = await call(client, "fetch_doc", url=found["hits"][0]["url"], offset=page["next_offset"])
            assert rest["offset"] == page["next_offset"]
            text = await call_error(client, "fetch_doc", url="http://127.0.0.1:9/elsewhere.md")
            assert "registered" in text or "llms.txt" in text
            assert "widgets" in json.dumps(await call(client, "refresh_doc_source", name="widgets"))
            text = await call_error(client, "add_doc_source", name="widgets", llms_txt_url=f"{base}/llms.txt")
            assert "already" in text
            await call(client, "remove_doc_source", name="widgets")
            assert (await call(client, "list_doc_sources"))["sources"] == []
            assert "remove_doc_source" in {t.name for t in (await client.list_tools()).tools}

    try:
        with site_server(root) as base:
            run(functools.partial(main, base))
    finally:
        site_app.close()
