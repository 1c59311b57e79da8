"""citedocs over the Model Context Protocol: docsonar's folder tools and llmstxt-doc-search's site tools."""

from __future__ import annotations

from citedocs.mcp.budget import DEFAULT_MAX_CHARS
from citedocs.mcp.tools import MUTATING_TOOLS, build_server, instructions_for
from citedocs.mcp.transports import http_app, main, run_http, run_stdio, transport_security

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
