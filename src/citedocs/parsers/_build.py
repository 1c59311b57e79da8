"""Shared plumbing: newline normalisation, heading stacks, and building text + segments line by line."""

from __future__ import annotations

import re

from citedocs.parsers.base import Segment, SegmentKind
from citedocs.parsers.budget import checkpoint

# Characters str.splitlines() breaks on besides "\n": replaced so `text.split("\n") == text.splitlines()`,
# which keeps every consumer's line numbers the same whichever way it splits.
_EXTRA_LINE_BREAKS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def normalize_newlines(text: str) -> str:
    """CRLF and CR become LF; other Unicode line separators become spaces (see _EXTRA_LINE_BREAKS)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _EXTRA_LINE_BREAKS.sub(" ", text)


def push_heading(stack: list[tuple[int, str]], level: int, title: str) -> tuple[str, ...]:
    """Pop headings at `level` or deeper, push this one; returns the new heading path."""
    while stack and stack[-1][0] >= level:
        stack.pop()
    stack.append((level, title))
    return tuple(title for _, title in stack)


def span_segment(
    lines: list[str],
    start: int,
    end: int,
    headings: tuple[str, ...],
    kind: SegmentKind = "text",
    page: int | None = None,
    table_header: tuple[str, ...] = (),
) -> Segment | None:
    """The segment for lines[start:end] (0-based, end exclusive) minus blank edges; None if all blank."""
    checkpoint()
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    if start >= end:
        return None
    return Segment(
        text="\n".join(lines[start:end]),
        headings=headings,
        line_start=start + 1,
        line_end=end,
        page=page,
        kind=kind,
        table_header=table_header,
    )


class TextBuilder:
    """Builds an extracted text one block at a time, grouping consecutive prose under one heading path.

    Code and table blocks are always segments of their own, so the chunker can keep them whole.
    """

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.segments: list[Segment] = []
        self._open: tuple[int, tuple[str, ...], SegmentKind, int | None, tuple[str, ...]] | None = None

    def add(
        self,
        block: str,
        headings: tuple[str, ...],
        kind: SegmentKind = "text",
        page: int | None = None,
        table_header: tuple[str, ...] = (),
    ) -> None:
        """A block of lines; `table_header` makes it a table of one row per line (see Segment)."""
        checkpoint(len(block))
        block_lines = normalize_newlines(block).split("\n")
        if not any(line.strip() for line in block_lines):
            return
        if self._open is None or kind != "text" or self._open[1:4] != (headings, kind, page):
            self._close()
            self._open = (len(self.lines), headings, kind, page, table_header)
        self.lines.extend(block_lines)
        if kind != "text":
            self._close()

    def add_unsegmented(self, line: str) -> None:
        """A line that belongs to the text but to no segment (a page marker)."""
        self._close()
        self.lines.append(line)

    def _close(self) -> None:
        if self._open is not None:
            start, headings, kind, page, header = self._open
            segment = span_segment(self.lines, start, len(self.lines), headings, kind, page, header)
            if segment is not None:
                self.segments.append(segment)
            self._open = None

    def finish(self) -> tuple[str, list[Segment]]:
        self._close()
        return "\n".join(self.lines), self.segments
