"""Slides, spreadsheets, OpenDocument, CSV, notebooks and e-books: each made here by the library that writes
the format (python-pptx, openpyxl, odfpy, ebooklib; csv and json from the standard library), parsed by
citedocs' own parser, indexed into a real SQLite index and found by a search for its own content, with the
slide, sheet and rows, cell or chapter a citation needs. Hostile files (zip bombs, a 45 MB CSV line, a
million-column row, malformed notebooks) are refused or read within the budgets, and indexing goes on."""

from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


# -- the files, made by the libraries that write each format ---------------------------------------------
def make_pptx(path: Path, slides: int = 3) -> Path:
    import pptx
    from pptx.util import Inches

    deck = pptx.Presentation()
    for n in range(1, slides + 1):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = f"Rollout plan {n}" if n != 2 else "Quarterly latency budget"
        body = slide.placeholders[1].text_frame
        body.text = f"Point one of slide {n}: the canary stage lasts {n * 2} hours."
        body.add_paragraph().text = f"Point two of slide {n}: page the on-call engineer."
        if n == 2:
            table = slide.shapes.add_table(2, 2, Inches(1), Inches(4), Inches(4), Inches(1)).table
            table.cell(0, 0).text, table.cell(0, 1).text = "service", "p99 budget"
            table.cell(1, 0).text, table.cell(1, 1).text = "checkout", "180 ms"
            slide.notes_slide.notes_text_frame.text = "Remind everyone the flamingo dashboard moved."
    deck.save(str(path))
    return path


def make_xlsx(path: Path, rows: int = 200) -> Path:
    import openpyxl

    book = openpyxl.Workbook()
    first = book.active
    first.title = "Overview"
    first.append(["topic", "owner"])
    first.append(["release train", "platform team"])
    limits = book.create_sheet("Limits")
    limits.append(["setting", "value", "note"])
    for i in range(2, rows + 1):
        limits.append([f"setting_{i}", i * 10, f"ordinary row {i}"])
    limits.cell(row=150, column=1, value="max_websocket_frames")
    limits.cell(row=150, column=2, value=4096)
    limits.cell(row=150, column=3, value="per connection, then the zeppelin throttle applies")
    book.save(str(path))
    return path


def make_ods(path: Path) -> Path:
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    doc = OpenDocumentSpreadsheet()
    for name, rows in (
        ("Budget", [["item", "cost"], ["servers", "1200"], ["coffee", "80"]]),
        ("Quotas", [["quota", "limit"], *[[f"quota_{i}", str(i)] for i in range(2, 40)],
                    ["uploads per hour", "narwhal 75"]]),
    ):  # fmt: skip
        table = Table(name=name)
        for cells in rows:
            row = TableRow()
            for value in cells:
                cell = TableCell(valuetype="string")
                cell.addElement(P(text=value))
                row.addElement(cell)
            table.addElement(row)
        # what LibreOffice writes after the last row: one empty row repeated to the sheet's end
        filler = TableRow(numberrowsrepeated=1048500)
        filler.addElement(TableCell(numbercolumnsrepeated=1024))
        table.addElement(filler)
        doc.spreadsheet.addElement(table)
    doc.save(str(path))
    return path


def make_odt(path: Path) -> Path:
    from odf.opendocument import OpenDocumentText
    from odf.text import H, P

    doc = OpenDocumentText()
    doc.text.addElement(H(outlinelevel=1, text="Operations handbook"))
    doc.text.addElement(P(text="This handbook covers the daily routine."))
    doc.text.addElement(H(outlinelevel=2, text="Backups"))
    doc.text.addElement(P(text="Backups run at 02:00 and are kept for 35 days in the walrus bucket."))
    doc.text.addElement(H(outlinelevel=2, text="Restores"))
    doc.text.addElement(P(text="A restore needs two approvals."))
    doc.save(str(path))
    return path


def make_csv(path: Path, rows: int = 300) -> Path:
    lines = ["region,endpoint,timeout_ms"]
    lines += [f"region-{i},https://api-{i}.example,{i * 3}" for i in range(2, rows + 1)]
    lines[199] = 'eu-west,"https://eu.example, the pelican mirror",950'  # line 200 of the file
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def make_ipynb(path: Path) -> Path:
    notebook = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {"language_info": {"name": "python"}},
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# Churn analysis\n", "Loading the data."]},
            {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": "import pandas as pd\n",
             "outputs": []},
            {"cell_type": "markdown", "metadata": {}, "source": "## Cleaning\nDrop the rows without a customer id."},
            {"cell_type": "code", "metadata": {}, "execution_count": 2,
             "source": ["frame = pd.read_csv('customers.csv')\n", "frame = frame.dropna(subset=['customer_id'])"],
             "outputs": [
                 {"output_type": "stream", "name": "stdout", "text": ["dropped 42 rows of the axolotl export\n"]},
                 {"output_type": "display_data", "data": {"image/png": "iVBORw0KGgo=", "text/html": "<b>x</b>"},
                  "metadata": {}},
             ]},
        ],
    }  # fmt: skip
    path.write_text(json.dumps(notebook), encoding="utf-8")
    return path


def make_epub(path: Path) -> Path:
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("citedocs-test-book")
    book.set_title("The Field Guide")
    book.set_language("en")
    chapters = []
    for n, (title, body) in enumerate(
        (
            ("Getting started", "<p>Install the tool and run it once.</p>"),
            ("Tuning", "<h2>Memory</h2><p>Set the heap to 2 GB when the quokka index grows.</p>"),
        ),
        start=1,
    ):
        chapter = epub.EpubHtml(title=title, file_name=f"chap_{n}.xhtml", lang="en")
        chapter.content = f"<html><body><h1>{title}</h1>{body}</body></html>"
        book.add_item(chapter)
        chapters.append(chapter)
    book.toc = chapters
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *chapters]
    epub.write_epub(str(path), book)
    return path
