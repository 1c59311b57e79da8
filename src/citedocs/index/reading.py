"""Reading a registered folder's file back: lines of its text, from the descriptor checked inside the folder.

`read` (the MCP tool, `GET /documents`, `citedocs read`) and `find_similar` open a path the same way: every
registered folder is pinned by the identity stored at registration, the path is walked component by
component below it (sources/confined.py), and the bytes come from the descriptor those checks were made on, so
a file swapped for a symlink between the check and the read is refused, not followed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from citedocs.errors import InputError
from citedocs.settings import Settings
from citedocs.sources.confined import FolderHandle, Opened, read_capped
from citedocs.sources.folders import open_confined
from citedocs.store import Source, Store

if TYPE_CHECKING:
    from citedocs.parsers.pdf_page import RenderedPage


@dataclass(slots=True)
class ReadResult:
    path: str
    start_line: int
    end_line: int
    total_lines: int
    text: str
    format: str | None = None


def open_registered(
    store: Store, path: str, visible: Callable[[list[Source]], list[Source]] | None = None
) -> tuple[Path, Opened]:
    """The real path and the open descriptor of a regular file inside a registered folder (one of those
    `visible` keeps, for a token limited to some sources); the caller closes the descriptor."""
    from citedocs.index.folders import pin_source  # the indexer's module: loaded on a read, not at start

    def pin(folder: Path) -> FolderHandle:
        source = store.find_source(str(folder))
        return FolderHandle.pin(folder) if source is None else pin_source(store, source)

    registered = store.list_sources("folder")
    folders = [Path(s.uri) for s in (visible(registered) if visible else registered)]
    folder, opened = open_confined(path, folders, pin)
    return folder.joinpath(*opened.rel_parts), opened


def read_bytes(
    store: Store, settings: Settings, path: str, visible: Callable[[list[Source]], list[Source]] | None = None
) -> tuple[Path, bytes]:
    """The real path and the bytes (at most `max_file_mb`) of a registered file, read from its checked descriptor."""
    resolved, opened = open_registered(store, path, visible)
    try:
        return resolved, read_capped(opened, int(settings.max_file_mb * 1_048_576), resolved.name)
    finally:
        os.close(opened.fd)


def read_page_image(
    store: Store,
    settings: Settings,
    path: str,
    page: int,
    passage: str = "",
    visible: Callable[[list[Source]], list[Source]] | None = None,
) -> RenderedPage:
    """Page `page` of a registered PDF as a PNG, `passage` marked on it (the web page's "open the cited place")."""
    resolved, data = read_bytes(store, settings, path, visible)
    if not data.startswith(b"%PDF"):
        raise InputError(
            f"{resolved.name} is not a PDF, so it has no page images.",
            "Read its text instead (GET /read, `citedocs read`).",
        )
    from citedocs.parsers.pdf_page import render_page

    return render_page(data, resolved.name, page, passage)


def read_lines(
    store: Store,
    settings: Settings,
    path: str,
    start_line: int | None = None,
    end_line: int | None = None,
    visible: Callable[[list[Source]], list[Source]] | None = None,
) -> ReadResult:
    """Lines `start_line`..`end_line` (1-based, inclusive; all by default) of a registered file's text."""
    from citedocs.index.ocr import ocr_options
    from citedocs.parsers import parse_bytes

    resolved, data = read_bytes(store, settings, path, visible)
    max_bytes = int(settings.max_file_mb * 1_048_576)
    # an OCRed PDF is OCRed again to serve its lines (the same pages give the same text)
    parsed = parse_bytes(data, resolved.name, max_bytes, ocr=ocr_options(settings) if settings.ocr else None)
    lines = parsed.text.split("\n")
    start = max(1, start_line or 1)
    end = min(len(lines), end_line or len(lines))
    if start > len(lines):
        raise InputError(f"{path} has only {len(lines)} lines.", f"Ask for lines 1-{len(lines)}.")
    return ReadResult(str(resolved), start, end, len(lines), "\n".join(lines[start - 1 : end]), parsed.format)
