"""Record the SDK's own replies to the handshake, for `handshake.py` to send before the SDK loads.

    python -m citedocs.mcp.snapshot --write    # after changing a tool, or upgrading mcp or pydantic
    python -m citedocs.mcp.snapshot --check    # exit 1 when handshake.json no longer matches the SDK

The server runs over an in-memory wire, the same `serve_stdio` a client talks to, once per protocol version the
SDK negotiates at `initialize` (one tools/list when they all agree); the full tool set is recorded (answers on, not read-only) and the variants are
cut from it, which tests/test_mcp_handshake.py checks against the SDK for each of the four.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from citedocs import __version__
from citedocs.mcp.handshake import (
    INSTRUCTIONS_SLOT,
    SNAPSHOT,
    VERSION_SLOT,
    installed_versions,
    tool_sources_digest,
)
from citedocs.mcp.stdio import serve_stdio
from citedocs.mcp.tools import build_server
from citedocs.service import Citedocs
from citedocs.settings import Settings

__all__ = ["handshake_messages", "record", "sdk_replies", "sdk_wire", "settings_for_variant"]


def handshake_messages(protocol: str) -> list[dict[str, Any]]:
    """What a client sends first: initialize (id 1), initialized, tools/list (id 2)."""
    return [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": protocol,
                "capabilities": {},
                "clientInfo": {"name": "snapshot", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]


def sdk_replies(
    app: Citedocs,
    messages: Sequence[dict[str, Any] | bytes],
    *,
    read_only: bool = False,
    instructions: str | None = None,
) -> list[dict[str, Any]]:
    """What the SDK server writes when `messages` (objects, or raw lines) arrive on a wire that then ends."""
    wire = sdk_wire(app, messages, read_only=read_only, instructions=instructions)
    return [json.loads(line) for line in wire.splitlines() if line.strip()]


def sdk_wire(
    app: Citedocs,
    messages: Sequence[dict[str, Any] | bytes],
    *,
    read_only: bool = False,
    instructions: str | None = None,
) -> bytes:
    """The bytes the SDK server writes for `messages`, as `sdk_replies` reads them."""
    server = build_server(app, read_only=read_only, instructions=instructions)
    lines = [m if isinstance(m, bytes) else json.dumps(m).encode() for m in messages]
    wire_in = io.BytesIO(b"".join(line.rstrip(b"\n") + b"\n" for line in lines))
    wire_out = io.BytesIO()
    anyio.run(serve_stdio, server, (wire_in, wire_out))
    return wire_out.getvalue()


def settings_for_variant(folder: Path, *, answers: bool) -> Settings:
    """Settings for a throwaway index in `folder`; `answers` configures a model (never contacted)."""
    return Settings(
        db=str(folder / "index.sqlite3"),
        llm_base_url="http://127.0.0.1:9/v1" if answers else "",
        llm_gguf="",
        llm_local_model="",
        llm_models_dir=str(folder / "models"),
        watch=False,
        embedder="none",
        default_sites=False,
    )


def record() -> dict[str, Any]:
    """The recording `handshake.json` holds: per protocol version, the initialize and tools/list results."""
    protocols: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        app = Citedocs(settings_for_variant(Path(tmp), answers=True))
        try:
            for protocol in HANDSHAKE_PROTOCOL_VERSIONS:
                replies = sdk_replies(app, handshake_messages(protocol), instructions=INSTRUCTIONS_SLOT)
                initialize, tools = (next(r["result"] for r in replies if r.get("id") == n) for n in (1, 2))
                if initialize.get("serverInfo", {}).get("version") == __version__:
                    initialize["serverInfo"]["version"] = VERSION_SLOT
                protocols[protocol] = {"initialize": initialize, "tools/list": tools}
        finally:
            app.close()
    recording: dict[str, Any] = {
        "packages": installed_versions(),
        "tool_sources": tool_sources_digest(),
        "protocols": protocols,
    }
    shared = next(iter(protocols.values()))["tools/list"]
    if all(entry["tools/list"] == shared for entry in protocols.values()):  # one copy, not four of 35 KB
        for entry in protocols.values():
            del entry["tools/list"]
        recording["tools/list"] = shared
    return recording


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m citedocs.mcp.snapshot", description=__doc__.split("\n")[0]
    )
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", action="store_true", help=f"Write {SNAPSHOT.name}.")
    action.add_argument("--check", action="store_true", help=f"Exit 1 when {SNAPSHOT.name} is out of date.")
    args = parser.parse_args(argv)
    recorded = record()
    text = json.dumps(recorded, ensure_ascii=False, indent=1, sort_keys=True) + "\n"
    if args.write:
        SNAPSHOT.write_text(text, encoding="utf-8")
        print(f"wrote {SNAPSHOT} ({len(recorded['protocols'])} protocol versions)")
        return 0
    current = SNAPSHOT.read_text(encoding="utf-8") if SNAPSHOT.exists() else ""
    if current != text:
        print(f"{SNAPSHOT} is out of date: run `python -m citedocs.mcp.snapshot --write`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
