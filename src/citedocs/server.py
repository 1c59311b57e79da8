"""`create_server(settings)`: everything `citedocs serve` runs, bound and ready, as `create_app` is the HTTP API.

It composes two front ends (api/ and mcp/, which import neither each other nor this), so it is a layer of its own
between them and the CLI.

The socket is bound first (a busy port is one error, before anything loads), then the library: registered
folders watched and indexed in the background, the embedding model loading, the HTTP API with MCP at /mcp behind
one Host/Origin allow-list (citedocs/hosts.py). `serve()` answers until SIGTERM or Ctrl-C and announces itself
beside the index meanwhile, so CLI calls on the same index ask it (cli/remote.py).
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from citedocs.announce import announce
from citedocs.api.app import create_app
from citedocs.hosts import allowed_hosts, allowed_origins, bind_name, loopback_only
from citedocs.httpd import bind, refuse_open_without_auth, serve
from citedocs.service import Citedocs
from citedocs.settings import Settings
from citedocs.store import is_postgres

__all__ = ["Server", "create_server"]


@dataclass
class Server:
    """A bound, set-up `citedocs serve`: `serve()` runs it; `close()` releases what `create_server` took."""

    settings: Settings
    library: Citedocs
    app: Any  # the ASGI app: the HTTP API with MCP mounted at /mcp
    sock: socket.socket
    url: str  # where clients on this machine reach it
    shown: str  # what `serving …` prints: the bind address and the bound port
    note: str | None  # what an operator should know about who is answered (None on a loopback bind)

    def serve(self, on_ready: Callable[[], None] = lambda: None) -> None:
        """Answer until SIGTERM or Ctrl-C, then close."""
        db = None if is_postgres(self.settings.db) else self.settings.db_path
        try:
            with announce(db, self.url):
                serve(self.app, self.sock, self.settings, on_ready=on_ready)
        finally:
            self.close()

    def close(self) -> None:
        self.library.close()  # waits for a model load or background job still running
        self.sock.close()


def create_server(
    settings: Settings, *, folders: Sequence[str] = (), read_only_tools: bool = False, no_auth: bool = False
) -> Server:
    """Bind `settings.host`:`settings.port`, open the index, register `folders` and start watching, indexing
    (unless `index_on_start` is off) and loading the embedding model. `read_only_tools` hides the MCP tools
    that change what is registered (`serve --read-only`). A non-loopback bind without tokens is refused unless
    `no_auth` says it is meant."""
    from mcp.server.transport_security import TransportSecuritySettings

    from citedocs.answer.engine import AnswerEngine
    from citedocs.llm import native
    from citedocs.llm.model import ModelHandle
    from citedocs.mcp import http_app

    refuse_open_without_auth(settings.host, settings.auth, no_auth)
    sock = bind(settings.host, settings.port)
    try:
        library = Citedocs(settings)
    except BaseException:
        sock.close()
        raise
    try:
        for path in folders:
            library.add_folder(path)
        library.start_watching(catch_up=not settings.index_on_start)  # first: no change is missed meanwhile
        if settings.index_on_start:
            library.index_in_background()
        library.start_model()
        hosts = allowed_hosts(settings.mcp_allowed_hosts, bind_host=settings.host)
        security = TransportSecuritySettings(allowed_hosts=hosts, allowed_origins=allowed_origins(hosts))
        # one warm model for the process: POST /ask, the page and MCP `ask` on /mcp all answer through it
        model = ModelHandle.from_settings(settings)
        if (pid := native.start_background_build(settings)) is not None:
            native.note(
                f"building a native llama-server in the background (pid {pid}, nice 19; `citedocs status` shows "
                "its progress; CITEDOCS_LLM_BACKGROUND_BUILD=off turns this off); the prebuilt one answers until "
                "it is ready"
            )
        engine = AnswerEngine(library, model)
        mcp_app = http_app(
            library, read_only_tools, host=settings.host, path="/", security=security, engine=engine
        )
        app = create_app(settings, library, extra_mounts={"/mcp": mcp_app}, hosts=hosts, model=model)
    except BaseException:
        library.close()
        sock.close()
        raise
    bound = int(sock.getsockname()[1])
    name = bind_name(settings.host)
    shown = f"{'[' + settings.host + ']' if ':' in settings.host else settings.host}:{bound}"
    note = None
    if not loopback_only(settings.host) and not settings.mcp_allowed_hosts:
        which = "127.0.0.1 or localhost" + (f" or {name}" if name else "")
        note = (
            f"only requests whose Host header is {which} are answered; set CITEDOCS_MCP_ALLOWED_HOSTS to the "
            "names clients use."
        )
    return Server(settings, library, app, sock, f"http://{name or '127.0.0.1'}:{bound}", shown, note)
