"""Zip-based formats (docx, pptx, xlsx, ods, odt, epub) are checked before their library unzips them.

A zip bomb is refused by its declared part count, by its declared sizes, and then by the bytes it really
inflates to (read in pieces with a running total, never a whole member): against the parse's byte budget,
and, with or without one, against a compression ratio no office file or e-book reaches.
"""

from __future__ import annotations

import io
import zipfile

from citedocs.errors import ParseError
from citedocs.parsers.budget import checkpoint, current_limit, over_budget

MAX_PARTS = 10_000  # a real package has tens to a few thousand parts; the central directory is parsed whole
MAX_RATIO = 200  # inflated bytes per zipped byte; deflate's ceiling is ~1032x (a bomb of zeros)
RATIO_FLOOR = 64 * 1_048_576  # below this much inflated text the ratio is not checked (small files vary)
_EOCD = b"PK\x05\x06"
UNREADABLE = "Open and re-save it in the program that made it (password-protected files cannot be indexed)."


def _part_count(data: bytes) -> int | None:
    """Entries the zip's end record declares (read before zipfile builds one object per entry)."""
    end = data.rfind(_EOCD, max(0, len(data) - 65_557))
    if end < 0 or len(data) < end + 22:
        return None
    return int.from_bytes(data[end + 10 : end + 12], "little")


def _ratio_problem(name: str, inflated: int, zipped: int) -> ParseError | None:
    if inflated <= RATIO_FLOOR or inflated <= MAX_RATIO * max(1, zipped):
        return None
    return ParseError(
        f"{name}: unzips to {inflated / 1_048_576:.0f} MB from {zipped / 1_048_576:.1f} MB "
        f"(over {MAX_RATIO}x, a decompression bomb's ratio); not read",
        "If the file is genuine, open and re-save it; citedocs refuses archives that expand this much.",
    )


def check_package(data: bytes, name: str, kind: str) -> None:
    """Raise ParseError for a `.kind` zip that is not one, is too many parts, or unzips past the budget."""
    limit = current_limit()
    parts = _part_count(data)
    if parts is not None and parts >= min(MAX_PARTS, 0xFFFF):
        raise ParseError(f"{name}: a zip of {parts} parts, more than a .{kind} has; not read", UNREADABLE)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as package:
            members = package.infolist()
            if len(members) >= MAX_PARTS:
                raise ParseError(
                    f"{name}: a zip of {len(members)} parts, more than a .{kind} has; not read", UNREADABLE
                )
            declared = sum(info.file_size for info in members)
            if limit is not None and declared > limit:
                raise over_budget(name, "unzipped, it declares", declared, limit)
            if problem := _ratio_problem(name, declared, len(data)):
                raise problem
            total = 0
            for info in members:
                with package.open(info) as member:
                    while piece := member.read(1 << 20):
                        total += len(piece)
                        if limit is not None and total > limit:
                            raise over_budget(name, "unzipped, it comes to more than", total, limit)
                        if problem := _ratio_problem(name, total, len(data)):
                            raise problem
                        checkpoint()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, OSError, EOFError) as exc:
        raise ParseError(f"{name}: not a readable .{kind} ({type(exc).__name__}: {exc})", UNREADABLE) from exc


def not_readable(name: str, kind: str, exc: Exception) -> ParseError:
    """The error for a package its library could not read (after `check_package` passed)."""
    return ParseError(f"{name}: not a readable .{kind} ({type(exc).__name__}: {exc})", UNREADABLE)
