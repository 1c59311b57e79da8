"""Servers on 127.0.0.1 for tests over a real socket: an ASGI app under uvicorn in a thread (ephemeral port,
lifespan included), or a server command in a subprocess."""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import uvicorn


@contextlib.contextmanager
def live_server(app: Any) -> Iterator[str]:
    """Yields the base URL; stops the server on exit."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, name="uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


@contextlib.contextmanager
def live_process(
    command: list[str],
    env: dict[str, str] | None,
    log: Path,
    url: str,
    timeout: float = 120,
    *,
    health: str = "/healthz",
) -> Iterator[subprocess.Popen[bytes]]:
    """A server command as a subprocess (its output in `log`, run in log's folder); yields it once
    `url` + `health` answers 200 (llama-server: "/health"), then stops it with SIGTERM (and fails if it has to
    be killed). The benchmarks (bench/) start their servers with it too."""
    with log.open("w", encoding="utf-8") as out:
        proc = subprocess.Popen(command, env=env, cwd=log.parent, stdout=out, stderr=out)
    try:
        deadline = time.monotonic() + timeout
        while True:
            assert proc.poll() is None, f"exited {proc.returncode}: {log.read_text(encoding='utf-8')}"
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{url}{health}", timeout=5).status_code == 200:
                    break
            assert time.monotonic() < deadline, f"no answer in {timeout} s: {log.read_text(encoding='utf-8')}"
            time.sleep(0.2)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
            raise
