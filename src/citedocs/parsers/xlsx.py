"""Excel .xlsx/.xlsm via openpyxl in read-only mode: each worksheet a section, its rows a table.

The sheet name is the heading, the text has a `[sheet N: name]` line before each sheet, and every row starts
with its row number (see tables.py). Cells give their cached values (a formula never calculated by a
spreadsheet program has none, and reads as empty). The sheet's declared dimensions are ignored: a sheet that
claims A1:XFD1048576 is read for the rows it has, not padded to a million.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Iterator
from typing import Any

import openpyxl

from citedocs.errors import ParseError
from citedocs.parsers._build import TextBuilder
from citedocs.parsers.base import ParsedDocument
from citedocs.parsers.budget import checkpoint
from citedocs.parsers.package import check_package, not_readable
from citedocs.parsers.tables import add_table, trimmed


def sheet_marker(number: int, name: str) -> str:
    return f"[sheet {number}: {name}]"


def _rows(sheet: Any) -> Iterator[tuple[int | None, list[str]]]:
    sheet.reset_dimensions()
    for number, values in enumerate(sheet.iter_rows(values_only=True), start=1):
        if not number & 255:
            checkpoint()
        yield number, trimmed(values) if values else []


def parse_xlsx(data: bytes, name: str) -> ParsedDocument:
    check_package(data, name, "xlsx")
    try:
        with warnings.catch_warnings():  # openpyxl warns about styles and extensions it does not read
            warnings.simplefilter("ignore")
            book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except ParseError:
        raise
    except Exception as exc:
        raise not_readable(name, "xlsx", exc) from exc
    builder = TextBuilder()
    try:
        for number, sheet in enumerate(book.worksheets, start=1):
            name_ = str(sheet.title)
            builder.add_unsegmented(sheet_marker(number, name_))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                add_table(builder, _rows(sheet), (name_,), numbered=True)
    except ParseError:
        raise
    except Exception as exc:  # a sheet's XML that openpyxl cannot read
        raise not_readable(name, "xlsx", exc) from exc
    finally:
        book.close()
    text, segments = builder.finish()
    properties = book.properties
    found = str(properties.title or "").strip() if properties is not None else ""
    return ParsedDocument(format="xlsx", text=text, segments=segments, title=found or None)
