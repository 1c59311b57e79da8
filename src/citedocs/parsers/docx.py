"""Word .docx via python-docx: one paragraph per line, headings from Heading 1..9/Title styles (or an
outline level), tables as ` | `-joined rows, in document order. Text is read from the XML runs, so hyperlinks,
equations (OMML) and content controls keep their text and deleted revisions do not come back."""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterator
from typing import Any

import docx
from docx.oxml.ns import qn

from citedocs.errors import ParseError
from citedocs.parsers._build import TextBuilder, push_heading
from citedocs.parsers.base import ParsedDocument
from citedocs.parsers.budget import checkpoint, current_limit, over_budget

_HEADING_STYLE = re.compile(r"^heading\s*([1-9])$", re.IGNORECASE)
_SPACE = re.compile(r"[ \t\u00a0]+")
_W_P, _W_TBL, _W_SDT, _W_SDT_CONTENT = qn("w:p"), qn("w:tbl"), qn("w:sdt"), qn("w:sdtContent")
_W_TR, _W_TC, _W_PPR = qn("w:tr"), qn("w:tc"), qn("w:pPr")
_TEXT_TAGS = {qn("w:t"), qn("m:t")}
_SPACE_TAGS = {qn("w:tab"), qn("w:br"), qn("w:cr")}
_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"


def paragraph_text(p: Any) -> str:
    """The visible text of a <w:p>: runs, hyperlinks, fields' results and math, in order."""
    parts: list[str] = []
    for element in p.iter():
        if element.tag in _TEXT_TAGS:
            if not any(ancestor.tag == _FALLBACK for ancestor in element.iterancestors()):
                parts.append(element.text or "")
        elif element.tag in _SPACE_TAGS:
            parts.append(" ")
    return _SPACE.sub(" ", "".join(parts)).strip()


def _body_blocks(container: Any) -> Iterator[Any]:
    """<w:p> and <w:tbl> children in order, looking inside block-level content controls."""
    for child in container.iterchildren():
        if child.tag in (_W_P, _W_TBL):
            yield child
        elif child.tag == _W_SDT:
            content = child.find(_W_SDT_CONTENT)
            if content is not None:
                yield from _body_blocks(content)


def table_rows(tbl: Any) -> list[str]:
    rows: list[str] = []
    for tr in tbl.iterchildren(_W_TR):
        cells = [" ".join(filter(None, map(paragraph_text, tc.iter(_W_P)))) for tc in tr.iterchildren(_W_TC)]
        if any(cells):
            rows.append(" | ".join(cells))
    return rows


class _StyleLevels:
    """Heading level (0 = Title, 1..9) for a paragraph, by style name through `based on`, or outline level."""

    def __init__(self, document: Any) -> None:
        self._styles = {style.style_id: style for style in document.styles}
        self._cache: dict[str, int | None] = {}

    def _style_level(self, style_id: str) -> int | None:
        if style_id not in self._cache:
            level: int | None = None
            style = self._styles.get(style_id)
            for _ in range(4):
                if style is None:
                    break
                name = (style.name or "").strip()
                match = _HEADING_STYLE.match(name)
                if match or name.lower() == "title":
                    level = int(match.group(1)) if match else 0
                    break
                style = getattr(style, "base_style", None)
            self._cache[style_id] = level
        return self._cache[style_id]

    def level(self, p: Any) -> int | None:
        ppr = p.find(_W_PPR)
        if ppr is None:
            return None
        style = ppr.find(qn("w:pStyle"))
        if style is not None:
            level = self._style_level(style.get(qn("w:val")) or "")
            if level is not None:
                return level
        outline = ppr.find(qn("w:outlineLvl"))
        if outline is not None and (value := outline.get(qn("w:val")) or "").isdigit() and int(value) < 9:
            return int(value) + 1
        return None


MAX_PARTS = 10_000  # a real .docx has tens of parts; the central directory alone is parsed into memory
_EOCD = b"PK\x05\x06"
_UNREADABLE = "Open and re-save it in Word or LibreOffice (password-protected files cannot be indexed)."


def _part_count(data: bytes) -> int | None:
    """Entries the zip's end record declares (read before zipfile builds one object per entry)."""
    end = data.rfind(_EOCD, max(0, len(data) - 65_557))
    if end < 0 or len(data) < end + 22:
        return None
    return int.from_bytes(data[end + 10 : end + 12], "little")


def check_package(data: bytes, name: str) -> None:
    """Refuse a zip that unzips past the parse budget, by its declared sizes and then by the bytes it really
    inflates to (read in pieces with a running total, never a whole member), before python-docx reads it."""
    limit = current_limit()
    parts = _part_count(data)
    if parts is not None and parts >= min(MAX_PARTS, 0xFFFF):
        raise ParseError(f"{name}: a zip of {parts} parts, more than a .docx has; not read", _UNREADABLE)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as package:
            members = package.infolist()
            declared = sum(info.file_size for info in members)
            if limit is not None and declared > limit:
                raise over_budget(name, "unzipped, it declares", declared, limit)
            total = 0
            for info in members:
                with package.open(info) as member:
                    while piece := member.read(1 << 20):
                        total += len(piece)
                        if limit is not None and total > limit:
                            raise over_budget(name, "unzipped, it comes to more than", total, limit)
                        checkpoint()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, OSError, EOFError) as exc:
        raise ParseError(f"{name}: not a readable .docx ({type(exc).__name__}: {exc})", _UNREADABLE) from exc


def parse_docx(data: bytes, name: str) -> ParsedDocument:
    """Parse .docx bytes; the package is checked against the byte budget before it is unzipped for real."""
    check_package(data, name)
    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:
        raise ParseError(f"{name}: not a readable .docx ({type(exc).__name__}: {exc})", _UNREADABLE) from exc
    levels = _StyleLevels(document)
    builder = TextBuilder()
    stack: list[tuple[int, str]] = []
    headings: tuple[str, ...] = ()
    first_title: str | None = None
    for block in _body_blocks(document.element.body):
        if block.tag == _W_TBL:
            builder.add("\n".join(table_rows(block)), headings, "table")
            continue
        text = paragraph_text(block)
        if not text:
            continue
        level = levels.level(block)
        if level is not None:
            headings = push_heading(stack, level, text)
            if first_title is None and level <= 1:
                first_title = text
        builder.add(text, headings)
    text, segments = builder.finish()
    title = (document.core_properties.title or "").strip() or first_title
    return ParsedDocument(format="docx", text=text, segments=segments, title=title)
