"""Slides, spreadsheets, OpenDocument, CSV, notebooks and e-books: each made here by the library that writes
the format (python-pptx, openpyxl, odfpy, ebooklib; csv and json from the standard library), parsed by
citedocs' own parser, indexed into a real SQLite index and found by a search for its own content, with the
slide, sheet and rows, cell or chapter a citation needs. Hostile files (zip bombs, a 45 MB CSV line, a
million-column row, malformed notebooks) are refused or read within the budgets, and indexing goes on."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from citedocs.errors import ParseError
from citedocs.parsers import parse_bytes, parse_file


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
        (
            "Quotas",
            [
                ["quota", "limit"],
                *[[f"quota_{i}", str(i)] for i in range(2, 40)],
                ["uploads per hour", "narwhal 75"],
            ],
        ),
    ):
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
            {
                "cell_type": "code",
                "metadata": {},
                "execution_count": 1,
                "source": "import pandas as pd\n",
                "outputs": [],
            },
            {
                "cell_type": "markdown",
                "metadata": {},
                "source": "## Cleaning\nDrop the rows without a customer id.",
            },
            {
                "cell_type": "code",
                "metadata": {},
                "execution_count": 2,
                "source": [
                    "frame = pd.read_csv('customers.csv')\n",
                    "frame = frame.dropna(subset=['customer_id'])",
                ],
                "outputs": [
                    {
                        "output_type": "stream",
                        "name": "stdout",
                        "text": ["dropped 42 rows of the axolotl export\n"],
                    },
                    {
                        "output_type": "display_data",
                        "data": {"image/png": "iVBORw0KGgo=", "text/html": "<b>x</b>"},
                        "metadata": {},
                    },
                ],
            },
        ],
    }
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


def package_bomb(template: bytes, member: str, expanded: int) -> bytes:
    """A real package with `member` replaced by `expanded` bytes of one repeated byte (~1000x compression)."""
    buffer = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(template)) as source,
        zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as out,
    ):
        for info in source.infolist():
            if info.filename != member:
                out.writestr(info.filename, source.read(info))
        with out.open(member, "w") as target:
            piece = b" " * (1 << 20)
            for _ in range(expanded >> 20):
                target.write(piece)
    return buffer.getvalue()


ALL_FORMATS = {
    "deck.pptx": make_pptx,
    "limits.xlsx": make_xlsx,
    "quotas.ods": make_ods,
    "handbook.odt": make_odt,
    "regions.csv": make_csv,
    "churn.ipynb": make_ipynb,
    "guide.epub": make_epub,
}


def cli(*args: str, db: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "CITEDOCS_DB": str(db), "CITEDOCS_EMBEDDER": "none", **(env or {})}
    proc = subprocess.run(
        [sys.executable, "-m", "citedocs", *args],
        capture_output=True,
        text=True,
        env=full,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 0, f"citedocs {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Every format, a markdown file beside them and three broken files, indexed by `citedocs add`."""
    root = tmp_path_factory.mktemp("formats")
    folder = root / "docs"
    folder.mkdir()
    for name, make in ALL_FORMATS.items():
        make(folder / name)
    (folder / "readme.md").write_text(
        "# Readme\n\nThe canary stage is described in the deck.\n", encoding="utf-8"
    )
    (folder / "broken.ipynb").write_text('{"cells": [', encoding="utf-8")
    (folder / "corrupt.xlsx").write_bytes(b"PK\x03\x04 not really a workbook" * 10)
    (folder / "random.pptx").write_bytes(bytes(range(256)) * 8)
    db = root / "index.db"
    report = json.loads(cli("add", str(folder), "--json", db=db).stdout)
    assert report[0]["indexed"] == len(ALL_FORMATS) + 1, report
    return folder, db


def _search(db: Path, query: str, file_type: str | None = None) -> list[dict[str, Any]]:
    from citedocs.service import Citedocs
    from citedocs.settings import Settings

    app = Citedocs(Settings(db=str(db), embedder="none"))
    try:
        return [
            h.to_dict(with_text=True) for h in app.search(query, mode="keyword", file_type=file_type).hits
        ]
    finally:
        app.close()


def test_broken_files_are_recorded_with_their_reason_and_the_rest_indexed(indexed: tuple[Path, Path]) -> None:
    _, db = indexed
    status = json.loads(cli("status", "--json", db=db).stdout)
    reasons = {Path(f["path"]).name: f["reason"] for f in status["failures"]}
    assert set(reasons) == {"broken.ipynb", "corrupt.xlsx", "random.pptx"}
    assert "not a readable notebook (invalid JSON" in reasons["broken.ipynb"]
    assert "not a readable .xlsx" in reasons["corrupt.xlsx"]
    assert "not a readable .pptx" in reasons["random.pptx"]


def test_a_slide_is_found_by_its_notes_with_its_number_and_title(indexed: tuple[Path, Path]) -> None:
    [hit, *_] = _search(indexed[1], "flamingo dashboard")
    assert Path(hit["path"]).name == "deck.pptx"
    assert hit["heading"] == "Slide 2: Quarterly latency budget"
    assert hit["page"] == 2
    assert "service | p99 budget" in hit["text"] and "Notes:" in hit["text"]


def test_a_spreadsheet_row_is_found_under_its_sheet_with_its_row_number(indexed: tuple[Path, Path]) -> None:
    [hit, *_] = _search(indexed[1], "zeppelin throttle")
    assert Path(hit["path"]).name == "limits.xlsx"
    assert hit["heading"] == "Limits"
    lines = hit["text"].split("\n")
    assert lines[:2] == ["| row | setting | value | note |", "| --- | --- | --- | --- |"]
    assert (
        "| 150 | max_websocket_frames | 4096 | per connection, then the zeppelin throttle applies |" in lines
    )
    [ods, *_] = _search(indexed[1], "narwhal")
    assert Path(ods["path"]).name == "quotas.ods" and ods["heading"] == "Quotas"
    assert "| 40 | uploads per hour | narwhal 75 |" in ods["text"].split("\n")


def test_a_csv_row_is_found_at_its_file_line_and_read_back_there(indexed: tuple[Path, Path]) -> None:
    folder, db = indexed
    [hit, *_] = _search(db, "pelican mirror")
    assert Path(hit["path"]).name == "regions.csv"
    assert hit["text"].startswith("| region | endpoint | timeout_ms |\n| --- | --- | --- |\n")
    assert hit["line_start"] <= 200 <= hit["line_end"]
    read = json.loads(cli("read", f"{folder / 'regions.csv'}:200-200", "--json", db=db).stdout)
    assert read["text"] == "| eu-west | https://eu.example, the pelican mirror | 950 |"


def test_a_notebook_cell_an_odt_section_and_an_epub_chapter_are_found_where_they_are(
    indexed: tuple[Path, Path],
) -> None:
    db = indexed[1]
    [cell, *_] = _search(db, "axolotl export")
    assert Path(cell["path"]).name == "churn.ipynb"
    assert cell["heading"] == "Churn analysis > Cleaning > cell 4"
    assert "dropna" in cell["text"] and "iVBORw0KGgo" not in cell["text"]
    [odt, *_] = _search(db, "walrus bucket")
    assert (Path(odt["path"]).name, odt["heading"]) == ("handbook.odt", "Operations handbook > Backups")
    [chapter, *_] = _search(db, "quokka heap")
    assert (Path(chapter["path"]).name, chapter["heading"]) == ("guide.epub", "Tuning > Memory")


def test_the_type_filter_takes_each_new_format(indexed: tuple[Path, Path]) -> None:
    db = indexed[1]
    assert {Path(h["path"]).name for h in _search(db, "canary stage")} == {"deck.pptx", "readme.md"}
    assert {Path(h["path"]).name for h in _search(db, "canary stage", "pptx")} == {"deck.pptx"}
    assert _search(db, "pelican", "pptx") == []
    hits = json.loads(cli("search", "pelican", "--type", "csv", "--json", db=db).stdout)["hits"]
    assert [Path(h["path"]).name for h in hits] == ["regions.csv"]
    for fmt, word in (
        ("xlsx", "zeppelin"),
        ("ods", "narwhal"),
        ("odt", "walrus"),
        ("ipynb", "axolotl"),
        ("epub", "quokka"),
        ("tsv", "pelican"),
    ):
        assert _search(db, word, fmt), fmt


# -- tables are cut between rows, under their header ----------------------------------------------------
def test_every_chunk_of_a_sheet_repeats_the_header_and_rows_do_not_overlap(tmp_path: Path) -> None:
    from citedocs.chunker import chunk_segments

    chunks = [
        c
        for c in chunk_segments(parse_file(make_xlsx(tmp_path / "l.xlsx", rows=600)).segments)
        if c.heading == "Limits"
    ]
    assert len(chunks) > 10
    previous_end = 0
    for chunk in chunks:
        lines = chunk.text.split("\n")
        assert lines[:2] == ["| row | setting | value | note |", "| --- | --- | --- | --- |"]
        rows = [int(line.split(" | ")[0].lstrip("| ")) for line in lines[2:]]
        assert rows == list(range(rows[0], rows[0] + len(rows)))
        assert rows[0] == previous_end + 1 if previous_end else rows[0] == 2
        previous_end = rows[-1]
        assert chunk.tokens <= 560
    assert previous_end == 600


def test_csv_chunks_span_the_file_lines_of_their_rows(tmp_path: Path) -> None:
    from citedocs.chunker import chunk_segments

    path = tmp_path / "multi.csv"
    path.write_text('id,comment\n1,"two\nlines"\n\n3,plain\n4,"x | y"\n', encoding="utf-8")
    doc = parse_file(path)
    assert doc.text.split("\n") == [
        "| id | comment |",
        "| 1 | two lines |",
        "",
        "",
        "| 3 | plain |",
        "| 4 | x \\| y |",
    ]
    [chunk] = chunk_segments(doc.segments)
    assert (chunk.line_start, chunk.line_end) == (2, 6)
    assert chunk.text == "| id | comment |\n| --- | --- |\n| 1 | two lines |\n| 3 | plain |\n| 4 | x \\| y |"
    tsv = tmp_path / "t.tsv"
    tsv.write_text("a\tb\n1,5\t2\n", encoding="utf-8")
    assert parse_file(tsv).text == "| a | b |\n| 1,5 | 2 |"


# -- hostile files --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("make", "member"), [(make_pptx, "ppt/slides/slide1.xml"), (make_xlsx, "xl/worksheets/sheet2.xml")]
)
def test_a_zip_bomb_pptx_or_xlsx_is_refused_before_it_is_unzipped(
    tmp_path: Path, make: Any, member: str
) -> None:
    name = "bomb" + (".pptx" if make is make_pptx else ".xlsx")
    bomb = package_bomb(make(tmp_path / name).read_bytes(), member, 100 << 20)
    assert len(bomb) < 1 << 20
    with pytest.raises(ParseError, match=r"over the 2 MB budget"):
        parse_bytes(bomb, name, max_bytes=1 << 20)
    with pytest.raises(ParseError, match="decompression bomb"):  # without a size cap: by its ratio
        parse_bytes(bomb, name, max_bytes=None)


def test_a_package_of_too_many_parts_is_refused(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as package:
        for i in range(10_001):
            package.writestr(f"p/{i}", b"")
    with pytest.raises(ParseError, match="10001 parts"):
        parse_bytes(buffer.getvalue(), "many.epub", max_bytes=50 << 20)


def test_a_csv_row_of_200000_columns_is_cut_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "wide.csv"
    path.write_text(
        ",".join(f"c{i}" for i in range(200_000)) + "\n" + ",".join("7" * 200_000) + "\n", encoding="utf-8"
    )
    doc = parse_file(path, max_bytes=50 << 20)
    first, second = doc.text.split("\n")
    assert first.count(" | ") == 1000 and first.endswith("| … (columns after 1000 not indexed) |")
    assert second.startswith("| 7 | 7 |")


@pytest.mark.slow
def test_a_csv_with_a_45_mb_line_is_indexed_within_the_budgets(tmp_path: Path) -> None:
    from citedocs.chunker import chunk_segments

    path = tmp_path / "huge.csv"
    word = "lorem ipsum dolor sit amet "
    path.write_text("id,blob\n1," + word * (45_000_000 // len(word)) + "\n2,tail row\n", encoding="utf-8")
    doc = parse_file(path, max_bytes=50 << 20)
    chunks = chunk_segments(doc.segments)
    assert chunks[-1].text.endswith("| 2 | tail row |") and chunks[-1].line_end == 3
    assert max(c.tokens for c in chunks) <= 600


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("[1, 2, 3]", "not a Jupyter notebook"),
        ('{"cells": {"a": 1}}', "no list of cells"),
        ("[" * 100_000 + "]" * 100_000, "invalid JSON"),
        ('{"cells": [', "invalid JSON"),
    ],
)
def test_a_malformed_notebook_is_a_clear_failure(body: str, message: str) -> None:
    with pytest.raises(ParseError, match=message) as caught:
        parse_bytes(body.encode(), "bad.ipynb", max_bytes=50 << 20)
    assert "Jupyter" in caught.value.hint


def test_a_notebook_with_odd_cells_keeps_what_it_can(tmp_path: Path) -> None:
    odd = {
        "cells": [
            7,
            {"cell_type": "code", "source": 5, "outputs": "x"},
            {"cell_type": "raw", "source": ["kept"]},
            {
                "cell_type": "code",
                "source": "print(1)",
                "outputs": [
                    {"output_type": "error", "ename": "E", "evalue": "boom", "traceback": ["\x1b[31m..."]}
                ],
            },
        ]
    }
    doc = parse_bytes(json.dumps(odd).encode(), "odd.ipynb")
    assert "kept" in doc.text and "E: boom" in doc.text and "\x1b" not in doc.text
    assert [s.headings for s in doc.segments][-1] == ("cell 4",)


def test_an_ods_row_repeated_a_million_times_is_expanded_at_most_a_thousand(tmp_path: Path) -> None:
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    doc = OpenDocumentSpreadsheet()
    table = Table(name="S")
    for repeat, text in ((1, "head"), (1_000_000, "again"), (1, "last")):
        row = TableRow(numberrowsrepeated=repeat)
        cell = TableCell(numbercolumnsrepeated=3)
        cell.addElement(P(text=text))
        row.addElement(cell)
        table.addElement(row)
    doc.spreadsheet.addElement(table)
    doc.save(str(tmp_path / "r.ods"))
    parsed = parse_file(tmp_path / "r.ods", max_bytes=50 << 20)
    lines = parsed.text.split("\n")
    assert len(lines) == 2 + 1000 + 1 and lines[-1] == "| 1000002 | last | last | last |"


def test_a_sheet_that_claims_a_million_rows_is_read_for_the_rows_it_has(tmp_path: Path) -> None:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet["A1"], sheet["B1"], sheet["A1048576"], sheet["XFD2"] = "head", "second", "bottom row", "far right"
    book.save(tmp_path / "sparse.xlsx")
    lines = parse_file(tmp_path / "sparse.xlsx", max_bytes=50 << 20).text.split("\n")
    assert lines[1] == "| row | head | second |" and lines[-1] == "| 1048576 | bottom row |"
    assert len(lines) == 4 and lines[2].endswith("| … (columns after 1000 not indexed) |")


def test_japanese_rows_and_slides_are_found_by_japanese_queries(tmp_path: Path) -> None:
    import pptx

    from citedocs.service import Citedocs
    from citedocs.settings import Settings

    folder = tmp_path / "ja"
    folder.mkdir()
    (folder / "設定.csv").write_text(
        "項目,値,説明\n"
        + "".join(f"項目{i},{i},通常の行です\n" for i in range(2, 60))
        + "最大接続数,100,接続数の上限を超えるとサーバーは新しい接続を拒否します\n",
        encoding="utf-8",
    )
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "バックアップ手順"
    slide.placeholders[1].text_frame.text = "毎晩二時にデータベースを複製します。"
    deck.save(str(folder / "手順.pptx"))
    app = Citedocs(Settings(db=str(tmp_path / "index.db"), embedder="none"))
    try:
        app.add_folder(folder)
        app.index()
        [row, *_] = app.search("接続数の上限", mode="keyword").hits
        assert Path(row.path).name == "設定.csv" and row.line_start <= 60 <= row.line_end
        assert "| 最大接続数 | 100 |" in row.text and row.text.startswith("| 項目 | 値 | 説明 |")
        [hit, *_] = app.search("データベースを複製", mode="keyword").hits
        assert (Path(hit.path).name, hit.heading, hit.page) == ("手順.pptx", "Slide 1: バックアップ手順", 1)
    finally:
        app.close()
