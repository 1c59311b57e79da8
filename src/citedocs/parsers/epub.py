"""EPUB e-books via ebooklib: the spine's documents in reading order, each a chapter, read by the HTML parser.

A chapter's heading is its title in the book's table of contents (else the document's own first heading or
<title>, else its file name); the chapter's HTML headings nest under it. The book is checked as a zip first
(see package.py), and ebooklib reads it from memory, never from a path.
"""

from __future__ import annotations

import io
import posixpath
import warnings
from collections.abc import Iterable
from typing import Any

from ebooklib import ITEM_DOCUMENT, epub

from citedocs.parsers._build import TextBuilder, push_heading
from citedocs.parsers.base import ParsedDocument, SegmentKind
from citedocs.parsers.budget import checkpoint
from citedocs.parsers.html import html_blocks
from citedocs.parsers.package import check_package, not_readable
from citedocs.parsers.text import decode_bytes

MAX_TOC_DEPTH = 20


def _toc_titles(entries: Iterable[Any], out: dict[str, str], depth: int = 0) -> dict[str, str]:
    """href (without fragment) -> the first title the table of contents gives it."""
    for entry in entries:
        if isinstance(entry, tuple | list) and len(entry) == 2 and depth < MAX_TOC_DEPTH:
            _toc_titles([entry[0]], out, depth + 1)
            _toc_titles(entry[1], out, depth + 1)
            continue
        href = getattr(entry, "href", None)
        title = " ".join(str(getattr(entry, "title", "") or "").split())
        if href and title:
            out.setdefault(posixpath.normpath(str(href).split("#", 1)[0]), title)
    return out


def parse_epub(data: bytes, name: str) -> ParsedDocument:
    check_package(data, name, "epub")
    try:
        with warnings.catch_warnings():  # ebooklib warns about its own future defaults
            warnings.simplefilter("ignore")
            book = epub.read_epub(io.BytesIO(data), {"ignore_ncx": False})
    except Exception as exc:
        raise not_readable(name, "epub", exc) from exc
    titles = _toc_titles(book.toc, {})
    builder = TextBuilder()
    for idref, *_ in book.spine:
        checkpoint()
        item = book.get_item_with_id(idref)
        if item is None or item.get_type() != ITEM_DOCUMENT:
            continue
        href = posixpath.normpath(item.get_name())
        blocks, page_title = html_blocks(decode_bytes(item.get_content(), name))
        if not blocks:
            continue
        first = next((b.plain for b in blocks if b.kind == "heading"), None)
        chapter = titles.get(href) or first or page_title or posixpath.basename(href)
        stack: list[tuple[int, str]] = [(0, chapter)]
        headings: tuple[str, ...] = (chapter,)
        for block in blocks:
            if block.kind == "heading":
                if block.plain == chapter and len(stack) == 1:
                    builder.add(block.plain, headings)
                    continue
                headings = push_heading(stack, block.level, block.plain)
            kind: SegmentKind = (
                "code" if block.kind == "code" else "table" if block.kind == "table" else "text"
            )
            builder.add(block.plain, headings, kind)
    text, segments = builder.finish()
    metadata = book.get_metadata("DC", "title")
    title = " ".join(str(metadata[0][0]).split()) if metadata and metadata[0] else None
    return ParsedDocument(format="epub", text=text, segments=segments, title=title or None)
