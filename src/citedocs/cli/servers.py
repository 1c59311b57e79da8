"""`citedocs serve` and `citedocs mcp`: the long-running front ends, over the same library as every command."""

from __future__ import annotations

from functools import partial
from typing import Annotated

import typer

from citedocs.cli.common import DbOption, console, run, settings_for

LOOPBACK_OR_ANY = (
    "0.0.0.0",
    "::",
    "127.0.0.1",
    "localhost",
    "::1",
)  # binds that add no Host name of their own


def serve(
    folder: Annotated[
        list[str] | None, typer.Option("--folder", help="Register and index this folder first.")
    ] = None,
    host: Annotated[str | None, typer.Option("--host", help="Bind address (default 127.0.0.1).")] = None,
    port: Annotated[
        int | None, typer.Option("--port", help="Port (default 8765; 0 picks a free one).")
    ] = None,
    read_only: Annotated[
        bool,
        typer.Option(
            "--read-only", help="MCP without registry-changing tools; the page cannot change sources."
        ),
    ] = False,
    db: DbOption = None,
) -> None:
    """HTTP API (/ask, /search, /healthz, /stats), MCP at /mcp and the web page at /."""
    from mcp.server.transport_security import TransportSecuritySettings

    from citedocs.answer.engine import AnswerEngine
    from citedocs.api.app import create_app
    from citedocs.api.guard import allowed_hosts, allowed_origins
    from citedocs.cli.common import exit_code_for
    from citedocs.cli.remote import announce
    from citedocs.errors import CitedocsError
    from citedocs.httpd import bind, serve
    from citedocs.httpd import stop_normally_on_signals as stop_normally
    from citedocs.llm.model import ModelHandle
    from citedocs.mcp import http_app
    from citedocs.service import Citedocs

    stop_normally()
    settings = settings_for(db)
    settings = settings.model_copy(update={"host": host or settings.host,
                                           "port": settings.port if port is None else port})  # fmt: skip
    if read_only:
        settings = settings.model_copy(update={"read_only": True})
    try:
        sock = bind(settings.host, settings.port)
    except CitedocsError as exc:  # one line, whatever the terminal's width
        console.print(f"[red]error:[/red] {exc}", soft_wrap=True)
        raise typer.Exit(exit_code_for(exc)) from None
    bound = int(sock.getsockname()[1])
    try:
        library = run(partial(Citedocs, settings))
    except BaseException:
        sock.close()
        raise
    try:
        for path in folder or []:
            run(partial(library.add_folder, path))
        library.start_watching(catch_up=not settings.index_on_start)  # first: no change is missed meanwhile
        if settings.index_on_start:
            library.index_in_background()
        library.start_model()
        shown = f"[{settings.host}]" if ":" in settings.host else settings.host
        names = [*settings.mcp_allowed_hosts, *([] if settings.host in LOOPBACK_OR_ANY else [shown])]
        hosts = allowed_hosts(names)
        security = TransportSecuritySettings(allowed_hosts=hosts, allowed_origins=allowed_origins(hosts))
        # one warm model for the process: POST /ask, the page and MCP `ask` on /mcp all answer through it
        model = ModelHandle.from_settings(settings)
        engine = AnswerEngine(library, model)
        mcp_app = http_app(library, read_only, host=settings.host, path="/", security=security, engine=engine)
        api = create_app(settings, library, extra_mounts={"/mcp": mcp_app}, hosts=hosts, model=model)
        if settings.host not in ("127.0.0.1", "localhost", "::1") and not settings.mcp_allowed_hosts:
            which = "127.0.0.1 or localhost" + ("" if settings.host in LOOPBACK_OR_ANY else f" or {shown}")
            console.print(f"note: only requests whose Host header is {which} are answered; set "
                          "CITEDOCS_MCP_ALLOWED_HOSTS to the names clients use.", soft_wrap=True)  # fmt: skip
        local = "127.0.0.1" if settings.host in LOOPBACK_OR_ANY else shown
        sqlite_db = None if settings.db.startswith(("postgresql://", "postgres://")) else settings.db_path
        with announce(sqlite_db, f"http://{local}:{bound}"):  # CLI calls on this index then ask this server
            serve(api, sock, settings, on_ready=lambda: console.print(
                f"citedocs serving http://{shown}:{bound}/ (MCP at /mcp)", soft_wrap=True))  # fmt: skip
    finally:
        library.close()  # waits for a model load or background job still running
        sock.close()


def mcp(
    read_only: Annotated[
        bool, typer.Option("--read-only", help="Hide tools that change what is registered.")
    ] = False,
    http: Annotated[bool, typer.Option("--http", help="Serve streamable HTTP instead of stdio.")] = False,
    host: Annotated[str | None, typer.Option("--host", help="HTTP bind address (default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option("--port", help="HTTP port (default CITEDOCS_PORT).")] = None,
    db: DbOption = None,
) -> None:
    """Run the MCP server (stdio by default) with both tool sets: folders and llms.txt sites."""
    settings = settings_for(db)
    if http:
        from citedocs.mcp.transports import run_http

        run(lambda: run_http(settings, host=host, port=port, read_only=read_only))
    else:
        from citedocs.mcp.early import run_stdio  # answers the handshake before the SDK is imported

        run(lambda: run_stdio(settings, read_only=read_only))


def register(app: typer.Typer) -> None:
    """Add the server commands to the `citedocs` app."""
    app.command()(serve)
    app.command()(mcp)
