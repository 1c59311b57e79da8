"""`citedocs search` answered by a running `citedocs serve`, and `citedocs mcp` started, before typer and rich.

The full CLI (typer, rich, pydantic settings, the library) costs about a second to import on 2 cores; a search
that a warm server answers needs none of it. `fast_search` reads the arguments and the index path itself, asks
the server, and prints what the full command would print; whenever it is not sure (an option it does not know,
a `.env` or config file that could name another index, no server, no hits to show) it returns None and the full
command runs as before. `fast_mcp` does the same for the stdio MCP server, whose client is waiting for its
handshake (typer and rich were 0.15 s of the 0.65 s to the first `tools/list`).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from citedocs.cli import remote
from citedocs.cli.hit_lines import hit_lines
from citedocs.cli.one_off import one_off_mode, with_one_off_note
from citedocs.cli.terminal import one_line
from citedocs.locations import QuickIndex, only_defaults, quick_index

__all__ = ["fast_mcp", "fast_search"]

_VALUED = {
    "-k": "k",
    "--top-k": "k",
    "--mode": "mode",
    "--folder": "source",
    "--source": "source",
    "--type": "file_type",
    "--db": "db",
}


def _parse(argv: list[str]) -> dict[str, Any] | None:
    found: dict[str, Any] = {"k": None, "json": False}
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        name, _, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if name == "--json" and not inline:
            found["json"] = True
        elif name in _VALUED:
            if not inline and not rest:
                return None
            found[_VALUED[name]] = inline or rest.pop(0)
        elif arg.startswith("-") or "query" in found:
            return None  # --help, an unknown option, a second argument: the full CLI says what to do
        else:
            found["query"] = arg
    if "query" not in found or (found["k"] is not None and not str(found["k"]).isdigit()):
        return None
    found["k"] = None if found["k"] is None else int(found["k"])
    return found


def fast_search(argv: list[str]) -> int | None:
    """The exit code of a search a running server answered, or None to run the full command."""
    args = _parse(argv)
    if args is None:
        return None
    where = quick_index(args.pop("db", None), args["k"])  # the index and k Settings would resolve, or None
    as_json = args.pop("json")
    if where is None:
        return None
    reply = remote.search(where.db_path, {**args, "k": where.top_k})
    if reply is None:
        return _search_here(where, args, as_json)
    if reply.error is not None:
        sys.stderr.write(
            f"error: {reply.error.get('message', '')} {reply.error.get('hint', '')}".rstrip() + "\n"
        )
        return remote.exit_code(reply.status)
    if as_json:
        sys.stdout.write(json.dumps(reply.body, ensure_ascii=False, indent=2, default=str) + "\n")
        return 0
    hits = reply.body.get("hits") or []
    if not hits:
        return None  # the full command knows whether to say "add a folder" or "nothing indexed yet"
    _print_hits(reply.body.get("note"), hits)
    return 0


def _print_hits(note: str | None, hits: list[dict[str, Any]]) -> None:
    if note:
        sys.stderr.write(f"note: {one_line(note)}\n")
    sys.stdout.write("\n".join(hit_lines(hits)) + "\n")


def _search_here(where: QuickIndex, args: dict[str, Any], as_json: bool) -> int | None:
    """A keyword search of the local index, as the full command makes it, when no setting but the index and
    `k` departs from its default (only Settings can tell what one does); else None. Hybrid and semantic
    searches load the embedding model, which costs more than the full CLI's imports: they take the full path.
    Every library error returns None too: the full command says it in its words, with its exit code."""
    mode, one_off = one_off_mode(args.get("mode"), has_embedder=True)  # the default embedder is "auto"
    if mode != "keyword" or not only_defaults():
        return None
    from citedocs.errors import CitedocsError
    from citedocs.front_search import search_sources
    from citedocs.search.engine import SearchEngine
    from citedocs.sites.links import ensure_link_documents
    from citedocs.store import open_store

    try:
        store = open_store(str(where.db_path), create=False)
    except CitedocsError:
        return None
    engine = SearchEngine(store, None)
    try:
        ensure_link_documents(store)
        result = search_sources(
            store,
            engine,
            args["query"],
            k=where.top_k,
            mode=mode,
            source=args.get("source"),
            file_type=args.get("file_type"),
            wait_for_model=True,
            distinct=True,
        )
    except CitedocsError:
        return None
    finally:
        engine.close()
        store.close()
    if one_off and result.hits:
        result.note = with_one_off_note(result.note)
    found = result.to_dict()  # the same object as the HTTP API's /search
    if as_json:
        sys.stdout.write(json.dumps(found, ensure_ascii=False, indent=2, default=str) + "\n")
        return 0
    if not found["hits"]:
        return None  # the full command knows whether to say "add a folder" or "nothing indexed yet"
    _print_hits(found["note"], found["hits"])
    return 0


def fast_mcp(argv: list[str]) -> int | None:
    """`citedocs mcp [--read-only] [--db PATH]` on stdio, or None to let the full command take the call
    (`--http`, `--help`, an option or value it does not know)."""
    db, read_only, rest = None, False, list(argv)
    while rest:
        arg = rest.pop(0)
        name, equals, inline = arg.partition("=")
        if arg == "--read-only":
            read_only = True
        elif name == "--db" and (inline or (not equals and rest and not rest[0].startswith("-"))):
            db = inline or rest.pop(0)
        else:
            return None
    from citedocs.cli.exits import exit_code_for
    from citedocs.errors import CitedocsError
    from citedocs.mcp.early import run_stdio
    from citedocs.settings import Settings

    try:
        settings = Settings(db=db) if db else Settings()
        run_stdio(settings, read_only=read_only)
    except CitedocsError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return exit_code_for(exc)
    return 0
