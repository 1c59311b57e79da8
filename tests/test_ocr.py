"""OCR of scanned PDFs (CITEDOCS_OCR, Tesseract): a real text PDF from the shared fixtures is rendered to page
images and written back as an image-only PDF (Pillow), then indexed by `citedocs add` with OCR on and found on
its page by its own words; the OCR text is compared word by word with the original's text layer. The pass is
resumable (a file set aside for OCR is picked up by the next process), and without Tesseract a scanned PDF is a
failure that names the package to install."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pypdfium2 as pdfium
import pytest

from citedocs.parsers import parse_bytes, parse_file
from citedocs.parsers.ocr import OcrOptions, read_tsv
from citedocs.service import Citedocs
from citedocs.settings import Settings
from conftest import shared

NEEDS_TESSERACT = pytest.mark.skipif(
    shutil.which("tesseract") is None,
    reason="needs Tesseract (apt-get install tesseract-ocr tesseract-ocr-jpn; .ci/run installs it)",
)
_WORD = re.compile(r"\w+")


def scanned_copy(source: Path, target: Path, dpi: int = 200, pages: int | None = None) -> Path:
    """`source` rendered page by page and saved as an image-only PDF: no text layer, as from a scanner."""
    doc = pdfium.PdfDocument(str(source))
    try:
        images = [
            doc[i].render(scale=dpi / 72, grayscale=True).to_pil()
            for i in range(min(len(doc), pages or len(doc)))
        ]
    finally:
        doc.close()
    images[0].save(target, "PDF", resolution=dpi, save_all=True, append_images=images[1:])
    return target


def words(text: str) -> Counter[str]:
    return Counter(w.lower() for w in _WORD.findall(text))


def word_accuracy(original: str, ocred: str) -> tuple[float, float]:
    """(recall, precision) of the OCR text's words against the original's, as multisets of lower-case words."""
    truth, found = words(original), words(ocred)
    common = sum((truth & found).values())
    return common / max(1, sum(truth.values())), common / max(1, sum(found.values()))


def _cli(*args: str, db: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "CITEDOCS_DB": str(db), "CITEDOCS_EMBEDDER": "none", **env}
    proc = subprocess.run(
        [sys.executable, "-m", "citedocs", *args],
        capture_output=True,
        text=True,
        env=full,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc


def test_tesseract_tsv_becomes_lines_paragraphs_and_confidences() -> None:
    head = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext"
    rows = [
        "5\t1\t1\t1\t1\t1\t0\t0\t1\t1\t96.5\tHello",
        "5\t1\t1\t1\t1\t2\t0\t0\t1\t1\t90\tworld",
        "4\t1\t1\t1\t2\t0\t0\t0\t1\t1\t-1\t",
        "5\t1\t1\t1\t2\t1\t0\t0\t1\t1\t80\tsecond",
        "5\t1\t2\t1\t1\t1\t0\t0\t1\t1\t70\tnext",
        "5\t1\t2\t1\t1\t2\t0\t0\t1\t1\t-1\t ",
    ]
    page = read_tsv("\n".join([head, *rows]))
    assert page.lines == ["Hello world", "second", "", "next"]
    assert page.confidences == [96.5, 90.0, 80.0, 70.0]


@NEEDS_TESSERACT
@pytest.mark.slow
def test_a_scanned_fixture_is_ocred_with_its_pages_and_close_to_its_text_layer(tmp_path: Path) -> None:
    source = shared("parser-fixtures", "pdf", "markitdown_REPAIR-2022-INV-001_multipage.pdf")
    scan = scanned_copy(source, tmp_path / "scan.pdf", pages=2)
    with pytest.raises(Exception, match="scanned"):
        parse_file(scan)
    ocred = parse_bytes(scan.read_bytes(), "scan.pdf", ocr=OcrOptions(languages="eng", dpi=300))
    original = parse_file(source)
    assert ocred.pages == 2 and {s.page for s in ocred.segments} == {1, 2}
    assert ocred.ocr_confidence is not None and ocred.ocr_confidence > 80
    first_two = original.text.split("[page 3]")[0]
    recall, precision = word_accuracy(first_two, ocred.text)
    print(f"word recall {recall:.3f}, precision {precision:.3f}, confidence {ocred.ocr_confidence:.1f}")
    assert recall > 0.9 and precision > 0.9


@NEEDS_TESSERACT
@pytest.mark.slow
def test_citedocs_add_with_ocr_finds_a_scanned_page_and_status_shows_its_confidence(tmp_path: Path) -> None:
    source = shared("parser-fixtures", "pdf", "markitdown_REPAIR-2022-INV-001_multipage.pdf")
    folder = tmp_path / "docs"
    folder.mkdir()
    scanned_copy(source, folder / "invoice-scan.pdf")
    (folder / "notes.md").write_text("# Notes\n\nNothing scanned here.\n", encoding="utf-8")
    db = tmp_path / "index.db"
    env = {"CITEDOCS_OCR": "true"}
    added = _cli("add", str(folder), db=db, env=env)
    assert (
        "1 scanned PDFs waiting for OCR" in added.stdout
        and "OCR: 1 scanned PDFs read (3 pages)" in added.stdout
    )
    status = json.loads(_cli("status", "--json", db=db, env=env).stdout)
    assert status["failures"] == [] and status["ocr"]["pending"] == 0
    [done] = status["ocr"]["ocred"]
    assert done["pages"] == 3 and done["confidence"] > 80
    assert [j["kind"] for j in status["jobs"]][:2] == ["ocr", "index"]
    # words only on page 2 of the original are found on page 2 of the scan
    assert "Batmobile" in parse_file(source).text.split("[page 2]")[1].split("[page 3]")[0]
    hits = json.loads(_cli("search", "Batmobile wayneindustries", "--json", db=db, env=env).stdout)["hits"]
    assert hits and Path(hits[0]["path"]).name == "invoice-scan.pdf" and hits[0]["page"] == 2


@NEEDS_TESSERACT
@pytest.mark.slow
def test_a_file_set_aside_for_ocr_is_picked_up_by_the_next_process(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    scanned_copy(shared("parser-fixtures", "pdf", "markitdown_test.pdf"), folder / "scan.pdf")
    settings = Settings(db=str(tmp_path / "index.db"), embedder="none", ocr=True)
    first = Citedocs(settings)
    first.add_folder(folder)
    [report] = first.index()
    assert report.ocr_pending == 1 and report.failed == 0
    assert first.status()["ocr"]["pending"] == 1
    first.close()  # stopped before the OCR pass, as a restart would
    second = Citedocs(settings)
    try:
        done = second.ocr()
        assert done is not None and (done.total, done.ocred) == (1, 1)
        status = second.status()
        assert status["ocr"]["pending"] == 0 and status["totals"]["indexed"] == 1
        [hit, *_] = second.search("agents cooperate divergent thinking", mode="keyword").hits
        assert hit.page == 1
        read = second.read(str(folder / "scan.pdf"), hit.line_start, hit.line_end)  # OCRed again, same lines
        assert read.text.split("\n")[0] in hit.text
        assert second.ocr() is not None and second.ocr().total == 0  # type: ignore[union-attr]
        [again] = second.index()  # unchanged: not set aside again
        assert (again.unchanged, again.ocr_pending) == (1, 0)
    finally:
        second.close()


def test_without_tesseract_a_scanned_pdf_names_the_package_to_install(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    blank = pdfium.PdfDocument.new()
    blank.new_page(595, 842)
    blank.save(str(folder / "scan.pdf"))
    blank.close()
    empty_path = tmp_path / "bin"
    empty_path.mkdir()  # PATH without tesseract (the interpreter is started by its full path)
    db = tmp_path / "index.db"
    off = _cli("add", str(folder), db=db, env={"PATH": str(empty_path)})
    assert "scanned PDF" in off.stdout and "CITEDOCS_OCR=true" in off.stdout
    assert "apt-get install tesseract-ocr" in off.stdout
    on = _cli("reindex", db=db, env={"PATH": str(empty_path), "CITEDOCS_OCR": "true"})
    assert "OCR: 0 scanned PDFs read (0 pages), 1 failed" in on.stdout
    status = json.loads(
        _cli("status", "--json", db=db, env={"PATH": str(empty_path), "CITEDOCS_OCR": "true"}).stdout
    )
    [failure] = status["failures"]
    assert (
        "Tesseract is not installed" in failure["reason"]
        and "apt-get install tesseract-ocr" in failure["reason"]
    )
    assert status["ocr"]["problem"] == "Tesseract is not installed" and status["ocr"]["tesseract"] is None


@NEEDS_TESSERACT
@pytest.mark.slow
def test_an_image_is_ocred_only_with_ocr_on_and_found_by_type(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    doc = pdfium.PdfDocument(str(shared("parser-fixtures", "pdf", "markitdown_test.pdf")))
    doc[0].render(scale=200 / 72, grayscale=True).to_pil().save(folder / "screenshot.png")
    doc.close()
    (folder / "notes.md").write_text("# Notes\n\nplain text\n", encoding="utf-8")
    off = Citedocs(Settings(db=str(tmp_path / "index.db"), embedder="none"))
    off.add_folder(folder)
    [report] = off.index()
    assert (report.total, report.failed) == (1, 0)  # images are not even listed without OCR
    off.close()
    on = Citedocs(Settings(db=str(tmp_path / "index.db"), embedder="none", ocr=True))
    try:
        [report] = on.index()
        assert report.ocr_pending == 1
        done = on.ocr()
        assert done is not None and done.ocred == 1
        [hit, *_] = on.search("agents cooperate divergent thinking", mode="keyword", file_type="image").hits
        assert (Path(hit.path).name, hit.page) == ("screenshot.png", 1)
    finally:
        on.close()


def test_an_image_too_large_to_ocr_is_refused_before_it_is_decoded(tmp_path: Path) -> None:
    from PIL import Image

    path = tmp_path / "huge.png"
    Image.new("1", (9000, 9000)).save(path)  # 81 M pixels, a few KB on disk
    with pytest.raises(Exception, match="more than the 40 M OCR reads"):
        parse_bytes(path.read_bytes(), "huge.png", ocr=OcrOptions())
