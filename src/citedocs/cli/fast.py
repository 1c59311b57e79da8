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
import os
import re
import sys
from pathlib import Path
from typing import Any

from citedocs.cli import remote
from citedocs.cli.terminal import one_line

__all__ = ["fast_mcp", "fast_search"]

_VALUED = {"-k": "k", "--top-k": "k", "--mode": "mode", "--folder": "source", "--source": "source",
           "--type": "file_type", "--db": "db"}  # fmt: skip


def _parse(argv: list[str]) -> dict[str, Any] | None:
    found: dict[str, Any] = {"k": "5", "json": False}
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
    if "query" not in found or not str(found["k"]).isdigit():
        return None
    found["k"] = int(found["k"])
    return found


def _index_path(db: str | None) -> Path | None:
    db = db or os.environ.get("CITEDOCS_DB")
    if not db:
        env_file = os.environ.get("CITEDOCS_ENV_FILE")
        config = os.environ.get("CITEDOCS_CONFIG")
        if (env_file is None and Path(".env").exists()) or env_file or config:
            return None  # either could name another index: let Settings decide
        import platformdirs

        if (Path(platformdirs.user_config_dir("citedocs")) / "config.toml").exists():
            return None
        return Path(platformdirs.user_data_dir("citedocs")) / "index.sqlite3"
    if db.startswith(("postgresql://", "postgres://")):
        return None
    return Path(db).expanduser().resolve()


def fast_search(argv: list[str]) -> int | None:
    """The exit code of a search a running server answered, or None to run the full command."""
    args = _parse(argv)
    if args is None:
        return None
    db = _index_path(args.pop("db", None))
    as_json = args.pop("json")
    reply = None if db is None else remote.search(db, args)
    if reply is None:
        return None
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
    if reply.body.get("note"):
        sys.stderr.write(f"note: {one_line(reply.body['note'])}\n")
    lines = []
    for n, h in enumerate(hits, 1):
        if h.get("kind") == "link":
            lines += [f"{n}. {one_line(h.get('heading'))}  not fetched · {one_line(h.get('source'))} · {h['score']:.3f}",
                      f"   {one_line(h['path'])}", "   " + re.sub(r"\*\*(.+?)\*\*", r"\1", one_line(h.get("snippet", "")))]  # fmt: skip
            continue
        where = f"p. {h['page']}" if h.get("page") else f"lines {h['line_start']}-{h['line_end']}"
        lines.append(
            f"{n}. {one_line(h['path'])}  {where} · {one_line(h.get('heading') or '—')} · {h['score']:.3f} · "
            f"{one_line(h['chunk_id'])}"
        )
        lines.append("   " + re.sub(r"\*\*(.+?)\*\*", r"\1", one_line(h.get("snippet", ""))))
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def fast_mcp(argv: list[str]) -> int | None:
    """`citedocs mcp [--read-only] [--db PATH]` on stdio, or None to let the full command take the call
    (`--http`, `--help`, an option or value it does not know, settings that do not validate)."""
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
    from pydantic import ValidationError

    from citedocs.cli.exits import exit_code_for
    from citedocs.errors import CitedocsError
    from citedocs.mcp.early import run_stdio
    from citedocs.settings import Settings

    try:
        settings = Settings(db=db) if db else Settings()
    except ValidationError:
        return None
    try:
        run_stdio(settings, read_only=read_only)
    except CitedocsError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return exit_code_for(exc)
    return 0
