"""Tables as the model reads them: markdown pipe rows, a header repeated over every chunk of rows.

Spreadsheets (xlsx, ods) and CSV files all come here as rows of cell strings. A sheet's text is a marker line,
its header row, then one line per row; the rows are one table segment whose `table_header` is the header row
and a rule, so the chunker cuts between rows and puts the header on top of each piece (see chunker.py).
Spreadsheet rows start with their row number (a `row` column), so a cited chunk names the rows it came from.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable

from citedocs.parsers._build import TextBuilder
from citedocs.parsers.budget import checkpoint

MAX_COLUMNS = 1_000
"""Columns kept per row; a row wider than this is cut (and says so), a sheet that wide is not a table to read."""

_SPACE = re.compile(r"\s+")


def cell_text(value: object) -> str:
    """One cell as table text: whitespace folded to single spaces, pipes escaped; floats without a '.0'."""
    if value is None:
        return ""
    if isinstance(value, dt.datetime) and value.time() == dt.time():
        value = value.date().isoformat()
    elif isinstance(value, dt.date | dt.time):
        value = value.isoformat()
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    return _SPACE.sub(" ", str(value)).strip().replace("|", "\\|")


def trimmed(cells: Iterable[object]) -> list[str]:
    """Cell texts without trailing empties, at most MAX_COLUMNS (plus a marker cell when more had text)."""
    values = [cell_text(value) for value in cells]
    if len(values) > MAX_COLUMNS:
        cut = any(values[MAX_COLUMNS:])
        values = values[:MAX_COLUMNS]
        if cut:
            values.append(f"… (columns after {MAX_COLUMNS} not indexed)")
    while values and not values[-1]:
        values.pop()
    return values


def markdown_row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def rule(width: int) -> str:
    return "|" + " --- |" * max(1, width)


def add_table(
    builder: TextBuilder,
    rows: Iterable[tuple[int | None, list[str]]],
    headings: tuple[str, ...],
    *,
    numbered: bool,
) -> int:
    """Add a table to `builder`: the first non-empty row is its header, each later row one line.

    `rows` are (row number, cells); with `numbered` each line starts with the row number in a `row` column.
    Returns the number of data rows added."""
    header: list[str] | None = None
    header_line = ""
    body: list[str] = []
    for count, (number, cells) in enumerate(rows):
        if not count & 255:
            checkpoint()
        if not any(cells):
            continue
        if header is None:
            header = ["row", *cells] if numbered else cells
            header_line = markdown_row(header)
            continue
        body.append(markdown_row([str(number), *cells] if numbered else cells))
    if header is None:
        return 0
    builder.add_unsegmented(header_line)
    table_header = (header_line, rule(len(header)))
    if body:
        builder.add("\n".join(body), headings, "table", table_header=table_header)
    else:  # a header alone is still text someone may search for
        builder.add(header_line, headings)
    return len(body)
