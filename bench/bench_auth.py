"""What tokens cost per request: /healthz and /search through the real app with no auth, with a citedocs token
and with a single sign-on JWT (RS256, its issuer's key set already cached), interleaved in one run, plus the
token lookup and the JWT verification alone.

    .venv/bin/python bench/bench_auth.py [--requests 300]

The app runs in-process behind httpx's ASGI transport (no socket: the difference is the middleware and the
token lookup, which is what the goal "< 1 ms per request" is about). The issuer is a small HTTP server on
127.0.0.1 in this process, reached through the SSRF-guarded client once, before the timed requests.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import jwt
from _env import median, print_header
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from citedocs import access
from citedocs.api.app import create_app
from citedocs.service import Citedocs
from citedocs.settings import Settings


@contextmanager
def _issuer() -> Iterator[tuple[str, str]]:
    """An OIDC issuer on 127.0.0.1 with one RS256 key: (its URL, a token it signed for group `bench`)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = {**json.loads(RSAAlgorithm.to_jwk(key.public_key())), "kid": "k1", "use": "sig", "alg": "RS256"}
    docs: dict[str, object] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            data = json.dumps(docs[self.path]).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    docs["/.well-known/openid-configuration"] = {"issuer": url, "jwks_uri": f"{url}/jwks"}
    docs["/jwks"] = {"keys": [jwk]}
    claims = {
        "iss": url,
        "aud": "bench",
        "sub": "u1",
        "email": "bench@example.com",
        "groups": ["bench"],
        "exp": int(time.time()) + 3600,
    }
    token = jwt.encode(claims, key, algorithm="RS256", headers={"kid": "k1"})
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield url, token
    finally:
        server.shutdown()
        server.server_close()


async def _timed(client: httpx.AsyncClient, method: str, path: str, **kw: object) -> float:
    start = time.perf_counter()
    response = await client.request(method, path, **kw)  # type: ignore[arg-type]
    assert response.status_code == 200, response.text
    return (time.perf_counter() - start) * 1000


async def main(requests: int) -> None:
    print_header("auth overhead per request")
    with tempfile.TemporaryDirectory() as tmp, _issuer() as (issuer, jwt_token):
        docs = Path(tmp) / "docs"
        docs.mkdir()
        for i in range(50):
            (docs / f"n{i}.md").write_text(f"# Note {i}\n\nThe gateway {i} rotates keys every {i} days.\n")
        base = Settings(
            db=str(Path(tmp) / "i.sqlite3"), embedder="none", llm_base_url="http://127.0.0.1:9/v1"
        )
        sso = base.model_copy(
            update={
                "auth": "tokens",
                "oidc_issuer": issuer,
                "oidc_audience": "bench",
                "oidc_groups": "bench=ask",
                "allowed_private_hosts": ["127.0.0.1"],
            }
        )
        library = Citedocs(sso)  # the key set is fetched at the first JWT, below, before any timing
        library.add_folder(str(docs))
        library.index()
        secret, _ = library.create_token("bench", "ask")
        apps = {
            "none": create_app(base, library),
            "tokens": create_app(base.model_copy(update={"auth": "tokens"}), library),
            "sso": create_app(sso, library),
        }
        library.authenticate(jwt_token)
        headers = {
            "tokens": {"Authorization": f"Bearer {secret}", "Host": "127.0.0.1"},
            "sso": {"Authorization": f"Bearer {jwt_token}", "Host": "127.0.0.1"},
            "none": {"Host": "127.0.0.1"},
        }
        times: dict[tuple[str, str], list[float]] = {}
        clients = {
            name: httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1")
            for name, app in apps.items()
        }
        for _ in range(requests):
            for name, client in clients.items():
                for route in ("/healthz", "/search"):
                    kw = {"json": {"query": "gateway rotates keys"}} if route == "/search" else {}
                    method = "POST" if route == "/search" else "GET"
                    ms = await _timed(client, method, route, headers=headers[name], **kw)
                    times.setdefault((name, route), []).append(ms)
        for client in clients.values():
            await client.aclose()
        lookups: dict[str, list[float]] = {"token": [], "jwt": []}
        for _ in range(requests):
            for kind, presented in (("token", secret), ("jwt", jwt_token)):
                start = time.perf_counter()
                library.authenticate(presented)
                lookups[kind].append((time.perf_counter() - start) * 1000)
        library.close()
    print(f"{'route':10} {'no auth P50':>12} {'token P50':>12} {'added':>8} {'JWT P50':>12} {'added':>8}")
    for route in ("/healthz", "/search"):
        a, b, c = (median(times[(name, route)]) for name in ("none", "tokens", "sso"))
        print(f"{route:10} {a:10.3f}ms {b:10.3f}ms {b - a:+7.3f}ms {c:10.3f}ms {c - a:+7.3f}ms")
    print(f"token lookup alone (hash + indexed SELECT): P50 {statistics.median(lookups['token']):.3f} ms")
    print(f"JWT verification alone (RS256, cached keys): P50 {statistics.median(lookups['jwt']):.3f} ms")
    _ = access  # the principal type the middleware sets


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=300)
    asyncio.run(main(parser.parse_args().requests))
