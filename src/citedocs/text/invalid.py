"""Text that is not valid Unicode: one rule for every request field and MCP argument.

JSON lets a client send a lone UTF-16 surrogate (`"\\ud800"`); Python decodes it into a `str` that no UTF-8
encoder, SQLite binding or terminal accepts, so it failed deep inside the store (a plain-text 500 over HTTP, a
lost reply over MCP stdio). `invalid_text` finds one anywhere in a decoded JSON value, so the HTTP API and the
MCP server refuse it at their door with the same message.
"""

from __future__ import annotations

import re

from citedocs.errors import InputError

__all__ = ["invalid_text", "refuse_invalid_text"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def invalid_text(value: object, where: str = "") -> tuple[str, int] | None:
    """(field path, position) of the first lone surrogate in `value` (strings, and the keys and items of
    dicts and lists, at any depth), or None."""
    stack: list[tuple[str, object]] = [(where, value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            if found := _SURROGATE.search(item):
                return path, found.start()
        elif isinstance(item, dict):
            for key, inner in item.items():
                stack.append((f"{path}.{key}" if path else str(key), key))
                stack.append((f"{path}.{key}" if path else str(key), inner))
        elif isinstance(item, list | tuple):
            stack.extend((f"{path}[{i}]", inner) for i, inner in enumerate(item))
    return None


def refuse_invalid_text(value: object, where: str = "") -> None:
    """Raise InputError naming the field when `value` holds text that is not valid Unicode."""
    found = invalid_text(value, where)
    if found is not None:
        path, position = found
        raise InputError(
            f"{path or 'the request'} holds text that is not valid Unicode (a lone surrogate at position "
            f"{position}).",
            "Send it as UTF-8 text; a \\ud800-\\udfff escape is only valid as half of a surrogate pair.",
        )
