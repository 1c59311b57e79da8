"""Snippets: the window of a passage with the most distinct query terms, matches marked **like this**."""

from __future__ import annotations

import re
from collections.abc import Collection

from citedocs.analysis import RAW_TOKEN, word_stem

_WORD = re.compile(r"\w+")


def make_snippet(text: str, query_terms: Collection[str], width: int = 240) -> str:
    wanted = set(query_terms)
    words = [(m.start(), m.end(), word_stem(m.group())) for m in _WORD.finditer(text)]
    words += [(m.start(), m.end(), m.group().lower()) for m in RAW_TOKEN.finditer(text) if m.group().lower() in wanted]
    found = sorted((s, e, stem) for s, e, stem in words if stem in wanted)
    hits = [(s, e) for s, e, _ in found]
    if not hits:
        return _trim(text, 0, width)
    best_start, best_score = hits[0][0], -1
    for i, (start, _) in enumerate(hits):
        seen = {stem for s, e, stem in found[i:] if e <= start + width}
        if len(seen) > best_score:
            best_start, best_score = start, len(seen)
    start = max(0, best_start - width // 4)
    space = text.rfind(" ", 0, start)
    start = space + 1 if start > 0 and space >= 0 and start - space < 30 else start
    end = min(len(text), start + width)
    marked = []
    cursor = start
    for s, e in _merge(h for h in hits if h[0] >= start and h[1] <= end):
        marked.append(text[cursor:s])
        marked.append(f"**{text[s:e]}**")
        cursor = e
    marked.append(text[cursor:end])
    body = " ".join("".join(marked).split())
    return ("…" if start > 0 else "") + body + ("…" if end < len(text) else "")


def _merge(spans: object) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for s, e in sorted(spans):  # type: ignore[call-overload]
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def _trim(text: str, start: int, width: int) -> str:
    body = " ".join(text[start : start + width].split())
    return body + ("…" if len(text) > start + width else "")
