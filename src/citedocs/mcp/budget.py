"""Output budgets for MCP tools: every result fits a model's context, and says how to get the rest.

Pure functions over plain data. Sizes are JSON characters (~4 per token); a budget of 24,000 characters is
about 6,000 tokens.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

DEFAULT_MAX_CHARS = 24_000
MIN_SNIPPET_CHARS = 80
ELLIPSIS = "…"


def result_budget(settings: Any, max_chars: int | None = None) -> int:
    """Every result's character budget: `max_chars`, else the default."""
    return max_chars or DEFAULT_MAX_CHARS


def json_size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, default=str))


def cut(text: str, limit: int) -> str:
    """`text` shortened to at most `limit` characters, at a word boundary when one is near, marked with …."""
    if len(text) <= limit:
        return text
    if limit <= 1:
        return ELLIPSIS[:limit]
    head = text[: limit - 1]
    space = head.rfind(" ")
    if space > limit * 0.8:
        head = head[:space]
    return head.rstrip() + ELLIPSIS


def fair_share(lengths: list[int], room: int) -> int:
    """The largest cap c with sum(min(len, c)) <= room: short texts keep everything, long ones share the rest."""
    remaining = max(0, room)
    ordered = sorted(lengths)
    for i, length in enumerate(ordered):
        share = remaining // (len(ordered) - i)
        if length > share:
            return share
        remaining -= length
    return max(ordered, default=0)


@dataclass(slots=True)
class Fitted:
    items: list[dict[str, Any]]
    note: str | None


def fit_items(
    items: list[dict[str, Any]], max_chars: int, *, text_key: str = "text", snippet_key: str = "snippet"
) -> Fitted:
    """Fit ranked items into `max_chars`: shorten full texts first, then drop them, then shorten snippets,
    and only then drop the lowest-ranked items. The note says what was cut and how to see it whole."""
    items = [dict(item) for item in items]
    if json_size(items) <= max_chars:
        return Fitted(items, None)
    texts = [str(item.get(text_key) or "") for item in items]
    bare = [{k: v for k, v in item.items() if k != text_key} for item in items]
    room = max_chars - json_size(bare) - 16 * len(items)
    if any(texts) and room >= 40 * len(items):
        cap = fair_share([len(t) for t in texts], room)
        for item, text in zip(items, texts, strict=True):
            if text_key in item:
                item[text_key] = cut(text, cap)
        return Fitted(
            items,
            f"passage text shortened to fit the ~{max_chars}-character budget; "
            "read_file the hit's lines for the full text",
        )
    items = bare
    note = "passage text left out to fit the budget; read_file the hit's lines to see it"
    if json_size(items) > max_chars:
        for item in items:
            if isinstance(item.get(snippet_key), str):
                item[snippet_key] = cut(item[snippet_key], MIN_SNIPPET_CHARS)
        note = "passage text left out and snippets shortened to fit the budget"
    total = len(items)
    while len(items) > 1 and json_size(items) > max_chars:
        items.pop()
    if len(items) < total:
        note = (
            f"{note}; showing the top {len(items)} of {total} results — ask for fewer or narrow the "
            "search to see the others"
        )
    return Fitted(items, note)


@dataclass(slots=True)
class LineWindow:
    text: str
    end_line: int
    next_start_line: int | None
    note: str | None


def fit_lines(lines: list[str], start_line: int, total_lines: int, max_chars: int) -> LineWindow:
    """The longest run of whole lines from `start_line` that fits; a single over-long line is cut."""
    used = 0
    kept: list[str] = []
    for line in lines:
        cost = len(line) + 1
        if used + cost > max_chars:
            break
        kept.append(line)
        used += cost
    note = None
    if not kept and lines:
        kept = [cut(lines[0], max_chars)]
        note = f"line {start_line} is longer than the budget and was cut"
    end_line = start_line + len(kept) - 1
    next_start = end_line + 1 if end_line < start_line + len(lines) - 1 else None
    if next_start is not None:
        note = (note + "; " if note else "") + (
            f"stopped at line {end_line} of {total_lines} to fit the ~{max_chars}-character budget; "
            f"call read_file again with start_line={next_start} for more"
        )
    return LineWindow("\n".join(kept), end_line, next_start, note)


@dataclass(slots=True)
class CharWindow:
    text: str
    next_offset: int | None


def fit_chars(text: str, offset: int, max_chars: int) -> CharWindow:
    """A window of `text` from `offset`, ending at a line break when one falls in the last half."""
    window = text[offset : offset + max_chars]
    end = offset + len(window)
    if end >= len(text):
        return CharWindow(window, None)
    newline = window.rfind("\n")
    if newline > max_chars // 2:
        window = window[: newline + 1]
        end = offset + len(window)
    return CharWindow(window, end)
