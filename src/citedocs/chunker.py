"""Heading/page-aware chunking: pure, so it can be tested on plain data.

A chunk never crosses a heading or a page boundary, never splits a code block, aims at `target` tokens and
carries `overlap` tokens of trailing text into the next chunk of the same section. Tokens are estimated as
characters / 4 (English BPE averages ~4 characters per token), which is fast and close enough for sizing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from citedocs.parsers.base import Segment

CHARS_PER_TOKEN = 4
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")


def estimate_tokens(text: str) -> int:
    return max(1, (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN) if text else 0


@dataclass(frozen=True, slots=True)
class ChunkDraft:
    text: str
    headings: tuple[str, ...]
    line_start: int
    line_end: int
    page_start: int | None
    page_end: int | None
    tokens: int

    @property
    def heading(self) -> str:
        return " > ".join(self.headings)


@dataclass(frozen=True, slots=True)
class _Unit:
    """A paragraph, a code block, or a piece of an oversized paragraph, with its line span."""

    lines: tuple[str, ...]
    line_start: int
    atomic: bool

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)


def chunk_segments(
    segments: Sequence[Segment],
    *,
    target: int = 400,
    overlap: int = 60,
    min_tokens: int = 60,
    max_tokens: int = 560,
) -> list[ChunkDraft]:
    """Turn a parsed document's segments into chunks."""
    sections = _merge_small_sections(_sections(segments), min_tokens)
    chunks: list[ChunkDraft] = []
    for headings, page, units in sections:
        chunks.extend(_pack(units, headings, page, target, overlap, max_tokens))
    return chunks


def _sections(segments: Sequence[Segment]) -> list[tuple[tuple[str, ...], int | None, list[_Unit]]]:
    sections: list[tuple[tuple[str, ...], int | None, list[_Unit]]] = []
    for seg in segments:
        if not seg.text.strip():
            continue
        units = list(_units(seg))
        headings = tuple(h.strip() for h in seg.headings if h.strip())
        if sections and sections[-1][0] == headings and sections[-1][1] == seg.page:
            sections[-1][2].extend(units)
        else:
            sections.append((headings, seg.page, units))
    return sections


def _merge_small_sections(
    sections: list[tuple[tuple[str, ...], int | None, list[_Unit]]], min_tokens: int
) -> list[tuple[tuple[str, ...], int | None, list[_Unit]]]:
    """Fold a short section into the next one when the next is its descendant on the same page.

    An intro paragraph under "Setup" then belongs to the "Setup > Windows" chunk, whose heading path still
    names "Setup"; a short section followed by a sibling stays alone so its heading stays exact.
    """
    out: list[tuple[tuple[str, ...], int | None, list[_Unit]]] = []
    carry: tuple[tuple[str, ...], int | None, list[_Unit]] | None = None
    for headings, page, units in sections:
        if carry is not None:
            c_head, c_page, c_units = carry
            if c_page == page and headings[: len(c_head)] == c_head and len(headings) > len(c_head):
                units = c_units + units
            else:
                out.append(carry)
            carry = None
        if sum(u.tokens for u in units) < min_tokens:
            carry = (headings, page, units)
        else:
            out.append((headings, page, units))
    if carry is not None:
        out.append(carry)
    return out


def _units(seg: Segment) -> Iterable[_Unit]:
    lines = seg.text.split("\n")
    span = max(1, seg.line_end - seg.line_start + 1)
    exact = len(lines) == span

    def line_no(i: int) -> int:
        return seg.line_start + (i if exact else min(span - 1, i * span // max(1, len(lines))))

    if seg.kind == "code":
        yield _Unit(tuple(lines), seg.line_start, atomic=True)
        return
    para: list[str] = []
    start = 0
    for i, line in enumerate([*lines, ""]):
        if line.strip():
            if not para:
                start = i
            para.append(line)
        elif para:
            yield _Unit(tuple(para), line_no(start), atomic=False)
            para = []


def _split_unit(unit: _Unit, max_tokens: int) -> list[_Unit]:
    """Split an oversized paragraph at line, then sentence, then word boundaries."""
    if unit.atomic or unit.tokens <= max_tokens:
        return [unit]
    pieces: list[_Unit] = []
    for offset, line in enumerate(unit.lines):
        if estimate_tokens(line) <= max_tokens:
            pieces.append(_Unit((line,), unit.line_start + offset, atomic=False))
            continue
        parts = _SENTENCE_END.split(line)
        buf = ""
        for part in parts:
            while estimate_tokens(part) > max_tokens:
                cut = part.rfind(" ", 0, max_tokens * CHARS_PER_TOKEN)
                cut = cut if cut > 0 else max_tokens * CHARS_PER_TOKEN
                if buf:
                    pieces.append(_Unit((buf,), unit.line_start + offset, atomic=False))
                    buf = ""
                pieces.append(_Unit((part[:cut],), unit.line_start + offset, atomic=False))
                part = part[cut:].lstrip()
            if buf and estimate_tokens(buf + " " + part) > max_tokens:
                pieces.append(_Unit((buf,), unit.line_start + offset, atomic=False))
                buf = part
            else:
                buf = f"{buf} {part}".strip()
        if buf:
            pieces.append(_Unit((buf,), unit.line_start + offset, atomic=False))
    return pieces


def _pack(
    units: list[_Unit],
    headings: tuple[str, ...],
    page: int | None,
    target: int,
    overlap: int,
    max_tokens: int,
) -> list[ChunkDraft]:
    flat = [piece for unit in units for piece in _split_unit(unit, max_tokens)]
    chunks: list[ChunkDraft] = []
    current: list[_Unit] = []
    size = 0
    fresh = False  # whether `current` holds anything beyond the overlap carried from the last chunk
    for unit in flat:
        if fresh and size + unit.tokens > target:
            chunks.append(_draft(current, headings, page))
            current = _tail(current, overlap)
            size = sum(u.tokens for u in current)
            if size + unit.tokens > max_tokens:
                current, size = [], 0
            fresh = False
        current.append(unit)
        size += unit.tokens
        fresh = True
    if fresh:
        chunks.append(_draft(current, headings, page))
    return chunks


def _tail(units: list[_Unit], overlap: int) -> list[_Unit]:
    """The trailing lines of the previous chunk, up to `overlap` tokens; code is never carried."""
    if overlap <= 0:
        return []
    carried: list[_Unit] = []
    budget = overlap
    for unit in reversed(units):
        if unit.atomic:
            break
        for offset in range(len(unit.lines) - 1, -1, -1):
            line = unit.lines[offset]
            cost = estimate_tokens(line)
            if cost > budget:
                return carried
            carried.insert(0, _Unit((line,), unit.line_start + offset, atomic=False))
            budget -= cost
    return carried


def _draft(units: list[_Unit], headings: tuple[str, ...], page: int | None) -> ChunkDraft:
    text = "\n\n".join(u.text for u in units)
    end = max(u.line_start + len(u.lines) - 1 for u in units)
    return ChunkDraft(
        text=text,
        headings=headings,
        line_start=min(u.line_start for u in units),
        line_end=end,
        page_start=page,
        page_end=page,
        tokens=estimate_tokens(text),
    )
