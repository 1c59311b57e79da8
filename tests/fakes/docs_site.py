"""A documentation site on a real socket: serves files from a folder with ETag / Last-Modified validators
and answers conditional requests with 304, logging every request (path, status, body bytes sent)."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.utils import formatdate, parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

CONTENT_TYPES = {
    ".md": "text/markdown; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
    ".html": "text/html; charset=utf-8",
}


@dataclass(frozen=True)
class Request:
    path: str
    status: int
    sent: int
    headers: dict[str, str]


@dataclass
class DocsSite:
    root: Path
    url: str = ""
    requests: list[Request] = field(default_factory=list)
    fail: dict[str, int] = field(default_factory=dict)  # path -> status to answer instead
    lastmod_only: set[str] = field(default_factory=set)  # paths served without an ETag

    def write(self, rel: str, text: str) -> str:
        """Write (or change) a file; its mtime moves forward so Last-Modified changes too. Returns its URL."""
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        existed = path.exists()
        path.write_text(text, encoding="utf-8")
        if existed:
            later = path.stat().st_mtime + 10
            os.utime(path, (later, later))
        return f"{self.url}/{rel}"

    def hits(self, path: str) -> list[Request]:
        return [r for r in self.requests if r.path == path]

    def clear(self) -> None:
        self.requests.clear()


def _handler(site: DocsSite) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def reply(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
            sent = b"" if status == 304 else body
            site.requests.append(Request(self.path, status, len(sent), dict(self.headers.items())))
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(sent)))
            self.end_headers()
            self.wfile.write(sent)

        def _unchanged(self, etag: str | None, mtime: int) -> bool:
            """If-None-Match decides when the page has an ETag; otherwise If-Modified-Since does."""
            if etag and self.headers.get("If-None-Match"):
                return self.headers["If-None-Match"] == etag
            since = self.headers.get("If-Modified-Since")
            return since is not None and parsedate_to_datetime(since).timestamp() >= mtime

        def do_GET(self) -> None:
            path = urlsplit(self.path).path
            if path in site.fail:
                self.reply(site.fail[path], b"failure on purpose")
                return
            file = (site.root / unquote(path).lstrip("/")).resolve()
            if not file.is_relative_to(site.root.resolve()) or not file.is_file():
                self.reply(404, b"not found")
                return
            body = file.read_bytes()
            mtime = int(file.stat().st_mtime)
            headers = {
                "Content-Type": CONTENT_TYPES.get(file.suffix, "application/octet-stream"),
                "Last-Modified": formatdate(mtime, usegmt=True),
            }
            etag = None if path in site.lastmod_only else f'"{hashlib.sha1(body).hexdigest()[:16]}"'
            if etag:
                headers["ETag"] = etag
            if self._unchanged(etag, mtime):
                self.reply(304, body, headers)
                return
            self.reply(200, body, headers)

    return Handler


@contextmanager
def serve_docs(root: Path) -> Iterator[DocsSite]:
    site = DocsSite(root)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(site))
    site.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
