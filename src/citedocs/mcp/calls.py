"""The rules every tool call passes, without the SDK: who may call which tool, and what is refused first.

One copy for both paths that run a tool: the SDK server (`boundary.py` turns a refusal into the SDK's
`ToolError`) and the early loop that answers read-only calls before the SDK is imported (`early_calls.py`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from citedocs import access
from citedocs.errors import CitedocsError
from citedocs.mcp.handshake import MUTATING_TOOLS
from citedocs.mcp.shapes import tool_message
from citedocs.text.invalid import refuse_invalid_text

__all__ = ["FREE_TEXT", "ToolRefusal", "authorize", "checked", "tool_scope"]

P = ParamSpec("P")
R = TypeVar("R")
FREE_TEXT = frozenset({"query", "question"})  # arguments where a newline or tab is ordinary text
CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class ToolRefusal(Exception):
    """A problem the model can fix; the text is the whole message it reads (the SDK's ToolError, SDK-free)."""


def checked(fn: Callable[P, R]) -> Callable[P, R]:
    """Library errors become refusals in the model's terms; paths, names and URLs with control characters
    are refused before they reach the library."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        for name, value in kwargs.items():
            if name not in FREE_TEXT:
                _refuse_control(name, value)
        try:
            refuse_invalid_text(dict(kwargs))  # the same rule as the HTTP API's (text/invalid.py)
            return fn(*args, **kwargs)
        except CitedocsError as exc:
            raise ToolRefusal(tool_message(exc)) from exc

    return wrapper


def _refuse_control(name: str, value: object) -> None:
    for text in value if isinstance(value, list) else [value]:
        if isinstance(text, str) and (found := CONTROL.search(text)):
            raise ToolRefusal(
                f"{name} contains a control character ({found.group()!r} at position "
                f"{found.start()}). Pass it as plain text, exactly as list_folders, search or "
                "docs_home show it."
            )


def tool_scope(name: str) -> access.Scope:
    return "ask" if name == "ask" else "admin" if name in MUTATING_TOOLS else "search"


def authorize(name: str, principal: access.Principal, quota: Any) -> None:
    """A token's scope covers the tool (and `ask` takes from its quota), or a refusal naming the scope."""
    try:
        access.require(tool_scope(name), principal)
        if name == "ask" and quota is not None:
            quota.take(principal)
    except CitedocsError as exc:
        raise ToolRefusal(tool_message(exc)) from exc
