"""One PDF page as a PNG image, with the cited text highlighted: what the web page shows to open a citation at
its place in the original (offline; PDFium renders, Pillow draws the marks).

The passage's lines are searched on the page as PDFium reads its text; each line found is marked with
translucent boxes over its characters. Lines the page spells differently (hyphenation, ligatures) are simply
not marked; `found` says how many were.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from citedocs.errors import InputError
from citedocs.parsers.pdf import _open

if TYPE_CHECKING:
    import pypdfium2 as pdfium  # PDFium and Pillow load on the first page shown, not at start-up

__all__ = ["MAX_WIDTH_PX", "RenderedPage", "render_page"]

MAX_WIDTH_PX = 1400
MIN_NEEDLE = 8  # shorter lines ("1.", "Name") would mark every place they occur
MAX_NEEDLES = 40
NEEDLE_CHARS = 120
HIGHLIGHT = (255, 214, 0, 110)


@dataclass(frozen=True, slots=True)
class RenderedPage:
    png: bytes
    page: int  # 1-based
    pages: int
    found: int  # passage lines found and marked on the page


def needles(passage: str) -> list[str]:
    """The passage's lines worth searching for: long enough to be specific, at most MAX_NEEDLES, each cut to
    NEEDLE_CHARS (PDFium finds a prefix as well as the whole)."""
    out: list[str] = []
    for line in passage.split("\n"):
        text = " ".join(line.split())
        if len(text) >= MIN_NEEDLE and not text.startswith("[page ") and text[:NEEDLE_CHARS] not in out:
            out.append(text[:NEEDLE_CHARS])
    return out[:MAX_NEEDLES]


def render_page(data: bytes, name: str, page: int, passage: str = "", width_px: int = 1100) -> RenderedPage:
    """Page `page` (1-based) of the PDF in `data`, `width_px` wide (at most MAX_WIDTH_PX), `passage` marked."""
    from PIL import Image, ImageDraw

    doc = _open(data, name)
    try:
        count = len(doc)
        if not 1 <= page <= count:
            raise InputError(
                f"{name} has {count} pages; there is no page {page}.", f"Ask for a page 1-{count}."
            )
        pdf_page = doc[page - 1]
        try:
            width_pt, height_pt = pdf_page.get_size()
            scale = min(MAX_WIDTH_PX, max(200, width_px)) / max(width_pt, 1.0)
            image = pdf_page.render(scale=scale).to_pil().convert("RGBA")
            boxes = _boxes(pdf_page, needles(passage)) if passage else []
        finally:
            pdf_page.close()
    finally:
        doc.close()
    found = len({index for index, _ in boxes})
    if boxes:
        layer = Image.new("RGBA", image.size, (0, 0, 0, 0))
        draw = ImageDraw.Draw(layer)
        for _, (left, bottom, right, top) in boxes:  # PDF points, origin bottom-left
            draw.rectangle(
                [
                    left * scale - 1,
                    (height_pt - top) * scale - 1,
                    right * scale + 1,
                    (height_pt - bottom) * scale + 1,
                ],
                fill=HIGHLIGHT,
            )
        image = Image.alpha_composite(image, layer)
    out = io.BytesIO()
    image.convert("RGB").save(out, format="PNG", optimize=False)
    return RenderedPage(out.getvalue(), page, count, found)


def _boxes(page: pdfium.PdfPage, lines: Sequence[str]) -> list[tuple[int, tuple[float, float, float, float]]]:
    """(line index, rectangle) for every place on the page where one of `lines` occurs."""
    textpage = page.get_textpage()
    try:
        out = []
        for index, line in enumerate(lines):
            searcher = textpage.search(line, match_case=False, match_whole_word=False)
            try:
                while (hit := searcher.get_next()) is not None:
                    start, count = hit
                    for rect in range(textpage.count_rects(start, count)):
                        out.append((index, textpage.get_rect(rect)))
            finally:
                searcher.close()
        return out
    finally:
        textpage.close()
