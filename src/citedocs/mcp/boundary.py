"""The MCP boundary: what is refused before a tool or prompt runs, in terms a client can act on.

Library errors become tool errors the model reads; a path, name or URL with a control character (a NUL byte
made `read_file` fail with an empty error) is refused with one that says what to send; an unknown prompt is
invalid params (-32602), as the MCP spec asks, where the SDK answered with error code 0.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS
from pydantic import ValidationError

from citedocs import access
from citedocs.mcp.calls import ToolRefusal, authorize, checked, tool_scope

__all__ = ["CitedocsMCPServer", "model_fixable"]

P = ParamSpec("P")
R = TypeVar("R")


def model_fixable(fn: Callable[P, R]) -> Callable[P, R]:
    """Library errors become tool errors (isError results the model reads), never protocol errors; paths,
    names and URLs with control characters are refused before they reach the library (`calls.checked`)."""
    inner = checked(fn)

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return inner(*args, **kwargs)
        except ToolRefusal as exc:
            raise ToolError(str(exc)) from (exc.__cause__ or exc)

    return wrapper


def argument_problem(exc: ValidationError) -> str:
    """A pydantic validation error as one sentence a model can act on (no type names, no URLs)."""
    parts = []
    for error in exc.errors():
        name = ".".join(str(p) for p in error.get("loc", ()) if p not in ("body",)) or "an argument"
        context = error.get("ctx") or {}
        limits = {
            "less_than_equal": f"at most {context.get('le')}",
            "greater_than_equal": f"at least {context.get('ge')}",
            "less_than": f"less than {context.get('lt')}",
            "greater_than": f"more than {context.get('gt')}",
        }
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


def _caller(context: Any) -> tuple[access.Principal, Any]:
    """Who called, from the HTTP request the tool call came in (set by api/auth.py); the machine's owner over
    stdio or a server without auth. Read per call: the session's task may run in another request's context."""
    return _caller_of(getattr(getattr(context, "_request_context", None), "request", None))


def _caller_of(request: Any) -> tuple[access.Principal, Any]:
    state = getattr(request, "scope", {}).get("state", {}) if request is not None else {}
    if "citedocs.principal" not in state:  # stdio, or a server without auth
        return access.OWNER, None
    principal = state["citedocs.principal"]
    return (principal if isinstance(principal, access.Principal) else access.ANONYMOUS), state.get(
        "citedocs.quota"
    )


class CitedocsMCPServer(MCPServer):
    # stops what answering started (a model server), on the loop it ran on; set by `build_server`
    answers_close: Callable[[], Awaitable[None]] | None = None

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        """Arguments that fail validation are a tool error in plain words, not pydantic's text and URL; a
        token's scope is checked per tool, and the call runs as that token (its sources only)."""
        principal, quota = _caller(context)
        try:
            authorize(name, principal, quota)
        except ToolRefusal as exc:
            raise ToolError(str(exc)) from exc.__cause__
        try:
            with access.acting_as(principal):
                return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(argument_problem(cause)) from cause
            raise

    async def _handle_list_tools(self, ctx: Any, params: Any) -> Any:
        """`tools/list` names only the tools the caller's token may call: a search token is not offered
        `ask` or the tools that change folders (calling one anyway is still refused, naming the scope)."""
        result = await super()._handle_list_tools(ctx, params)
        principal, _ = _caller_of(getattr(ctx, "request", None))
        result.tools = [tool for tool in result.tools if principal.allows(tool_scope(tool.name))]
        return result

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Any = None
    ) -> Any:
        """An unknown prompt is invalid params (-32602), as the spec asks, not the SDK's error code 0."""
        known = [prompt.name for prompt in await self.list_prompts()]
        if name not in known:
            offered = f"the prompts are: {', '.join(known)}" if known else "this server offers no prompts"
            raise MCPError(INVALID_PARAMS, f"Unknown prompt {name!r}: {offered} (see prompts/list).")
        return await super().get_prompt(name, arguments, context)
