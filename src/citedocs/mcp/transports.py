"""Serving the MCP server: stdio for desktop clients, streamable HTTP for everything else.

One Citedocs (and so one loaded embedding model) serves every HTTP session. HTTP binds 127.0.0.1 by default
and checks Host and Origin against the loopback names with the bound port, so a web page cannot reach it
through DNS rebinding.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING

from citedocs.hosts import allowed_hosts as hosts_for
from citedocs.hosts import allowed_origins
from citedocs.httpd import bind
from citedocs.mcp.early import run_stdio, start_background

if TYPE_CHECKING:
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette

    from citedocs.answer.engine import AnswerEngine
    from citedocs.service import Citedocs
    from citedocs.settings import Settings

__all__ = ["http_app", "main", "run_http", "run_stdio", "start_background", "transport_security"]


def transport_security(
    port: int | None, host: str = "127.0.0.1", allowed_hosts: Sequence[str] = ()
) -> TransportSecuritySettings:
    """Host/Origin allow-lists (citedocs/hosts.py): loopback names and the bind address's with `port` (any port
    when None), plus `allowed_hosts`."""
    from mcp.server.transport_security import TransportSecuritySettings

    hosts = hosts_for(allowed_hosts, bind_host=host, port=port)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=allowed_origins(hosts)
    )


def http_app(
    app: Citedocs,
    read_only: bool = False,
    *,
    port: int | None = None,
    host: str = "127.0.0.1",
    path: str = "/mcp",
    allowed_hosts: Sequence[str] = (),
    max_chars: int | None = None,
    security: TransportSecuritySettings | None = None,
    engine: AnswerEngine | None = None,
) -> Starlette:
    """An ASGI app serving streamable HTTP MCP at `path`; `security` replaces the Host/Origin lists built
    from `port`, `host` and `allowed_hosts` (`citedocs serve` passes the ones its API checks).

    Mounted inside another app, its lifespan must run too (Starlette does not run a mounted app's):
    enter `mcp_app.router.lifespan_context(mcp_app)` in the outer app's lifespan.
    """
    from citedocs.mcp.tools import build_server

    server = build_server(app, read_only=read_only, max_chars=max_chars, engine=engine)
    asgi = server.streamable_http_app(
        streamable_http_path=path,
        transport_security=security or transport_security(port, host, allowed_hosts),
        host=host,
    )
    sessions = asgi.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(inner: Starlette) -> AsyncIterator[None]:
        async with sessions(inner):
            try:
                yield
            finally:
                close = getattr(server, "answers_close", None)  # a model `ask` started for this server
                if close is not None:
                    await close()

    asgi.router.lifespan_context = lifespan
    return asgi


def run_http(
    settings: Settings,
    host: str | None = None,
    port: int | None = None,
    read_only: bool = False,
    allowed_hosts: Sequence[str] = (),
) -> None:
    """A standalone streamable-HTTP MCP server at http://HOST:PORT/mcp until SIGTERM or Ctrl-C (exit 0).
    Extra Host names: `allowed_hosts`, else `settings.mcp_allowed_hosts`."""
    from citedocs.httpd import serve, stop_normally_on_signals
    from citedocs.service import Citedocs

    stop_normally_on_signals()
    host = host or settings.host
    sock = bind(host, settings.port if port is None else port)
    bound_port = int(sock.getsockname()[1])
    app = Citedocs(settings)
    try:
        start_background(app)
        extra = list(allowed_hosts) or settings.mcp_allowed_hosts
        asgi = http_app(app, read_only, port=bound_port, host=host, allowed_hosts=extra)
        shown = f"[{host}]" if ":" in host else host
        serve(
            asgi,
            sock,
            settings,
            on_ready=lambda: print(
                f"citedocs MCP server on http://{shown}:{bound_port}/mcp", file=sys.stderr, flush=True
            ),
        )
    finally:
        app.close()  # waits for a model load or background job still running (see Citedocs.close)
        sock.close()


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m citedocs.mcp`: the same server `citedocs mcp` runs."""
    parser = argparse.ArgumentParser(prog="python -m citedocs.mcp", description="citedocs MCP server.")
    parser.add_argument("--db", help="Index file (default: platform data dir; env CITEDOCS_DB).")
    parser.add_argument("--read-only", action="store_true", help="Hide the tools that change the registry.")
    parser.add_argument("--http", action="store_true", help="Serve streamable HTTP instead of stdio.")
    parser.add_argument("--host", default=None, help="HTTP bind address (default 127.0.0.1).")
    parser.add_argument(
        "--port", type=int, default=None, help="HTTP port (default 8765; 0 picks a free one)."
    )
    parser.add_argument("--allow-host", action="append", default=[], help="Extra allowed Host name (HTTP).")
    args = parser.parse_args(argv)

    from citedocs.errors import CitedocsError
    from citedocs.settings import Settings

    try:
        settings = Settings(db=args.db) if args.db else Settings()
        if args.http:
            run_http(settings, args.host, args.port, args.read_only, args.allow_host)
        else:
            run_stdio(settings, args.read_only)
    except CitedocsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0
