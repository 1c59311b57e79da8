"""What every parser returns: the document's text as ordered segments that know where they came from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

SegmentKind = Literal["text", "code", "table"]


@dataclass(frozen=True, slots=True)
class Segment:
    """A run of text under one heading path, on one page (PDF) or one line span (everything else).

    `line_start`/`line_end` are 1-based, inclusive, and refer to `ParsedDocument.text` (the extracted text,
    which is the file itself for plain-text formats). `kind == "code"` marks a block the chunker must not
    split (a fenced code block); its text includes the fences. `table_header` (tables only) is repeated at
    the top of every chunk the table's rows are cut into; the segment's own lines are then its rows, one per
    line (spreadsheets and CSV files), so a chunk's line span is a span of rows.
    """

    text: str
    headings: tuple[str, ...] = ()
    line_start: int = 1
    line_end: int = 1
    page: int | None = None
    kind: SegmentKind = "text"
    table_header: tuple[str, ...] = ()


@dataclass(slots=True)
class ParsedDocument:
    """A parsed file. `text` is the full extracted text that `read PATH:START-END` serves."""

    format: str
    text: str
    segments: list[Segment] = field(default_factory=list)
    title: str | None = None
    pages: int | None = None
    ocr_confidence: float | None = None  # mean Tesseract word confidence (0-100) when the text was OCRed
