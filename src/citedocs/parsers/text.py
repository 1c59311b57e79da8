"""Plain text and source/config files: robust decoding, then blank-line-separated blocks.

Plain text gets headings from underlined titles (`Title` over `=====`); Python gets them from `class`/`def`
lines, TOML/INI from `[section]` lines. Line spans are the file's own lines.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable

from citedocs.errors import ParseError
from citedocs.parsers._build import normalize_newlines, push_heading, span_segment
from citedocs.parsers.base import ParsedDocument, Segment, SegmentKind
from citedocs.parsers.budget import checkpoint

BINARY_SNIFF_BYTES = 8192

_UNDERLINE = re.compile(r"^(=+|-+|~+)\s*$")
_UNDERLINE_LEVEL = {"=": 1, "-": 2, "~": 3}
_PY_DEF = re.compile(r"^(\s*)(?:async\s+def|def|class)\s+(\w+)")
_INI_SECTION = re.compile(r"^\s*\[\[?\s*([^\[\]]+?)\s*\]\]?\s*(?:[#;].*)?$")

# Returns (level, title) when a line opens a heading, else None.
HeadingFinder = Callable[[list[str], int], "tuple[int, str] | None"]


def decode_bytes(data: bytes, name: str = "file") -> str:
    """Text from bytes, never failing on them: BOMs first, then UTF-8, then cp1252/latin-1.

    A NUL byte in the first 8 KB (without a UTF-16/32 BOM) means a binary file: ParseError.
    """
    for bom, encoding in (
        (codecs.BOM_UTF32_LE, "utf-32"),
        (codecs.BOM_UTF32_BE, "utf-32"),
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if data.startswith(bom):
            return data.decode(encoding, errors="replace")
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        raise ParseError(
            f"{name}: binary file (NUL bytes), not text",
            "Remove it from the folder or add its folder to CITEDOCS_EXTRA_IGNORE_DIRS.",
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    lenient = data.decode("utf-8", errors="replace")
    bad = lenient.count("\ufffd")
    good = sum(1 for ch in lenient if ord(ch) > 127) - bad
    if good > 4 * bad:  # UTF-8 with a few broken bytes, not a legacy encoding
        return lenient
    try:
        return data.decode("cp1252")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def underlined_heading(lines: list[str], i: int) -> tuple[int, str] | None:
    """`Title` followed by a line of = - or ~ at least 3 long; the line before must be blank."""
    if i + 1 >= len(lines) or (i > 0 and lines[i - 1].strip()):
        return None
    title = lines[i].strip()
    match = _UNDERLINE.match(lines[i + 1])
    if not title or match is None or len(match.group(1)) < 3 or lines[i][:1].isspace():
        return None
    if _UNDERLINE.match(lines[i]):
        return None
    return _UNDERLINE_LEVEL[match.group(1)[0]], title


def python_heading(lines: list[str], i: int) -> tuple[int, str] | None:
    match = _PY_DEF.match(lines[i])
    if match is None:
        return None
    indent = match.group(1).expandtabs(4)
    if len(indent) > 4:
        return None
    return (1 if not indent else 2), match.group(2)


def ini_heading(lines: list[str], i: int) -> tuple[int, str] | None:
    match = _INI_SECTION.match(lines[i])
    return (1, match.group(1)) if match else None


def block_segments(lines: list[str], find_heading: HeadingFinder | None, kind: SegmentKind) -> list[Segment]:
    """Blank-line-separated blocks; a heading line starts a new block and sets the path."""
    segments: list[Segment] = []
    stack: list[tuple[int, str]] = []
    headings: tuple[str, ...] = ()
    start = 0

    def flush(end: int) -> None:
        segment = span_segment(lines, start, end, headings, kind)
        if segment is not None:
            segments.append(segment)

    for i, line in enumerate(lines):
        if not i & 255:
            checkpoint()
        found = find_heading(lines, i) if find_heading else None
        if found is not None:
            flush(i)
            start = i
            headings = push_heading(stack, *found)
        elif not line.strip():
            flush(i)
            start = i + 1
    flush(len(lines))
    return segments


def _heading_finder(suffix: str) -> HeadingFinder | None:
    if suffix in {".py", ".pyi"}:
        return python_heading
    if suffix in {".toml", ".ini", ".cfg", ".conf", ".properties"}:
        return ini_heading
    return None


def parse_text(data: bytes, name: str) -> ParsedDocument:
    text = normalize_newlines(decode_bytes(data, name))
    lines = text.split("\n")
    segments = block_segments(lines, underlined_heading, "text")
    title = next((s.headings[0] for s in segments if s.headings), None)
    return ParsedDocument(format="text", text=text, segments=segments, title=title)


def parse_code(data: bytes, name: str, suffix: str) -> ParsedDocument:
    text = normalize_newlines(decode_bytes(data, name))
    segments = block_segments(text.split("\n"), _heading_finder(suffix), "code")
    return ParsedDocument(format="code", text=text, segments=segments)
