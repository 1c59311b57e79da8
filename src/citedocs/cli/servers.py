"""`citedocs serve` and `citedocs mcp`: the long-running front ends, over the same library as every command."""

from __future__ import annotations

from typing import Annotated

import typer

from citedocs.cli.common import DbOption, console, run, settings_for


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
    auth: Annotated[
        str | None,
        typer.Option(
            "--auth", help="tokens: every request needs a token (citedocs token create); none: anyone."
        ),
    ] = None,
    no_auth: Annotated[
        bool, typer.Option("--no-auth", help="Serve a non-loopback address without tokens, on purpose.")
    ] = False,
    no_background_build: Annotated[
        bool,
        typer.Option(
            "--no-background-build",
            help="Do not build a native llama-server in the background when only the prebuilt one is "
            "installed (CITEDOCS_LLM_BACKGROUND_BUILD=off).",
        ),
    ] = False,
    db: DbOption = None,
) -> None:
    """HTTP API (/ask, /search, /healthz, /stats), MCP at /mcp and the web page at /."""
    from citedocs.cli.exits import exit_code_for
    from citedocs.errors import CitedocsError
    from citedocs.httpd import stop_normally_on_signals
    from citedocs.server import create_server

    stop_normally_on_signals()
    settings = settings_for(db)
    port = settings.port if port is None else port
    settings = settings.model_copy(update={"host": host or settings.host, "port": port})
    if read_only:
        settings = settings.model_copy(update={"read_only": True})
    if no_background_build:
        settings = settings.model_copy(update={"llm_background_build": "off"})
    if auth is not None:
        if auth not in ("none", "tokens"):
            console.print(f"[red]error:[/red] --auth must be tokens or none, not {auth!r}.", soft_wrap=True)
            raise typer.Exit(2)
        settings = settings.model_copy(update={"auth": auth})
    try:
        server = create_server(settings, folders=folder or (), read_only_tools=read_only, no_auth=no_auth)
    except CitedocsError as exc:  # one line, whatever the terminal's width
        console.print(f"[red]error:[/red] {exc}", soft_wrap=True)
        raise typer.Exit(exit_code_for(exc)) from None
    if server.note:
        console.print(f"note: {server.note}", soft_wrap=True)
    guarded = " with tokens" if settings.auth == "tokens" else ""
    ready = f"citedocs serving http://{server.shown}/ (MCP at /mcp){guarded}"
    server.serve(on_ready=lambda: console.print(ready, soft_wrap=True))


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
