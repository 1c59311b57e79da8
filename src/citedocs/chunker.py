"""Heading/page-aware chunking: pure, so it can be tested on plain data.

A chunk never crosses a heading or a page boundary, never splits a code block, aims at `target` tokens and
carries `overlap` tokens of trailing text into the next chunk of the same section. A table that comes with its
header (`Segment.table_header`: spreadsheets, CSV) is cut between rows, with the header repeated at the top of
each chunk and no overlap, so every chunk is a table a model can read and its line span is a span of rows.
Tokens are estimated (`text.tokens`: characters / 4, a CJK character 0.65), which is fast and close enough
for sizing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from citedocs.parsers.base import Segment
from citedocs.text.tokens import CHARS_PER_TOKEN, cjk_chars, estimate_tokens, tokens_for

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")
# Where a sentence written without spaces ends (Japanese, Chinese): a long line is cut after the last one.
_CJK_STOPS = ("\u3002", "\uff01", "\uff1f")  # 。！？
_NON_SPACE = re.compile(r"\S")  # \S is exactly `not str.isspace()`, what lstrip strips


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


class _Unit(NamedTuple):
    """A paragraph, a code block, or a piece of an oversized paragraph, with its line span.

    A tuple, with its token estimate computed once: a log file is millions of one-line units, and a frozen
    dataclass that re-joined its lines for each `tokens` read cost most of the time spent chunking one.
    """

    lines: tuple[str, ...]
    line_start: int
    atomic: bool
    tokens: int
    table: tuple[str, ...] = ()  # a table row: the header lines to put above it in a chunk

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def _unit(lines: tuple[str, ...], line_start: int, *, atomic: bool) -> _Unit:
    length = sum(map(len, lines)) + len(lines) - 1 if lines else 0
    return _Unit(lines, line_start, atomic, tokens_for(length, sum(map(cjk_chars, lines))))


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
        chunks.extend(_pack(units, headings, page, target, overlap, max_tokens, min_tokens))
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
        yield _unit(tuple(lines), seg.line_start, atomic=True)
        return
    if seg.kind == "table" and seg.table_header:
        for i, line in enumerate(lines):
            if line.strip():
                yield _unit((line,), line_no(i), atomic=False)._replace(table=seg.table_header)
        return
    para: list[str] = []
    start = 0
    for i, line in enumerate([*lines, ""]):
        if line.strip():
            if not para:
                start = i
            para.append(line)
        elif para:
            yield _unit(tuple(para), line_no(start), atomic=False)
            para = []


def _split_unit(unit: _Unit, max_tokens: int) -> list[_Unit]:
    """Split an oversized paragraph at line, then sentence, then word boundaries."""
    if unit.atomic or unit.tokens <= max_tokens:
        return [unit]
    pieces: list[_Unit] = []
    for offset, line in enumerate(unit.lines):
        start = unit.line_start + offset
        tokens = estimate_tokens(line)
        if tokens <= max_tokens:
            pieces.append(_Unit((line,), start, False, tokens))
        else:
            pieces.extend(
                _Unit((text,), start, False, estimate_tokens(text)) for text in _split_line(line, max_tokens)
            )
    return pieces


def _split_line(line: str, max_tokens: int) -> Iterator[str]:
    """Pieces of one oversized line: whole sentences packed up to `max_tokens`, long sentences cut at spaces.

    Linear in the line's length: the rest of a sentence is an index, never a re-sliced copy, and the sentences
    waiting in the buffer are a list joined once (a 45 MB line took minutes when each cut copied the rest).
    The buffer never starts or ends with whitespace, so appending to it is the strip of `buf + " " + part`.
    """
    buf: list[str] = []
    size = heavy = 0  # len(" ".join(buf)) and how many of those characters are CJK
    for part in _SENTENCE_END.split(line):
        pos = 0
        part_heavy = cjk_chars(part)
        # the characters of this part that make max_tokens (CJK text holds fewer a token)
        ratio = len(part) / tokens_for(len(part), part_heavy) if part_heavy else CHARS_PER_TOKEN
        width = max(1, int(max_tokens * ratio))
        while len(part) - pos > width:
            found = max(part.rfind(" ", pos, pos + width), _last_stop(part, pos, pos + width))
            cut = found if found > pos else pos + width
            if buf:
                yield " ".join(buf)
                buf, size = [], 0
            yield part[pos:cut]
            rest = _NON_SPACE.search(part, cut)
            pos = rest.start() if rest else len(part)
        tail = part[pos:] if pos else part
        tail_heavy = cjk_chars(tail) if pos else part_heavy
        if buf and tokens_for(size + 1 + len(tail), heavy + tail_heavy) > max_tokens:
            yield " ".join(buf)
            buf, size, heavy = ([tail], len(tail), tail_heavy) if tail else ([], 0, 0)
        elif buf:
            if stripped := tail.rstrip():
                buf.append(stripped)
                size += 1 + len(stripped)
                heavy += tail_heavy
        elif stripped := tail.strip():
            buf, size, heavy = [stripped], len(stripped), tail_heavy
    if buf:
        yield " ".join(buf)


def _last_stop(text: str, start: int, end: int) -> int:
    """Where to cut `text[start:end]` after its last CJK full stop (-1 when it has none)."""
    return max(text.rfind(stop, start, end) for stop in _CJK_STOPS) + 1 or -1


def _pack(
    units: list[_Unit],
    headings: tuple[str, ...],
    page: int | None,
    target: int,
    overlap: int,
    max_tokens: int,
    min_tokens: int = 0,
) -> list[ChunkDraft]:
    """Units packed into chunks of about `target` tokens. What is new in a chunk is never less than
    `min_tokens` when the next unit can still join it (a heading line is not a chunk of its own: it joins the
    code block or paragraph under it, even one over `max_tokens` that is whole code)."""
    flat = [piece for unit in units for piece in _split_unit(unit, max_tokens)]
    chunks: list[ChunkDraft] = []
    current: list[_Unit] = []
    size = 0
    new = 0  # tokens in `current` beyond the overlap carried from the last chunk
    fresh = False  # whether `current` holds anything beyond the overlap carried from the last chunk
    for unit in flat:
        cost = unit.tokens + _header_cost(current, unit)
        too_small = new < min_tokens and (unit.atomic or size + cost <= max_tokens)
        if fresh and size + cost > target and not too_small:
            chunks.append(_draft(current, headings, page))
            current = _tail(current, overlap)
            size = sum(u.tokens for u in current)
            if size + unit.tokens > max_tokens:
                current, size = [], 0
            fresh = False
            new = 0
            cost = unit.tokens + _header_cost(current, unit)
        current.append(unit)
        size += cost
        new += cost
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
        if unit.atomic or unit.table:
            break
        for offset in range(len(unit.lines) - 1, -1, -1):
            line = unit.lines[offset]
            cost = estimate_tokens(line)
            if cost > budget:
                return carried
            carried.insert(0, _Unit((line,), unit.line_start + offset, False, cost))
            budget -= cost
    return carried


def _starts_table(previous: _Unit | None, unit: _Unit) -> bool:
    return bool(unit.table) and (previous is None or previous.table is not unit.table)


def _header_cost(current: list[_Unit], unit: _Unit) -> int:
    """Tokens of the table header a row brings into a chunk where its table does not yet stand."""
    if not _starts_table(current[-1] if current else None, unit):
        return 0
    return estimate_tokens("\n".join(unit.table))


def _join(units: list[_Unit]) -> str:
    """Paragraphs apart by a blank line; rows of one table one per line, under their header."""
    parts: list[str] = []
    previous: _Unit | None = None
    for unit in units:
        if previous is not None:
            parts.append("\n" if unit.table and previous.table is unit.table else "\n\n")
        if _starts_table(previous, unit):
            parts.append("\n".join(unit.table) + "\n")
        parts.append(unit.text)
        previous = unit
    return "".join(parts)


def _draft(units: list[_Unit], headings: tuple[str, ...], page: int | None) -> ChunkDraft:
    text = "\n\n".join(u.text for u in units) if not any(u.table for u in units) else _join(units)
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
