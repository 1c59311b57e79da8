"""The HTTP server under `citedocs serve`: a keep-alive response is sent at once, not held back by Nagle.

Before TCP_NODELAY was set on accepted connections, every response on a kept-alive connection waited ~40 ms
(the body write sat behind the head until the client's delayed ACK), so the fastest of many `/healthz` round
trips was ~40 ms; with it, ~1-2 ms on loopback.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx


def test_keep_alive_round_trips_are_not_delayed_by_nagle(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    env = {**os.environ, "CITEDOCS_DB": str(tmp_path / "index.sqlite3"), "CITEDOCS_EMBEDDER": "none"}
    with log.open("w", encoding="utf-8") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "citedocs", "serve", "--port", "0"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 120
        while not (
            found := re.search(r"serving http://127\.0\.0\.1:(\d+)/", log.read_text(encoding="utf-8"))
        ):
            assert proc.poll() is None, log.read_text(encoding="utf-8")
            assert time.monotonic() < deadline, log.read_text(encoding="utf-8")
            time.sleep(0.05)
        with httpx.Client(
            base_url=f"http://127.0.0.1:{found.group(1)}"
        ) as client:  # one kept-alive connection
            client.get("/healthz").raise_for_status()
            times = []
            for _ in range(20):
                start = time.perf_counter()
                for path in ("/healthz", "/stats"):
                    client.get(path).raise_for_status()
                times.append((time.perf_counter() - start) / 2)
        assert min(times) < 0.015, (
            f"fastest keep-alive round trip {min(times) * 1000:.1f} ms (Nagle waits 40)"
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
