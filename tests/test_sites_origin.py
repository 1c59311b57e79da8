"""`CITEDOCS_SITES_SAME_ORIGIN`: with it on, nothing outside a registered llms.txt's origin and directory is
requested, whether the llms.txt lists it or a page on the site redirects to it; with it off (the default),
listed links to other origins are fetched and redirects followed (each hop SSRF-checked), as docs/sites.md says.
Two real HTTP servers on 127.0.0.1 (two ports: two origins)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from citedocs.errors import UnsafeURLError
from citedocs.service import Citedocs
from citedocs.settings import Settings


class Origin:
    """A server that answers `pages` (path -> markdown, or ("redirect", URL)) and records every path asked."""

    def __init__(self, pages: dict[str, str | tuple[str, str]]) -> None:
        self.pages = pages
        self.asked: list[str] = []
        origin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                origin.asked.append(self.path)
                page = origin.pages.get(self.path)
                if isinstance(page, tuple):
                    self.send_response(302)
                    self.send_header("Location", page[1])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = (page or "not found").encode()
                self.send_response(200 if page is not None else 404)
                self.send_header("Content-Type", "text/markdown; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    @contextlib.contextmanager
    def running(self) -> Iterator[Origin]:
        thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.server.shutdown()
            self.server.server_close()


@pytest.fixture
def origins() -> Iterator[tuple[Origin, Origin]]:
    other = Origin(
        {
            "/elsewhere.md": "# Elsewhere\n\nThe okapi lives elsewhere.\n",
            "/secret.md": "# Secret\n\nThe redirect target.\n",
        }
    )
    site = Origin({})
    site.pages.update(
        {
            "/docs/llms.txt": f"# Docs\n\n- [Inside]({site.url}/docs/inside.md): here\n"
            f"- [Elsewhere]({other.url}/elsewhere.md): another origin\n"
            f"- [Jump]({site.url}/docs/jump.md): redirects away\n",
            "/docs/inside.md": "# Inside\n\nThe heron is inside.\n",
            "/docs/jump.md": ("redirect", f"{other.url}/secret.md"),
            "/docs/hop.md": ("redirect", f"{site.url}/docs/inside.md"),
        }
    )
    with site.running(), other.running():
        yield site, other


def library(tmp_path: Path, **options: object) -> Citedocs:
    settings = Settings(
        db=str(tmp_path / "index.sqlite3"), embedder="none", allowed_private_hosts=["127.0.0.1"], **options
    )  # type: ignore[arg-type]
    return Citedocs(settings)


def test_by_default_listed_links_elsewhere_and_redirects_are_followed(
    tmp_path: Path, origins: tuple[Origin, Origin]
) -> None:
    site, other = origins
    app = library(tmp_path)
    try:
        app.sites.add("docs", f"{site.url}/docs/llms.txt")
        assert "okapi" in app.sites.fetch(f"{other.url}/elsewhere.md").markdown
        assert "redirect target" in app.sites.fetch(f"{site.url}/docs/jump.md").markdown
    finally:
        app.close()
    assert other.asked == ["/elsewhere.md", "/secret.md"]


def test_same_origin_refuses_listed_links_elsewhere_and_redirects_away(
    tmp_path: Path, origins: tuple[Origin, Origin]
) -> None:
    site, other = origins
    app = library(tmp_path, sites_same_origin=True)
    try:
        app.sites.add("docs", f"{site.url}/docs/llms.txt")
        assert "heron" in app.sites.fetch(f"{site.url}/docs/inside.md").markdown
        assert "heron" in app.sites.fetch(f"{site.url}/docs/hop.md").markdown  # a redirect inside is fine
        with pytest.raises(UnsafeURLError, match="outside"):
            app.sites.fetch(f"{other.url}/elsewhere.md")
        with pytest.raises(UnsafeURLError, match="outside"):
            app.sites.fetch(f"{site.url}/docs/jump.md")
        app.sites.refresh("docs")  # revalidation keeps to the same rule
    finally:
        app.close()
    assert other.asked == []  # nothing was ever requested from the other origin
