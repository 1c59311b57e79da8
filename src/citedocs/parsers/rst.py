"""reStructuredText: section titles (underline, or overline + underline) give heading paths; literal blocks
(`::` and `.. code-block::`) are code segments. Levels follow the order adornment styles first appear in,
as docutils does."""

from __future__ import annotations

import re

from citedocs.parsers._build import normalize_newlines, push_heading, span_segment
from citedocs.parsers.base import ParsedDocument, Segment, SegmentKind
from citedocs.parsers.budget import checkpoint
from citedocs.parsers.text import decode_bytes

_ADORNMENT = re.compile(r"""^([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])\1{1,}\s*$""")
_CODE_DIRECTIVE = re.compile(r"^(\s*)\.\.\s+(?:code-block|code|sourcecode)::")


def _adornment(line: str) -> str | None:
    match = _ADORNMENT.match(line)
    return match.group(1) if match else None


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _title_at(lines: list[str], i: int) -> tuple[tuple[str, bool], str, int] | None:
    """(style, title, lines used) when a section title starts at lines[i]."""
    char = _adornment(lines[i])
    if char and i + 2 < len(lines):
        title = lines[i + 1].strip()
        if title and not _adornment(lines[i + 1]) and _adornment(lines[i + 2]) == char:
            return (char, True), title, 3
    if i + 1 >= len(lines) or char or not lines[i].strip() or _indent(lines[i]):
        return None
    if i > 0 and lines[i - 1].strip():
        return None
    under = _adornment(lines[i + 1])
    width = len(lines[i + 1].rstrip())
    title = lines[i].strip()
    if under is None or (width < len(title) and width < 4):
        return None
    return (under, False), title, 2


def _indented_block_end(lines: list[str], i: int, indent: int) -> int:
    """End (exclusive) of the lines after lines[i] that are blank or indented deeper than `indent`."""
    end = i + 1
    j = i + 1
    while j < len(lines) and (not lines[j].strip() or _indent(lines[j]) > indent):
        if lines[j].strip():
            end = j + 1
        j += 1
    return end


def _literal_block(lines: list[str], i: int) -> tuple[int, int] | None:
    """(start, end) of a code block introduced at lines[i], by a code directive or a trailing `::`."""
    directive = _CODE_DIRECTIVE.match(lines[i])
    if directive:
        return i, _indented_block_end(lines, i, len(directive.group(1)))
    stripped = lines[i].rstrip()
    if not stripped.endswith("::") or stripped.lstrip().startswith(".."):
        return None
    j = i + 1
    while j < len(lines) and not lines[j].strip():
        j += 1
    if j >= len(lines) or _indent(lines[j]) <= _indent(lines[i]):
        return None
    return j, _indented_block_end(lines, j - 1, _indent(lines[i]))


def rst_segments(lines: list[str]) -> list[Segment]:
    segments: list[Segment] = []
    styles: list[tuple[str, bool]] = []
    stack: list[tuple[int, str]] = []
    headings: tuple[str, ...] = ()
    start = 0

    def emit(begin: int, end: int, kind: SegmentKind = "text") -> None:
        segment = span_segment(lines, begin, end, headings, kind)
        if segment is not None:
            segments.append(segment)

    i = 0
    while i < len(lines):
        if not i & 255:
            checkpoint()
        found = _title_at(lines, i)
        if found is not None:
            style, title, used = found
            if style not in styles:
                styles.append(style)
            emit(start, i)
            start = i
            headings = push_heading(stack, styles.index(style) + 1, title)
            i += used
            continue
        block = _literal_block(lines, i)
        if block is not None:
            code_start, code_end = block
            emit(start, code_start)
            emit(code_start, code_end, "code")
            i = start = code_end
            continue
        i += 1
    emit(start, len(lines))
    return segments


def parse_rst(data: bytes, name: str) -> ParsedDocument:
    text = normalize_newlines(decode_bytes(data, name))
    segments = rst_segments(text.split("\n"))
    title = next((s.headings[0] for s in segments if s.headings), None)
    return ParsedDocument(format="rst", text=text, segments=segments, title=title)
