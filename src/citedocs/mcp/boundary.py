"""The MCP boundary: what is refused before a tool or prompt runs, in terms a client can act on.

Library errors become tool errors the model reads; a path, name or URL with a control character (a NUL byte
made `read_file` fail with an empty error) is refused with one that says what to send; an unknown prompt is
invalid params (-32602), as the MCP spec asks, where the SDK answered with error code 0.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS
from pydantic import ValidationError

from citedocs.errors import CitedocsError
from citedocs.mcp.shapes import tool_message

__all__ = ["CitedocsMCPServer", "model_fixable"]

P = ParamSpec("P")
R = TypeVar("R")
FREE_TEXT = frozenset({"query", "question"})  # arguments where a newline or tab is ordinary text
CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def model_fixable(fn: Callable[P, R]) -> Callable[P, R]:
    """Library errors become tool errors (isError results the model reads), never protocol errors; paths,
    names and URLs with control characters are refused before they reach the library."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        for name, value in kwargs.items():
            if name not in FREE_TEXT:
                _refuse_control(name, value)
        try:
            return fn(*args, **kwargs)
        except CitedocsError as exc:
            raise ToolError(tool_message(exc)) from exc

    return wrapper


def _refuse_control(name: str, value: object) -> None:
    for text in value if isinstance(value, list) else [value]:
        if isinstance(text, str) and (found := CONTROL.search(text)):
            raise ToolError(f"{name} contains a control character ({found.group()!r} at position "
                            f"{found.start()}). Pass it as plain text, exactly as list_folders, search or "
                            "docs_home show it.")  # fmt: skip


def argument_problem(exc: ValidationError) -> str:
    """A pydantic validation error as one sentence a model can act on (no type names, no URLs)."""
    parts = []
    for error in exc.errors():
        name = ".".join(str(p) for p in error.get("loc", ()) if p not in ("body",)) or "an argument"
        context = error.get("ctx") or {}
        limits = {"less_than_equal": f"at most {context.get('le')}", "greater_than_equal": f"at least {context.get('ge')}",
                  "less_than": f"less than {context.get('lt')}", "greater_than": f"more than {context.get('gt')}"}  # fmt: skip
        wanted = limits.get(str(error.get("type")), str(error.get("msg", "invalid")).lower())
        got = error.get("input")
        shown = "" if isinstance(got, dict) else f" (got {got!r})"
        parts.append(
            f"{name} must be {wanted}{shown}" if error.get("type") in limits else f"{name}: {wanted}{shown}"
        )
    return (
        "Invalid arguments: "
        + "; ".join(parts)
        + ". Call the tool again with corrected arguments (see its schema in tools/list)."
    )


class CitedocsMCPServer(MCPServer):
    # stops what answering started (a model server), on the loop it ran on; set by `build_server`
    answers_close: Callable[[], Awaitable[None]] | None = None

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        """Arguments that fail validation are a tool error in plain words, not pydantic's text and URL."""
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(argument_problem(cause)) from cause
            raise

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Any = None
    ) -> Any:
        """An unknown prompt is invalid params (-32602), as the spec asks, not the SDK's error code 0."""
        known = [prompt.name for prompt in await self.list_prompts()]
        if name not in known:
            offered = f"the prompts are: {', '.join(known)}" if known else "this server offers no prompts"
            raise MCPError(INVALID_PARAMS, f"Unknown prompt {name!r}: {offered} (see prompts/list).")
        return await super().get_prompt(name, arguments, context)
