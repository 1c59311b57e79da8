"""PowerPoint .pptx via python-pptx: one section per slide, speaker notes included.

A slide's heading is `Slide N: title` (or `Slide N` when it has no title) and its page is N, so a hit and a
citation name the slide (a deck exported to PDF keeps those numbers as pages). The text of each shape is read
in the slide's order (groups opened, tables as ` | `-joined rows), then the speaker notes after a `Notes:` line.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pptx
from pptx.enum.shapes import MSO_SHAPE_TYPE, PP_PLACEHOLDER

from citedocs.errors import ParseError
from citedocs.parsers._build import TextBuilder
from citedocs.parsers.base import ParsedDocument
from citedocs.parsers.budget import checkpoint
from citedocs.parsers.package import check_package, not_readable

_TITLES = {PP_PLACEHOLDER.TITLE, PP_PLACEHOLDER.CENTER_TITLE, PP_PLACEHOLDER.VERTICAL_TITLE}
MAX_GROUP_DEPTH = 20


def _is_title(shape: Any) -> bool:
    return bool(shape.is_placeholder and shape.placeholder_format.type in _TITLES)


def _frame_text(frame: Any) -> str:
    lines = [" ".join(p.text.split()) for p in frame.paragraphs]
    return "\n".join(line for line in lines if line)


def _shape_blocks(shapes: Any, depth: int = 0) -> Iterator[tuple[str, str]]:
    """(kind, text) of each shape with text: "text" or "table"; titles are left to the caller."""
    for shape in shapes:
        checkpoint()
        if shape.shape_type == MSO_SHAPE_TYPE.GROUP and depth < MAX_GROUP_DEPTH:
            yield from _shape_blocks(shape.shapes, depth + 1)
        elif getattr(shape, "has_table", False) and shape.has_table:
            rows = [" | ".join(" ".join(c.text.split()) for c in row.cells) for row in shape.table.rows]
            yield "table", "\n".join(row for row in rows if row.strip(" |"))
        elif getattr(shape, "has_text_frame", False) and shape.has_text_frame and not _is_title(shape):
            yield "text", _frame_text(shape.text_frame)


def _title(slide: Any) -> str:
    for shape in slide.shapes:
        if getattr(shape, "has_text_frame", False) and shape.has_text_frame and _is_title(shape):
            return " ".join(shape.text_frame.text.split())
    return ""


def parse_pptx(data: bytes, name: str) -> ParsedDocument:
    check_package(data, name, "pptx")
    try:
        deck = pptx.Presentation(io.BytesIO(data))
    except Exception as exc:
        raise not_readable(name, "pptx", exc) from exc
    builder = TextBuilder()
    first_title: str | None = None
    try:
        for number, slide in enumerate(deck.slides, start=1):
            title = _title(slide)
            first_title = first_title or title or None
            heading = f"Slide {number}: {title}" if title else f"Slide {number}"
            builder.add(heading, (heading,), page=number)
            for kind, text in _shape_blocks(slide.shapes):
                builder.add(text, (heading,), "table" if kind == "table" else "text", page=number)
            if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
                notes = _frame_text(slide.notes_slide.notes_text_frame)
                if notes:
                    builder.add(f"Notes:\n{notes}", (heading,), page=number)
    except ParseError:
        raise
    except Exception as exc:  # a slide part python-pptx cannot read
        raise not_readable(name, "pptx", exc) from exc
    text, segments = builder.finish()
    deck_title = str(deck.core_properties.title or "").strip() or first_title
    return ParsedDocument(
        format="pptx", text=text, segments=segments, title=deck_title, pages=len(deck.slides)
    )
