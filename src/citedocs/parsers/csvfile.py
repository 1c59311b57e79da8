"""CSV and TSV via the standard library's csv module: one table whose line numbers are the file's own.

Each record is put on the line where it starts in the file (a record with a quoted newline inside leaves the
lines it also covers empty), so a chunk's line span is the span of file lines, and of rows, it came from; `read
data.csv:10-20` shows those rows. The first non-empty record is the header. The delimiter is sniffed from the
start of the file among `,` `;` tab and `|` (tab for .tsv).
"""

from __future__ import annotations

import csv
import io
import sys

from citedocs.errors import ParseError
from citedocs.parsers._build import TextBuilder, normalize_newlines
from citedocs.parsers.base import ParsedDocument
from citedocs.parsers.budget import checkpoint
from citedocs.parsers.tables import markdown_row, rule, trimmed
from citedocs.parsers.text import decode_bytes

_SNIFF_CHARS = 16_384


def _dialect(sample: str, suffix: str) -> type[csv.Dialect] | csv.Dialect:
    if suffix == ".tsv":
        return csv.excel_tab
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|")
    except csv.Error:
        return csv.excel


def parse_csv(data: bytes, name: str, suffix: str = ".csv") -> ParsedDocument:
    text = normalize_newlines(decode_bytes(data, name))
    # a single field may be as long as the file (the byte and time budgets still hold)
    csv.field_size_limit(max(csv.field_size_limit(), min(sys.maxsize, len(text) + 1)))
    reader = csv.reader(io.StringIO(text, newline=""), _dialect(text[:_SNIFF_CHARS], suffix))
    lines: list[str] = []
    header: list[str] | None = None
    header_line = 0
    try:
        for cells in reader:
            checkpoint()
            row = trimmed(cells)
            end = reader.line_num  # the file line this record ends on
            start = len(lines) + 1
            lines.extend([""] * (end - len(lines)))
            if not any(row):
                continue
            if header is None:
                header, header_line = row, start
            lines[start - 1] = markdown_row(row)
    except csv.Error as exc:
        raise ParseError(
            f"{name}: not a readable CSV file (line {reader.line_num}: {exc})",
            "Check its quoting (an unclosed quote runs to the end of the file) and re-export it.",
        ) from exc
    builder = TextBuilder()
    for line in lines[: max(0, header_line - 1)]:
        builder.add_unsegmented(line)
    body = "\n".join(lines[header_line:])
    if header is not None and body.strip():
        builder.add_unsegmented(lines[header_line - 1])
        builder.add(body, (), "table", table_header=(markdown_row(header), rule(len(header))))
    elif header is not None:  # a header alone is still text someone may search for
        builder.add(lines[header_line - 1], ())
    out, segments = builder.finish()
    return ParsedDocument(format="csv", text=out, segments=segments)
