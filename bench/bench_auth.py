"""What tokens cost per request: /healthz and /search through the real app with and without `CITEDOCS_AUTH=tokens`,
interleaved in one run, plus the token lookup alone.

    .venv/bin/python bench/bench_auth.py [--requests 300]

The app runs in-process behind httpx's ASGI transport (no socket: the difference is the middleware and the
token lookup, which is what the goal "< 1 ms per request" is about).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import httpx
from _env import median, print_header

from citedocs import access
from citedocs.api.app import create_app
from citedocs.service import Citedocs
from citedocs.settings import Settings


async def _timed(client: httpx.AsyncClient, method: str, path: str, **kw: object) -> float:
    start = time.perf_counter()
    response = await client.request(method, path, **kw)  # type: ignore[arg-type]
    assert response.status_code == 200, response.text
    return (time.perf_counter() - start) * 1000


async def main(requests: int) -> None:
    print_header("auth overhead per request")
    with tempfile.TemporaryDirectory() as tmp:
        docs = Path(tmp) / "docs"
        docs.mkdir()
        for i in range(50):
            (docs / f"n{i}.md").write_text(f"# Note {i}\n\nThe gateway {i} rotates keys every {i} days.\n")
        base = Settings(
            db=str(Path(tmp) / "i.sqlite3"), embedder="none", llm_base_url="http://127.0.0.1:9/v1"
        )
        library = Citedocs(base)
        library.add_folder(str(docs))
        library.index()
        secret, _ = library.create_token("bench", "ask")
        apps = {
            "none": create_app(base, library),
            "tokens": create_app(base.model_copy(update={"auth": "tokens"}), library),
        }
        headers = {
            "tokens": {"Authorization": f"Bearer {secret}", "Host": "127.0.0.1"},
            "none": {"Host": "127.0.0.1"},
        }
        times: dict[tuple[str, str], list[float]] = {}
        clients = {name: httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1")
                   for name, app in apps.items()}  # fmt: skip
        for _ in range(requests):
            for name, client in clients.items():
                for route in ("/healthz", "/search"):
                    kw = {"json": {"query": "gateway rotates keys"}} if route == "/search" else {}
                    method = "POST" if route == "/search" else "GET"
                    ms = await _timed(client, method, route, headers=headers[name], **kw)
                    times.setdefault((name, route), []).append(ms)
        for client in clients.values():
            await client.aclose()
        lookups = []
        for _ in range(requests):
            start = time.perf_counter()
            library.authenticate(secret)
            lookups.append((time.perf_counter() - start) * 1000)
        library.close()
    print(f"{'route':10} {'no auth P50':>12} {'tokens P50':>12} {'added':>8}")
    for route in ("/healthz", "/search"):
        a, b = median(times[("none", route)]), median(times[("tokens", route)])
        print(f"{route:10} {a:10.3f}ms {b:10.3f}ms {b - a:+7.3f}ms")
    print(f"token lookup alone (hash + indexed SELECT): P50 {statistics.median(lookups):.3f} ms")
    _ = access  # the principal type the middleware sets


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=300)
    asyncio.run(main(parser.parse_args().requests))
