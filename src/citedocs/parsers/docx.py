"""Word .docx via python-docx: one paragraph per line, headings from Heading 1..9/Title styles (or an
outline level), tables as ` | `-joined rows, in document order. Text is read from the XML runs, so hyperlinks,
equations (OMML) and content controls keep their text and deleted revisions do not come back."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from typing import Any

import docx
from docx.oxml.ns import qn

from citedocs.parsers._build import TextBuilder, push_heading
from citedocs.parsers.base import ParsedDocument
from citedocs.parsers.package import check_package, not_readable

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


def parse_docx(data: bytes, name: str) -> ParsedDocument:
    """Parse .docx bytes; the package is checked against the byte budget before it is unzipped for real."""
    check_package(data, name, "docx")
    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:
        raise not_readable(name, "docx", exc) from exc
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
