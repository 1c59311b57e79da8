"""api/headers.py: every route of `citedocs serve` (the page, the API, /docs, /static, /mcp) carries the
security headers, refusals included, and answers HEAD wherever it answers GET."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.routing import Mount

from citedocs.api import create_app
from citedocs.api.headers import CONTENT_SECURITY_POLICY, SECURITY_HEADERS
from citedocs.mcp.transports import http_app
from citedocs.service import Citedocs
from citedocs.settings import Settings
from fakes.live_server import live_server

PATH_VALUES = {"name": "models", "job_id": "1", "source": "docs"}


def assert_secured(response: httpx.Response) -> None:
    for name, value in SECURITY_HEADERS.items():
        assert response.headers.get(name) == value, (response.request.method, response.url, name)


def get_paths(routes: list[Any]) -> list[str]:
    """Every path routed for GET, through included routers (FastAPI keeps them as `original_router`)."""
    out = []
    for route in routes:
        if hasattr(route, "original_router"):
            out += get_paths(route.original_router.routes)
        elif "GET" in (getattr(route, "methods", None) or ()):
            out.append(route.path)
    return out


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, list[str]]]:
    """The app as `citedocs serve` builds it, /mcp mounted, on a real socket; with the GET paths it routes."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nThe server listens on port 8765.\n", encoding="utf-8")
    library = Citedocs(Settings(db=str(tmp_path / "index.sqlite3"), embedder="none"))
    library.add_folder(docs)
    library.index()
    api = create_app(library.settings, library, None, extra_mounts={"/mcp": http_app(library, path="/")})
    gets = [
        re.sub(r"\{(\w+)\}", lambda m: PATH_VALUES.get(m.group(1), "x"), path)
        for path in get_paths(api.routes)
    ]
    assert {"/", "/docs", "/openapi.json", "/status", "/healthz", "/read", "/help/models"} <= set(gets)
    assert any(isinstance(r, Mount) and r.path == "/mcp" for r in api.routes)
    try:
        with live_server(api) as url:
            yield url, gets
    finally:
        library.close()


def test_every_get_route_carries_the_headers_and_answers_head_alike(served: tuple[str, list[str]]) -> None:
    url, gets = served
    extra = ["/static/app.js", "/static/style.css", "/docs/assets/swagger-ui-bundle.js", "/nowhere"]
    with httpx.Client(base_url=url) as client:
        for path in [*gets, *extra]:
            got = client.get(path)
            head = client.head(path)
            assert_secured(got)
            assert_secured(head)
            assert head.status_code == got.status_code, path
            assert head.content == b""
            assert head.headers.get("content-type") == got.headers.get("content-type"), path
        assert client.head("/").status_code == 200  # was 405
        page = client.get("/")
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
        assert not re.search(r"<script(?![^>]*\bsrc=)", page.text) and "<style" not in page.text
        assert " style=" not in page.text  # nothing the policy would block
        docs = client.get("/docs")
        assert "cdn" not in docs.text.lower() and "<script>" not in docs.text


def test_posts_errors_refusals_and_mcp_carry_the_headers(served: tuple[str, list[str]]) -> None:
    url, _ = served
    with httpx.Client(base_url=url) as client:
        assert_secured(client.post("/search", json={"query": "port"}))
        assert_secured(client.post("/ask", json={"question": ""}))  # 422
        assert_secured(client.post("/search", content=b"{", headers={"Content-Type": "application/json"}))
        foreign = client.get("/status", headers={"Host": "evil.example"})
        assert foreign.status_code >= 400
        assert_secured(foreign)
        hello = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        mcp = client.post("/mcp", json=hello, headers={"Accept": "application/json, text/event-stream"})
        assert mcp.status_code == 200
        assert_secured(mcp)
        for method in ("GET", "HEAD"):
            bare = client.request(method, "/mcp")
            assert bare.status_code < 500
            assert_secured(bare)


def test_the_policy_allows_only_this_server() -> None:
    assert "'unsafe-inline'" not in CONTENT_SECURITY_POLICY and "'unsafe-eval'" not in CONTENT_SECURITY_POLICY
    assert "http" not in CONTENT_SECURITY_POLICY  # no CDN or other host
