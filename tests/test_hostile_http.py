"""`citedocs serve` as a hostile client meets it: a real subprocess on a free port, raw sockets and httpx.

DNS rebinding (a foreign Host or Origin on every route), NUL bytes in names, a trickled body, a thousand
half-sent requests, a busy port and SIGTERM. Bounded loops on loopback only; the server's slow-client
deadlines are set to 1 s so the cuts come within a few seconds.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

ROUTES = [
    "/",
    "/ask",
    "/search",
    "/stats",
    "/healthz",
    "/mcp",
    "/mcp/",
    "/static/app.js",
    "/docs",
    "/openapi.json",
]
BODIES: dict[str, Any] = {
    "/ask": {"question": "Which port does the server listen on?"},
    "/search": {"query": "listens port"},
}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "hostile", "version": "1"},
    },
}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
DOC_TEXT = "listens on port 8765"


def serve_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "citedocs", "serve", *args]


def start(tmp_path: Path, *args: str, **env: str) -> tuple[subprocess.Popen[str], Path]:
    log = tmp_path / f"serve-{time.monotonic_ns()}.log"
    full_env = {
        **os.environ,
        "CITEDOCS_DB": str(tmp_path / "index.sqlite3"),
        "CITEDOCS_EMBEDDER": "none",
        "CITEDOCS_HTTP_HEADER_TIMEOUT_S": "1",
        "CITEDOCS_HTTP_BODY_TIMEOUT_S": "1",
        **env,
    }
    with log.open("w", encoding="utf-8") as out:
        proc = subprocess.Popen(
            serve_command(*args), env=full_env, stdout=out, stderr=subprocess.STDOUT, text=True
        )
    return proc, log


def wait_serving(proc: subprocess.Popen[str], log: Path, timeout: float = 120) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := re.search(r"serving http://127\.0\.0\.1:(\d+)/", log.read_text(encoding="utf-8")):
            return int(found.group(1))
        assert proc.poll() is None, f"exited {proc.returncode}: {log.read_text(encoding='utf-8')}"
        time.sleep(0.1)
    raise AssertionError(f"no 'serving' line in {timeout} s: {log.read_text(encoding='utf-8')}")


def stop(proc: subprocess.Popen[str]) -> int:
    proc.send_signal(signal.SIGTERM)
    return proc.wait(30)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    tmp_path = tmp_path_factory.mktemp("hostile")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "install.md").write_text(
        f"# Installation\n\nThe server {DOC_TEXT} by default.\n", encoding="utf-8"
    )
    proc, log = start(tmp_path, "--port", "0", "--folder", str(docs))
    port = wait_serving(proc, log)
    deadline = time.monotonic() + 60
    while "install.md" not in httpx.post(f"http://127.0.0.1:{port}/search", json=BODIES["/search"]).text:
        assert time.monotonic() < deadline, "the folder was not indexed"
        time.sleep(0.2)
    yield f"http://127.0.0.1:{port}", port
    code = stop(proc)
    output = log.read_text(encoding="utf-8")
    assert code == 0 and "Traceback" not in output and "terminate called" not in output, output


def request(url: str, route: str, headers: dict[str, str]) -> httpx.Response:
    if route.startswith("/mcp"):
        return httpx.post(url + route, json=INITIALIZE, headers={**MCP_HEADERS, **headers})
    if route in BODIES:
        return httpx.post(url + route, json=BODIES[route], headers=headers)
    return httpx.get(url + route, headers=headers)


@pytest.mark.parametrize("route", ROUTES)
def test_a_foreign_host_is_refused_on_every_route(server: tuple[str, int], route: str) -> None:
    url, _ = server
    response = request(url, route, {"host": "evil.com", "origin": "http://evil.com"})
    assert response.status_code == 421, response.text
    error = response.json()["error"]
    assert error["code"] == "host_not_allowed" and "CITEDOCS_MCP_ALLOWED_HOSTS" in error["hint"]
    assert DOC_TEXT not in response.text and "location" not in response.headers


@pytest.mark.parametrize("route", ROUTES)
def test_a_foreign_origin_is_refused_on_every_route(server: tuple[str, int], route: str) -> None:
    url, port = server
    response = request(url, route, {"host": f"127.0.0.1:{port}", "origin": "http://evil.com"})
    assert response.status_code == 403, response.text
    assert response.json()["error"]["code"] == "origin_not_allowed" and DOC_TEXT not in response.text


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "127.0.0.1", "localhost"])
@pytest.mark.parametrize("route", ROUTES)
def test_loopback_names_are_served_on_every_route(server: tuple[str, int], route: str, host: str) -> None:
    url, port = server
    name = host.format(port=port)
    response = request(url, route, {"host": name, "origin": f"http://{name}"})
    assert response.status_code == (503 if route == "/ask" else 200), response.text  # /ask: no model here
    if route == "/search":
        assert "install.md" in response.text


@pytest.mark.parametrize("route", ["/mcp", "/mcp/"])
def test_mcp_answers_at_both_paths_without_a_redirect(server: tuple[str, int], route: str) -> None:
    url, _ = server
    response = httpx.post(url + route, json=INITIALIZE, headers=MCP_HEADERS, follow_redirects=False)
    assert response.status_code == 200 and "location" not in response.headers
    assert "citedocs" in response.text


@pytest.mark.parametrize(
    ("route", "field"), [("/search", "source"), ("/search", "file_type"), ("/ask", "source")]
)
def test_nul_bytes_in_names_are_a_422_that_says_what_to_send(
    server: tuple[str, int], route: str, field: str
) -> None:
    url, _ = server
    response = httpx.post(url + route, json={**BODIES[route], field: "docs\x00/../etc"})
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_input" and field in error["message"]
    assert "control characters" in error["message"]


def test_a_trickled_body_is_cut_with_408(server: tuple[str, int]) -> None:
    _, port = server
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(
            b"POST /search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 200\r\n\r\n{"
        )
        sock.settimeout(0.2)
        received = b""
        for _ in range(100):  # a byte every 0.2 s: 20 s unless cut
            try:
                sock.sendall(b" ")
                chunk = sock.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                break
            if not chunk:
                break
            received += chunk
        else:
            pytest.fail("the trickled body was still being read after 20 s")
    assert received.startswith(b"HTTP/1.1 408"), received
    assert b"CITEDOCS_HTTP_BODY_TIMEOUT_S" in received


def test_a_thousand_half_sent_requests_are_all_cut(server: tuple[str, int]) -> None:
    url, port = server
    socks = []
    try:
        for n in range(1000):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(b"GET /stats HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Half: " + str(n).encode())
            sock.setblocking(False)
            socks.append(sock)
        still_open = set(range(len(socks)))
        for _ in range(200):  # 20 s at most
            for n in list(still_open):
                try:
                    if socks[n].recv(64) == b"":
                        still_open.discard(n)
                except BlockingIOError:
                    pass
                except OSError:
                    still_open.discard(n)
            if not still_open:
                break
            time.sleep(0.1)
        assert not still_open, f"{len(still_open)} of 1000 half-sent requests still held after 20 s"
    finally:
        for sock in socks:
            sock.close()
    assert httpx.get(url + "/healthz").status_code == 200


def test_a_busy_port_is_one_line_naming_port_and_never_says_serving(
    server: tuple[str, int], tmp_path: Path
) -> None:
    _, port = server
    proc, log = start(tmp_path, "--port", str(port))
    assert proc.wait(120) == 1
    output = log.read_text(encoding="utf-8").strip()
    assert len(output.splitlines()) == 1 and "--port" in output and f"Port {port}" in output, output
    assert "serving" not in output and "Traceback" not in output


def test_sigterm_while_the_model_loads_exits_0(tmp_path: Path) -> None:
    proc, log = start(tmp_path, "--port", "0", CITEDOCS_EMBEDDER="local")
    wait_serving(proc, log)
    code = stop(proc)
    output = log.read_text(encoding="utf-8")
    assert code == 0 and "terminate called" not in output and "Traceback" not in output, output
