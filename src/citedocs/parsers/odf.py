"""OpenDocument text (.odt) and spreadsheets (.ods) via odfpy.

odt: headings from `text:h` and its outline level, paragraphs and list items one per line, tables as ` | `-joined
rows, in document order. ods: each sheet like an xlsx sheet (see xlsx.py, tables.py). OpenDocument compresses
runs of identical rows and cells into one element with a repeat count (a sheet commonly ends in one empty row
repeated a million times): empty repeats only advance the row number, and a non-empty repeat is expanded at
most MAX_REPEAT times.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

from odf import opendocument, teletype
from odf.namespaces import TABLENS, TEXTNS

from citedocs.errors import ParseError
from citedocs.parsers._build import TextBuilder, push_heading
from citedocs.parsers.base import ParsedDocument
from citedocs.parsers.budget import checkpoint
from citedocs.parsers.package import check_package, not_readable
from citedocs.parsers.tables import MAX_COLUMNS, add_table, trimmed
from citedocs.parsers.xlsx import sheet_marker

MAX_REPEAT = 1_000
MAX_DEPTH = 60
_CELLS = {(TABLENS, "table-cell"), (TABLENS, "covered-table-cell")}
_ROW_GROUPS = {(TABLENS, n) for n in ("table-row-group", "table-header-rows", "table-rows")}


def _elements(node: Any) -> Iterator[Any]:
    for child in node.childNodes:
        if child.nodeType == child.ELEMENT_NODE:
            yield child


def _text(node: Any) -> str:
    return " ".join(teletype.extractText(node).split())


def _repeat(node: Any, attribute: str) -> int:
    value = node.attributes.get((TABLENS, attribute))
    try:
        return max(1, int(value)) if value is not None else 1
    except ValueError:
        return 1


def _table_rows(table: Any, depth: int = 0) -> Iterator[Any]:
    for child in _elements(table):
        if child.qname == (TABLENS, "table-row"):
            yield child
        elif child.qname in _ROW_GROUPS and depth < MAX_DEPTH:
            yield from _table_rows(child, depth + 1)


def _row_cells(row: Any) -> list[str]:
    cells: list[str] = []
    for cell in _elements(row):
        if cell.qname not in _CELLS:
            continue
        checkpoint()
        text = "\n".join(_text(p) for p in _elements(cell))
        cells.extend(
            [text] * min(_repeat(cell, "number-columns-repeated"), MAX_REPEAT if text else MAX_COLUMNS + 1)
        )
        if len(cells) > MAX_COLUMNS:
            break
    return trimmed(cells)


def _sheet_rows(table: Any) -> Iterator[tuple[int | None, list[str]]]:
    number = 1
    for row in _table_rows(table):
        cells = _row_cells(row)
        repeat = _repeat(row, "number-rows-repeated")
        if any(cells):
            for i in range(min(repeat, MAX_REPEAT)):
                yield number + i, cells
        number += repeat


def _load(data: bytes, name: str, kind: str) -> Any:
    check_package(data, name, kind)
    try:
        return opendocument.load(io.BytesIO(data))
    except Exception as exc:
        raise not_readable(name, kind, exc) from exc


def parse_ods(data: bytes, name: str) -> ParsedDocument:
    document = _load(data, name, "ods")
    builder = TextBuilder()
    try:
        sheets = [t for t in _elements(document.spreadsheet) if t.qname == (TABLENS, "table")]
        for number, table in enumerate(sheets, start=1):
            title = str(table.attributes.get((TABLENS, "name")) or f"Sheet{number}")
            builder.add_unsegmented(sheet_marker(number, title))
            add_table(builder, _sheet_rows(table), (title,), numbered=True)
    except ParseError:
        raise
    except Exception as exc:
        raise not_readable(name, "ods", exc) from exc
    text, segments = builder.finish()
    return ParsedDocument(format="ods", text=text, segments=segments, title=_meta_title(document))


def _meta_title(document: Any) -> str | None:
    try:
        for node in _elements(document.meta):
            if node.qname[1] == "title":
                return _text(node) or None
    except Exception:
        return None
    return None


class _TextWalker:
    def __init__(self) -> None:
        self.builder = TextBuilder()
        self.stack: list[tuple[int, str]] = []
        self.headings: tuple[str, ...] = ()
        self.first_heading: str | None = None

    def walk(self, node: Any, depth: int = 0) -> None:
        for child in _elements(node):
            checkpoint()
            tag = child.qname
            if tag == (TEXTNS, "h"):
                text = _text(child)
                if not text:
                    continue
                level = child.attributes.get((TEXTNS, "outline-level"))
                self.headings = push_heading(self.stack, int(level) if str(level).isdigit() else 1, text)
                self.first_heading = self.first_heading or text
                self.builder.add(text, self.headings)
            elif tag == (TEXTNS, "p"):
                self.builder.add(_text(child), self.headings)
            elif tag == (TABLENS, "table"):
                rows = [" | ".join(_row_cells(row)) for row in _table_rows(child)]
                self.builder.add("\n".join(r for r in rows if r.strip(" |")), self.headings, "table")
            elif depth < MAX_DEPTH:  # lists, sections, frames and text boxes hold paragraphs
                self.walk(child, depth + 1)


def parse_odt(data: bytes, name: str) -> ParsedDocument:
    document = _load(data, name, "odt")
    walker = _TextWalker()
    try:
        walker.walk(document.text)
    except ParseError:
        raise
    except Exception as exc:
        raise not_readable(name, "odt", exc) from exc
    text, segments = walker.builder.finish()
    title = _meta_title(document) or walker.first_heading
    return ParsedDocument(format="odt", text=text, segments=segments, title=title)
