"""Markdown: heading paths from ATX and setext headings, fenced code and pipe tables as their own segments.

Line spans are the file's own lines; YAML/TOML front matter is in the text but in no segment.
"""

from __future__ import annotations

import re

from citedocs.parsers._build import normalize_newlines, push_heading, span_segment
from citedocs.parsers.base import ParsedDocument, Segment, SegmentKind
from citedocs.parsers.budget import checkpoint
from citedocs.parsers.text import decode_bytes

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_NOT_PARAGRAPH = re.compile(r"^\s*(?:[-*+>|]|\d+[.)]\s|#|<!--)|^ {4}|^\t")
_TABLE_ROW = re.compile(r"^ {0,3}\|")
_TABLE_RULE = re.compile(r"^ {0,3}\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")
_FRONT_TITLE = re.compile(r"""^title\s*[:=]\s*(?P<q>["']?)(?P<title>.+?)(?P=q)\s*$""")
_INLINE_MARKUP = re.compile(r"[*_`]+|\[([^\]]*)\]\([^)]*\)")


def front_matter_end(lines: list[str]) -> int:
    """Index of the first line after a `---`/`+++` front-matter block, or 0 when there is none."""
    if not lines or lines[0].rstrip() not in {"---", "+++"}:
        return 0
    closers = {"---", "..."} if lines[0].rstrip() == "---" else {"+++"}
    for i in range(1, min(len(lines), 500)):
        if lines[i].rstrip() in closers:
            return i + 1
    return 0


def _front_matter_title(lines: list[str]) -> str | None:
    for line in lines:
        match = _FRONT_TITLE.match(line)
        if match:
            return match.group("title").strip()
    return None


def _heading_text(raw: str) -> str:
    return _INLINE_MARKUP.sub(lambda m: m.group(1) or "", raw).strip()


def _fence_close(lines: list[str], start: int, fence: str) -> int:
    """Index of the closing fence line (or the last line when the fence is never closed)."""
    closer = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
    for i in range(start + 1, len(lines)):
        if closer.match(lines[i]):
            return i
    return len(lines) - 1


def _setext_level(lines: list[str], i: int, body_start: int) -> int | None:
    """Level when lines[i] is a one-line paragraph underlined by = or -; None otherwise."""
    if i + 1 >= len(lines) or not lines[i].strip() or _NOT_PARAGRAPH.match(lines[i]):
        return None
    if i > body_start and lines[i - 1].strip() and not _ATX.match(lines[i - 1]):
        return None
    match = _SETEXT.match(lines[i + 1])
    if match is None:
        return None
    return 1 if match.group(1)[0] == "=" else 2


def _is_code_comment(lines: list[str], i: int, level: int, seen_heading: bool) -> bool:
    """A `# ...` line that is a shell or Python comment in code a scraped page left unfenced, not a heading.

    Only after the page's first heading, only at level 1, and only when it is glued to the code around it: a
    line that is not blank right after it, or a comment line right before it. Headings in real pages stand
    apart; read as headings, such comments cut a page into sections of a line or two, named after a comment.
    """
    if level != 1 or not seen_heading:
        return False
    after = lines[i + 1].strip() if i + 1 < len(lines) else ""
    before = lines[i - 1].strip() if i > 0 else ""
    glued_after = bool(after) and _SETEXT.match(lines[i + 1]) is None
    return glued_after or (before.startswith("#") and _ATX.match(before) is not None)


def _table_end(lines: list[str], i: int) -> int | None:
    """End (exclusive) of a pipe table starting at lines[i], if a header row and rule start there."""
    if not _TABLE_ROW.match(lines[i]) or i + 1 >= len(lines) or not _TABLE_RULE.match(lines[i + 1]):
        return None
    end = i + 2
    while end < len(lines) and _TABLE_ROW.match(lines[end]):
        end += 1
    return end


def markdown_segments(lines: list[str], body_start: int = 0) -> list[Segment]:
    segments: list[Segment] = []
    stack: list[tuple[int, str]] = []
    headings: tuple[str, ...] = ()
    start = body_start

    def emit(begin: int, end: int, kind: SegmentKind = "text") -> None:
        segment = span_segment(lines, begin, end, headings, kind)
        if segment is not None:
            segments.append(segment)

    i = body_start
    while i < len(lines):
        if not i & 255:
            checkpoint()
        line = lines[i]
        fence = _FENCE_OPEN.match(line)
        if fence and not (fence.group(1)[0] == "`" and "`" in fence.group(2)):
            emit(start, i)
            close = _fence_close(lines, i, fence.group(1))
            emit(i, close + 1, "code")
            i = start = close + 1
            continue
        table_end = _table_end(lines, i)
        if table_end is not None:
            emit(start, i)
            emit(i, table_end, "table")
            i = start = table_end
            continue
        atx = _ATX.match(line)
        level = len(atx.group(1)) if atx else _setext_level(lines, i, body_start)
        if atx and level is not None and _is_code_comment(lines, i, level, bool(stack)):
            level = None
        if level is not None:
            title = _heading_text(atx.group(2) or "") if atx else _heading_text(line)
            emit(start, i)
            start = i
            if title:
                headings = push_heading(stack, level, title)
            i += 1 if atx else 2
            continue
        i += 1
    emit(start, len(lines))
    return segments


def parse_markdown(data: bytes, name: str) -> ParsedDocument:
    text = normalize_newlines(decode_bytes(data, name))
    lines = text.split("\n")
    body_start = front_matter_end(lines)
    segments = markdown_segments(lines, body_start)
    title = _front_matter_title(lines[1 : body_start - 1]) if body_start else None
    if title is None:
        title = next((s.headings[0] for s in segments if s.headings), None)
    return ParsedDocument(format="markdown", text=text, segments=segments, title=title)
