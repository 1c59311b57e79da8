"""Keyword indexing throughput of each new format beside markdown, and OCR time per page and word accuracy.

    nice -n 10 .venv/bin/python bench/bench_formats.py [--files 20] [--rounds 3] [--ocr-pages 3]

Each format gets `--files` files holding the same generated text (paragraphs for documents, rows of three cells
for tables: about 60 KB of text a file), written by the format's own library; each round indexes every format
into a fresh SQLite index (keyword only, embedder none), formats interleaved so machine noise falls on all of
them. Printed: median seconds, files/s and extracted-text MB/s per format, and each as a ratio of markdown's.
OCR: pages of the shared fixtures rendered to an image-only PDF (200 dpi, as a scanner would) and OCRed at
300 dpi with Tesseract (one thread), seconds per page and word recall/precision against the original text layer.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _env import SHARED_DATA, median, print_header

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from citedocs.parsers import OcrOptions, parse_bytes, parse_file  # noqa: E402
from citedocs.service import Citedocs  # noqa: E402
from citedocs.settings import Settings  # noqa: E402
from test_ocr import scanned_copy, word_accuracy  # noqa: E402 (the test's own scan and metric)

VOCAB = str.split(
    "install configure server client request response token stream index search query cache timeout retry "
    "folder file backup restore replica quota limit budget release deploy rollback monitor alert metric"
)
PARAGRAPHS = 120  # per file; ~60 KB of text


def _sentence(rng: random.Random, n: int = 14) -> str:
    return " ".join(rng.choice(VOCAB) for _ in range(n)).capitalize() + "."


def _content(seed: int) -> tuple[list[tuple[str, list[str]]], list[list[str]]]:
    """(sections of paragraphs, table rows) with the same words for every format."""
    rng = random.Random(seed)
    sections = [
        (f"Section {s}", [" ".join(_sentence(rng) for _ in range(3)) for _ in range(PARAGRAPHS // 6)])
        for s in range(6)
    ]
    rows = [["setting", "value", "note"]] + [
        [f"{rng.choice(VOCAB)}_{i}", str(i), _sentence(rng, 30)] for i in range(PARAGRAPHS * 2)
    ]
    return sections, rows


def write_markdown(path: Path, seed: int) -> None:
    sections, _ = _content(seed)
    path.write_text("\n\n".join(f"## {h}\n\n" + "\n\n".join(ps) for h, ps in sections), encoding="utf-8")


def write_pptx(path: Path, seed: int) -> None:
    import pptx

    deck = pptx.Presentation()
    for heading, paragraphs in _content(seed)[0]:
        for i in range(0, len(paragraphs), 4):
            slide = deck.slides.add_slide(deck.slide_layouts[1])
            slide.shapes.title.text = heading
            slide.placeholders[1].text_frame.text = "\n".join(paragraphs[i : i + 4])
    deck.save(str(path))


def write_xlsx(path: Path, seed: int) -> None:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    for row in _content(seed)[1]:
        sheet.append(row)
    book.save(str(path))


def write_ods(path: Path, seed: int) -> None:
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    doc = OpenDocumentSpreadsheet()
    table = Table(name="Settings")
    for cells in _content(seed)[1]:
        row = TableRow()
        for value in cells:
            cell = TableCell(valuetype="string")
            cell.addElement(P(text=value))
            row.addElement(cell)
        table.addElement(row)
    doc.spreadsheet.addElement(table)
    doc.save(str(path))


def write_odt(path: Path, seed: int) -> None:
    from odf.opendocument import OpenDocumentText
    from odf.text import H, P

    doc = OpenDocumentText()
    for heading, paragraphs in _content(seed)[0]:
        doc.text.addElement(H(outlinelevel=1, text=heading))
        for paragraph in paragraphs:
            doc.text.addElement(P(text=paragraph))
    doc.save(str(path))


def write_csv(path: Path, seed: int) -> None:
    import csv

    with path.open("w", encoding="utf-8", newline="") as out:
        csv.writer(out).writerows(_content(seed)[1])


def write_ipynb(path: Path, seed: int) -> None:
    cells = []
    for heading, paragraphs in _content(seed)[0]:
        cells.append({"cell_type": "markdown", "metadata": {}, "source": f"## {heading}"})
        for paragraph in paragraphs:
            cells.append({"cell_type": "markdown", "metadata": {}, "source": paragraph})
    path.write_text(
        json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}), encoding="utf-8"
    )


def write_epub(path: Path, seed: int) -> None:
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier(f"bench-{seed}")
    book.set_title("Bench")
    chapters = []
    for n, (heading, paragraphs) in enumerate(_content(seed)[0]):
        chapter = epub.EpubHtml(title=heading, file_name=f"c{n}.xhtml")
        chapter.content = (
            f"<html><body><h1>{heading}</h1>" + "".join(f"<p>{p}</p>" for p in paragraphs) + "</body></html>"
        )
        book.add_item(chapter)
        chapters.append(chapter)
    book.toc = chapters
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = chapters
    epub.write_epub(str(path), book)


WRITERS: dict[str, Callable[[Path, int], None]] = {
    "md": write_markdown,
    "pptx": write_pptx,
    "xlsx": write_xlsx,
    "ods": write_ods,
    "odt": write_odt,
    "csv": write_csv,
    "ipynb": write_ipynb,
    "epub": write_epub,
}


def index_seconds(folder: Path, work: Path) -> float:
    db = work / f"{folder.name}-{time.monotonic_ns()}.db"
    app = Citedocs(Settings(db=str(db), embedder="none"))
    try:
        app.add_folder(folder)
        started = time.perf_counter()
        [report] = app.index()
        seconds = time.perf_counter() - started
        assert report.failed == 0 and report.indexed == report.total, report.failures
        return seconds
    finally:
        app.close()
        db.unlink(missing_ok=True)


def bench_formats(files: int, rounds: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-formats-"))
    try:
        folders: dict[str, Path] = {}
        text_mb: dict[str, float] = {}
        for fmt, write in WRITERS.items():
            folder = work / fmt
            folder.mkdir()
            for i in range(files):
                write(folder / f"doc{i}.{fmt}", i)
            folders[fmt] = folder
            text_mb[fmt] = sum(len(parse_file(p).text.encode()) for p in folder.iterdir()) / 1e6
        times: dict[str, list[float]] = {fmt: [] for fmt in WRITERS}
        for _ in range(rounds):
            for fmt, folder in folders.items():
                times[fmt].append(index_seconds(folder, work))
        base = median(times["md"])
        print(f"## Keyword indexing, {files} files per format, median of {rounds} interleaved rounds\n")
        print("| format | on-disk MB | text MB | seconds | files/s | text MB/s | time vs md |")
        print("|---|---|---|---|---|---|---|")
        for fmt, folder in folders.items():
            seconds = median(times[fmt])
            disk = sum(p.stat().st_size for p in folder.iterdir()) / 1e6
            print(
                f"| {fmt} | {disk:.2f} | {text_mb[fmt]:.2f} | {seconds:.2f} | {files / seconds:.1f} | "
                f"{text_mb[fmt] / seconds:.2f} | {seconds / base:.2f}x |"
            )
        print()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def bench_ocr(pages: int, languages: str) -> None:
    fixtures = SHARED_DATA / "parser-fixtures" / "pdf"
    if not fixtures.exists():
        print(f"OCR: skipped, needs {fixtures}")
        return
    if shutil.which("tesseract") is None:
        print("OCR: skipped, Tesseract is not installed (apt-get install tesseract-ocr)")
        return
    print(f"## OCR ({languages}, 300 dpi, one Tesseract thread), first {pages} pages of each fixture\n")
    print("| fixture | pages | s/page | word recall | word precision | mean confidence |")
    print("|---|---|---|---|---|---|")
    work = Path(tempfile.mkdtemp(prefix="bench-ocr-"))
    per_page: list[float] = []
    try:
        for source in sorted(fixtures.glob("*.pdf")):
            original = parse_file(source)
            shown = min(pages, original.pages or 0)
            truth = "".join(original.text.split(f"[page {shown + 1}]")[0])
            scan = scanned_copy(source, work / source.name, pages=shown)
            started = time.perf_counter()
            ocred = parse_bytes(scan.read_bytes(), source.name, ocr=OcrOptions(languages=languages, dpi=300))
            seconds = (time.perf_counter() - started) / shown
            per_page.append(seconds)
            recall, precision = word_accuracy(truth, ocred.text)
            print(
                f"| {source.name} | {shown} | {seconds:.2f} | {recall:.3f} | {precision:.3f} | "
                f"{ocred.ocr_confidence or 0:.1f} |"
            )
        print(f"\nmedian {statistics.median(per_page):.2f} s per page\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ocr-pages", type=int, default=3)
    parser.add_argument("--ocr-languages", default="eng")
    args = parser.parse_args()
    print_header("New formats: keyword indexing throughput and OCR")
    bench_formats(args.files, args.rounds)
    if args.ocr_pages:
        bench_ocr(args.ocr_pages, args.ocr_languages)


if __name__ == "__main__":
    main()
