"""How `citedocs search` prints hits: one rule for the full command (rich, with highlights) and the fast path
that a running server answers (plain text, before rich is imported). Standard library only.

Each hit is the JSON object of POST /search (`Hit.to_dict()`); `style` marks up its parts, plain by default.
Every part a document or a server supplies passes `one_line` first: names and text are data, never terminal
control (cli/terminal.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from citedocs.cli.terminal import one_line

__all__ = ["Style", "hit_lines"]

_MARKED = re.compile(r"\*\*(.+?)\*\*")  # the snippet's matched words


class Style:
    """Plain text; the full CLI passes one that writes rich markup (and escapes what it shows)."""

    def text(self, value: str) -> str:
        return value

    def strong(self, value: str) -> str:
        return value

    def dim(self, value: str) -> str:
        return value

    def snippet(self, value: str) -> str:
        return _MARKED.sub(r"\1", value)


def hit_lines(hits: Sequence[Mapping[str, Any]], style: Style | None = None) -> list[str]:
    """Two lines per hit (three for a site page not fetched yet: its URL on its own line)."""
    s = style or Style()
    lines: list[str] = []
    for n, h in enumerate(hits, 1):
        snippet = "   " + s.snippet(one_line(h.get("snippet") or ""))
        if h.get("kind") == "link":
            lines += [
                f"{s.strong(f'{n}. ' + s.text(one_line(h.get('heading'))))}  "
                + s.dim(f"not fetched · {s.text(one_line(h.get('source')))} · {h['score']:.3f}"),
                f"   {s.text(one_line(h['path']))}",
                snippet,
            ]
            continue
        where = f"p. {h['page']}" if h.get("page") else f"lines {h['line_start']}-{h['line_end']}"
        about = f"{where} · {s.text(one_line(h.get('heading') or '—'))} · {h['score']:.3f} · {s.text(one_line(h['chunk_id']))}"
        lines += [f"{s.strong(f'{n}. ' + s.text(one_line(h['path'])))}  {s.dim(about)}", snippet]
    return lines
