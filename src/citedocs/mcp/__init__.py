"""citedocs over the Model Context Protocol: docsonar's folder tools and llmstxt-doc-search's site tools.

Names load on first use: `citedocs mcp` answers the handshake before the SDK is imported (`early.py`), so
importing this package must not import it.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = [
    "DEFAULT_MAX_CHARS",
    "MUTATING_TOOLS",
    "build_server",
    "http_app",
    "instructions_for",
    "main",
    "run_http",
    "run_stdio",
    "transport_security",
]

_HOMES = {
    "DEFAULT_MAX_CHARS": "citedocs.mcp.budget",
    "MUTATING_TOOLS": "citedocs.mcp.handshake",
    "instructions_for": "citedocs.mcp.handshake",
    "run_stdio": "citedocs.mcp.early",
    "build_server": "citedocs.mcp.tools",
    "http_app": "citedocs.mcp.transports",
    "main": "citedocs.mcp.transports",
    "run_http": "citedocs.mcp.transports",
    "transport_security": "citedocs.mcp.transports",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'citedocs.mcp' has no attribute {name!r}")
