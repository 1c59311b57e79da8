"""Nothing crashes, nothing stalls: decompression bombs, FIFOs and parsers past their budgets are recorded as
failed with a reason while indexing goes on, and memory stays bounded."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import docx
import pytest

from citedocs.errors import ParseError
from citedocs.parsers import parse_bytes
from conftest import shared

MB = 1_048_576
W_NS = b"http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def docx_bomb(path: Path, expanded: int = 1024 * MB) -> None:
    """A real .docx (python-docx's own template) whose word/document.xml is `expanded` bytes, nearly all of one
    repeated byte, so it compresses to ~1 MB for 1 GB and would load if it were read."""
    template = io.BytesIO()
    docx.Document().save(template)
    head = b'<?xml version="1.0"?><w:document xmlns:w="%s"><w:body><w:p><w:r><w:t>' % W_NS
    tail = b"</w:t></w:r></w:p></w:body></w:document>"
    with zipfile.ZipFile(template) as source, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as package:
        for info in source.infolist():
            if info.filename != "word/document.xml":
                package.writestr(info.filename, source.read(info))
        with package.open("word/document.xml", "w") as member:
            member.write(head)
            piece = b" " * MB
            for _ in range(expanded // MB):
                member.write(piece)
            member.write(tail)


def lying_bomb(expanded: int) -> bytes:
    """A zip whose central directory declares a tiny document.xml that really inflates to `expanded` bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as package:
        package.writestr("word/document.xml", b" " * expanded)
    data = bytearray(buffer.getvalue())
    central = data.rfind(b"PK\x01\x02")
    data[central + 24 : central + 28] = (100).to_bytes(4, "little")  # uncompressed size in the directory
    return bytes(data)


@pytest.mark.timeout(300)
def test_bomb_fifo_and_200_files_index_with_reasons_and_bounded_memory(tmp_path: Path) -> None:
    folder = tmp_path / "hostile"
    folder.mkdir()
    for i in range(200):
        (folder / f"note{i:03}.md").write_text(f"# Note {i}\n\nordinary note number {i}\n", encoding="utf-8")
    docx_bomb(folder / "bomb.docx")
    assert (folder / "bomb.docx").stat().st_size < 3 * MB
    os.mkfifo(folder / "pipe.md")
    measure = (
        "import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(r.returncode)"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            measure,
            sys.executable,
            "-m",
            "citedocs",
            "add",
            str(folder),
            "--json",
            "--db",
            str(tmp_path / "index.sqlite3"),
        ],
        capture_output=True,
        text=True,
        timeout=280,
        env={**os.environ, "CITEDOCS_EMBEDDER": "none"},
    )
    assert done.returncode == 0, done.stderr
    [report] = json.loads(done.stdout)
    failures = {f["path"]: f["reason"] for f in report["failures"]}
    assert report["indexed"] == 200 and set(failures) == {"bomb.docx", "pipe.md"}
    assert "unzipped" in failures["bomb.docx"] and "budget" in failures["bomb.docx"]
    assert "FIFO" in failures["pipe.md"]
    peak_kb = int(done.stderr.strip().splitlines()[-1])
    assert peak_kb < 1024 * 1024, f"peak RSS {peak_kb / 1024:.0f} MB"


def test_a_docx_that_lies_about_its_size_is_cut_off_while_unzipping() -> None:
    with pytest.raises(ParseError, match=r"not a readable \.docx \(BadZipFile: Bad CRC-32"):
        parse_bytes(lying_bomb(8 * MB), "liar.docx", max_bytes=MB)


def test_a_docx_over_the_budget_is_refused_before_it_is_unzipped() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as package:
        package.writestr("word/document.xml", b"<" * (3 * MB))
    with pytest.raises(ParseError, match=r"unzipped, it declares 3\.0 MB, over the 2 MB budget"):
        parse_bytes(buffer.getvalue(), "big.docx", max_bytes=MB)


SAMPLES = {
    "a.txt": b"Title\n=====\n\nsome text\n",
    "a.md": b"# Title\n\nsome text\n",
    "a.rst": b"Title\n=====\n\nsome text\n",
    "a.py": b"def f():\n    return 1\n",
    "a.html": b"<html><body><h1>Title</h1><p>some text</p></body></html>",
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_text_parser_stops_at_its_deadline(name: str) -> None:
    assert parse_bytes(SAMPLES[name], name).segments
    with pytest.raises(ParseError, match="parse budget"):
        parse_bytes(SAMPLES[name], name, seconds=-1)


def test_pdf_and_docx_parsers_stop_at_their_deadline() -> None:
    pdf = shared("parser-fixtures", "pdf", "markitdown_REPAIR-2022-INV-001_multipage.pdf").read_bytes()
    assert parse_bytes(pdf, "a.pdf").pages
    with pytest.raises(ParseError, match="parse budget"):
        parse_bytes(pdf, "a.pdf", seconds=-1)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as package:
        package.writestr("word/document.xml", "<w:document/>")
    with pytest.raises(ParseError, match="parse budget"):
        parse_bytes(buffer.getvalue(), "a.docx", seconds=-1)


def test_html_over_the_cap_is_refused_before_parsing() -> None:
    page = b"<html><body>" + b"<div>" * 200_000 + b"</body></html>"
    with pytest.raises(ParseError, match=r"larger than the 0\.5 MB cap"):
        parse_bytes(page, "deep.html", max_bytes=MB // 2)
