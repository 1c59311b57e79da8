"""The passages a saved answer's model read, recovered from the prompt its run stored (`detail.prompt`).

Runs store the messages sent to the model; the sources sit between fences (`answer/prompt.py`), each headed
`file · heading · lines a-b` (or `p. N`). Recovering them needs no index and no search, so what the model read
can be measured again offline (quotes added to saved answers, bench/bench_quotes.py) exactly as it was.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from citedocs.hits import Hit

__all__ = ["prompt_passages"]

_SOURCE_RE = re.compile(r"<<<SOURCE \[(\d+)\] ([a-z0-9]+)>>> ?([^\n]*)\n")
_WHERE_RE = re.compile(r"^(?:lines (\d+)-(\d+)|p\. (\d+))$")


def _header(label: str) -> tuple[str, str, int | None, int, int]:
    parts = label.split(" · ")
    page, start, end = None, 0, 0
    if len(parts) > 1 and (where := _WHERE_RE.match(parts[-1])):
        parts.pop()
        if where.group(3):
            page = int(where.group(3))
        else:
            start, end = int(where.group(1)), int(where.group(2))
    return parts[0], " · ".join(parts[1:]), page, start, end


def prompt_passages(messages: Sequence[Mapping[str, Any]]) -> list[Hit]:
    """The numbered sources of a stored prompt as passages [1]..[n], their text exactly as the model read
    it (the path is the file name the prompt shows; an evidence prompt's windows joined by `…` lines, and a
    number it skipped an empty passage). Empty when the prompt holds no sources."""
    user = next((str(m.get("content", "")) for m in messages if m.get("role") == "user"), "")
    found = list(_SOURCE_RE.finditer(user))
    by_n: dict[int, Hit] = {}
    for i, match in enumerate(found):
        n, fence = int(match.group(1)), match.group(2)
        stop = found[i + 1].start() if i + 1 < len(found) else len(user)
        body = user[match.end() : stop]
        for end_mark in (f"<<<END SOURCE [{n}] {fence}>>>", f"<<<END SOURCES {fence}>>>"):
            cut = body.find(end_mark)
            if cut >= 0:
                body = body[:cut]
        name, heading, page, start, end = _header(match.group(3))
        by_n[n] = Hit(f"prompt-{n}", name, "", heading, page, start, end, 0.0, body.rstrip("\n"))
    last = max(by_n, default=0)
    return [by_n.get(n) or Hit(f"prompt-{n}", "", "", "", None, 0, 0, 0.0, "") for n in range(1, last + 1)]
