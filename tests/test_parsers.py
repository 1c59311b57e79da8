from __future__ import annotations

import runpy
from pathlib import Path

import docx
import pypdfium2 as pdfium
import pytest

from citedocs.errors import ParseError
from citedocs.parsers import SUPPORTED_EXTENSIONS, ParsedDocument, format_for, html_to_markdown, parse_file
from conftest import shared

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "examples" / "sample-docs"

FIXTURES = [
    "pdf/FedRAMP_Extensions.pdf",
    "pdf/FedRAMP_Guide_to_OSCAL-based_Content_rev5.pdf",
    "pdf/markitdown_REPAIR-2022-INV-001_multipage.pdf",
    "pdf/markitdown_test.pdf",
    "docx/markitdown_equations.docx",
    "docx/markitdown_rlink.docx",
    "docx/markitdown_test.docx",
    "docx/markitdown_test_with_comment.docx",
    "docx/python311_tutorial_classes.pandoc.docx",
    "html/markitdown/test_blog.html",
    "html/markitdown/test_wikipedia.html",
    "html/python311/library_json.html",
    "html/python311/library_sqlite3.html",
    "html/python311/tutorial_classes.html",
]
# Fixtures whose structure gives headings (the rest: PDFs without outline, docx without heading styles).
HAS_HEADINGS = {
    "pdf/FedRAMP_Guide_to_OSCAL-based_Content_rev5.pdf",
    "docx/markitdown_test.docx",
    "docx/markitdown_test_with_comment.docx",
    "docx/python311_tutorial_classes.pandoc.docx",
    *(name for name in FIXTURES if name.startswith("html/")),
}
# markitdown vector file name -> our fixture. Vectors for formats citedocs does not parse (xlsx, xls, pptx,
# msg, csv, ipynb, rss, zip, epub) and those whose fixture is not in the shared set (test.json,
# test_serp.html) are skipped; so are DATA_URI_TEST_VECTORS (they test embedding images as data: URIs).
VECTOR_FIXTURES = {
    "test.docx": "docx/markitdown_test.docx",
    "test.pdf": "pdf/markitdown_test.pdf",
    "test_blog.html": "html/markitdown/test_blog.html",
    "test_wikipedia.html": "html/markitdown/test_wikipedia.html",
}
# markitdown's placeholder for an image it shortened; citedocs indexes no images at all.
IMAGE_PLACEHOLDERS = {"data:image/png;base64..."}


def assert_spans_consistent(doc: ParsedDocument) -> None:
    lines = doc.text.split("\n")
    assert lines == doc.text.splitlines() or doc.text.endswith("\n")
    for segment in doc.segments:
        assert 1 <= segment.line_start <= segment.line_end <= len(lines)
        assert "\n".join(lines[segment.line_start - 1 : segment.line_end]) == segment.text


@pytest.mark.parametrize("name", FIXTURES)
def test_every_fixture_parses_with_structure(name: str) -> None:
    doc = parse_file(shared("parser-fixtures", name))
    assert doc.segments, name
    assert_spans_consistent(doc)
    if name.endswith(".pdf"):
        assert doc.pages and doc.pages >= 1
        assert all(s.page is not None and 1 <= s.page <= doc.pages for s in doc.segments)
    if name in HAS_HEADINGS:
        assert sum(1 for s in doc.segments if s.headings) >= len(doc.segments) // 2


@pytest.mark.parametrize("vector_name", sorted(VECTOR_FIXTURES))
def test_markitdown_vectors(vector_name: str) -> None:
    vectors = runpy.run_path(str(shared("parser-fixtures", "expected", "markitdown_test_vectors.py")))
    vector = next(v for v in vectors["GENERAL_TEST_VECTORS"] if v.filename == vector_name)
    path = shared("parser-fixtures", VECTOR_FIXTURES[vector_name])
    doc = parse_file(path)
    headings = {h for s in doc.segments for h in s.headings}
    markdown = html_to_markdown(path.read_text(encoding="utf-8")) if path.suffix == ".html" else ""
    for expected in vector.must_include:
        if expected in IMAGE_PLACEHOLDERS:
            continue
        if expected.startswith("#"):
            assert expected.lstrip("#").strip() in headings, expected
        elif "](" in expected or "[" in expected:
            assert expected in markdown, expected
        else:
            assert expected in doc.text, expected
    for unexpected in vector.must_not_include:
        assert unexpected not in doc.text
        assert unexpected not in markdown


def test_fedramp_pages_and_outline_headings() -> None:
    """Strings and pages checked by hand against pypdf's extraction of the same file."""
    doc = parse_file(shared("parser-fixtures", "pdf", "FedRAMP_Guide_to_OSCAL-based_Content_rev5.pdf"))
    assert doc.pages == 75
    assert doc.title == "Guide to OSCAL-Based FedRAMP® Content"
    expected = {
        "This document is intended for techni": (5, "1.1. Who Should Use This Document?"),
        "OSCAL uses UTF-8 character encoding": (18, "4.4.1. UTF-8 Character Encoding"),
        "wanted to limit the core OSCAL syntax to those elements": (41, "5.1.1. FedRAMP Extensions"),
        "FedRAMP citations file is identified with links from the property type": (
            56,
            "6.8. FedRAMP Standard Attachments (Acronyms, Laws/Regulations)",
        ),
    }
    for needle, (page, heading) in expected.items():
        [segment] = [s for s in doc.segments if needle in s.text]
        assert segment.page == page
        assert segment.headings[-1] == heading
    utf8 = next(s for s in doc.segments if "OSCAL uses UTF-8" in s.text)
    assert utf8.headings == (
        "4. Working with OSCAL Files",
        "4.4. OSCAL’s Minimum File Requirements",
        "4.4.1. UTF-8 Character Encoding",
    )
    lines = doc.text.split("\n")
    assert lines[utf8.line_start - 1 : utf8.line_end] == utf8.text.split("\n")
    page_18 = lines.index("[page 18]")
    assert page_18 < utf8.line_start - 1 < lines.index("[page 19]")


def test_pdf_without_outline_has_pages_but_no_headings() -> None:
    doc = parse_file(shared("parser-fixtures", "pdf", "markitdown_REPAIR-2022-INV-001_multipage.pdf"))
    assert doc.pages == 3
    assert {s.page for s in doc.segments} == {1, 2, 3}
    assert all(s.headings == () for s in doc.segments)
    assert "Gabriel Diaz" in doc.text


def test_corrupt_pdf_is_a_parse_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.pdf"
    path.write_bytes(b"%PDF-1.7\n this is not really a pdf \x00\xff" * 20)
    with pytest.raises(ParseError, match="not a readable PDF"):
        parse_file(path)


def test_pdf_without_text_is_reported_as_scanned(tmp_path: Path) -> None:
    blank = pdfium.PdfDocument.new()
    blank.new_page(595, 842)
    blank.new_page(595, 842)
    path = tmp_path / "scan.pdf"
    blank.save(str(path))
    blank.close()
    with pytest.raises(ParseError, match="scanned") as caught:
        parse_file(path)
    assert "OCR" in str(caught.value)


def test_encrypted_pdf_opens_with_empty_password_or_fails_clearly(tmp_path: Path) -> None:
    pypdf = pytest.importorskip("pypdf")
    source = SAMPLES / "release-notes.pdf"
    for user_password, name in (("", "open.pdf"), ("secret", "locked.pdf")):
        writer = pypdf.PdfWriter(clone_from=str(source))
        writer.encrypt(user_password=user_password, owner_password="owner", algorithm="RC4-128")
        with open(tmp_path / name, "wb") as out:
            writer.write(out)
    assert "2.4.1" in parse_file(tmp_path / "open.pdf").text
    with pytest.raises(ParseError, match="password"):
        parse_file(tmp_path / "locked.pdf")


def test_empty_text_files_have_no_segments_but_empty_pdf_fails(tmp_path: Path) -> None:
    for name in ("empty.md", "empty.txt", "empty.rst", "empty.html", "empty.py"):
        (tmp_path / name).write_bytes(b"")
        doc = parse_file(tmp_path / name)
        assert doc.segments == []
    (tmp_path / "empty.pdf").write_bytes(b"")
    with pytest.raises(ParseError):
        parse_file(tmp_path / "empty.pdf")


def test_text_decoding_never_fails_on_bytes(tmp_path: Path) -> None:
    cp1252 = tmp_path / "legacy.txt"
    cp1252.write_bytes("Café – “quoted” price: 5 €\nsecond line\n".encode("cp1252"))
    assert parse_file(cp1252).text.startswith("Café – “quoted” price: 5 €")
    utf16 = tmp_path / "wide.txt"
    utf16.write_bytes("naïve UTF-16 text\r\nline two".encode("utf-16"))
    assert parse_file(utf16).text == "naïve UTF-16 text\nline two"
    bom = tmp_path / "bom.md"
    bom.write_bytes(b"\xef\xbb\xbf# Title\n")
    assert parse_file(bom).segments[0].headings == ("Title",)
    mostly_utf8 = tmp_path / "mixed.txt"
    mostly_utf8.write_bytes("ünïcödé everywhere ".encode() * 20 + b"\xff")
    assert "ünïcödé" in parse_file(mostly_utf8).text


def test_binary_file_is_a_parse_error(tmp_path: Path) -> None:
    path = tmp_path / "data.txt"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    with pytest.raises(ParseError, match="binary file"):
        parse_file(path)


def test_size_cap(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_bytes(b"x" * 3 * 1024 * 1024)
    with pytest.raises(ParseError, match=r"larger than the 2 MB cap; raise CITEDOCS_MAX_FILE_MB to index it"):
        parse_file(path, max_bytes=2 * 1024 * 1024)
    assert parse_file(path, max_bytes=4 * 1024 * 1024).text.startswith("xxx")


MARKDOWN = """\
---
title: Front Title
tags: [a, b]
---

# Setup

Intro text.

## Windows

Run this:

```bash
# not a heading
echo hi
```

~~~
## also not a heading
~~~

| key | value |
|-----|-------|
| port | 7420 |

Linux
-----

Setext body.

Top Level
=========

### Deep ###
tail
"""


def test_markdown_headings_fences_and_line_spans(tmp_path: Path) -> None:
    path = tmp_path / "guide.md"
    path.write_text(MARKDOWN, encoding="utf-8")
    doc = parse_file(path)
    assert doc.title == "Front Title"
    assert doc.text == MARKDOWN
    assert_spans_consistent(doc)
    by_kind = [(s.kind, s.headings, s.line_start, s.line_end) for s in doc.segments]
    assert by_kind == [
        ("text", ("Setup",), 6, 8),
        ("text", ("Setup", "Windows"), 10, 12),
        ("code", ("Setup", "Windows"), 14, 17),
        ("code", ("Setup", "Windows"), 19, 21),
        ("table", ("Setup", "Windows"), 23, 25),
        ("text", ("Setup", "Linux"), 27, 30),
        ("text", ("Top Level",), 32, 33),
        ("text", ("Top Level", "Deep"), 35, 36),
    ]
    code = doc.segments[2]
    assert code.text.startswith("```bash") and code.text.endswith("```")
    assert "tags" not in " ".join(s.text for s in doc.segments)


def test_markdown_unclosed_fence_runs_to_end(tmp_path: Path) -> None:
    path = tmp_path / "open.md"
    path.write_text("# A\n\n```\n# inside\ncode\n", encoding="utf-8")
    doc = parse_file(path)
    assert [s.headings for s in doc.segments] == [("A",), ("A",)]
    assert doc.segments[-1].kind == "code"


def test_markdown_code_comments_a_scraped_page_left_unfenced_are_not_headings(tmp_path: Path) -> None:
    # as on docs.claude.com pages scraped to markdown: the code lost its fence, its comments look like headings
    page = (
        "# Embeddings\n\n## Voyage embedding example\n\nEmbed the documents and the query.\n"
        "import voyageai\nvo = voyageai.Client()\n# Embed the documents\ndoc_embds = vo.embed(documents)\n"
        "# Compute the similarity\n# Voyage embeddings are normalized to length 1\n\n"
        "## FAQ\n\nWhy are Voyage embeddings superior?\n\n# Second title\n\nA page of two titles.\n"
    )
    path = tmp_path / "embeddings.md"
    path.write_text(page, encoding="utf-8")
    headings = {s.headings for s in parse_file(path).segments}
    assert headings == {
        ("Embeddings",),
        ("Embeddings", "Voyage embedding example"),
        ("Embeddings", "FAQ"),
        ("Second title",),
    }


RST = """\
=========
Doc Title
=========

Intro.

Section One
===========

Text one. Example::

    $ lumen --version
    lumen 2.4.1

Back to prose.

Sub A
-----

.. code-block:: python
   :linenos:

   print("hi")

After code.

Section Two
===========

Two.
"""


def test_rst_sections_and_literal_blocks(tmp_path: Path) -> None:
    path = tmp_path / "doc.rst"
    path.write_text(RST, encoding="utf-8")
    doc = parse_file(path)
    assert doc.title == "Doc Title"
    assert_spans_consistent(doc)
    got = [(s.kind, s.headings, s.line_start, s.line_end) for s in doc.segments]
    assert got == [
        ("text", ("Doc Title",), 1, 5),
        ("text", ("Doc Title", "Section One"), 7, 10),
        ("code", ("Doc Title", "Section One"), 12, 13),
        ("text", ("Doc Title", "Section One"), 15, 15),
        ("text", ("Doc Title", "Section One", "Sub A"), 17, 18),
        ("code", ("Doc Title", "Section One", "Sub A"), 20, 23),
        ("text", ("Doc Title", "Section One", "Sub A"), 25, 25),
        ("text", ("Doc Title", "Section Two"), 27, 30),
    ]


def test_plain_text_and_code_headings(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("Notes\n=====\n\nfirst para\n\nPart two\n--------\nsecond\n", encoding="utf-8")
    doc = parse_file(text)
    assert [(s.headings, s.line_start, s.line_end) for s in doc.segments] == [
        (("Notes",), 1, 2),
        (("Notes",), 4, 4),
        (("Notes", "Part two"), 6, 8),
    ]
    code = parse_file(SAMPLES / "lumen_client.py")
    assert code.format == "code"
    assert all(s.kind == "code" for s in code.segments)
    ingest = next(s for s in code.segments if "def ingest" in s.text)
    assert ingest.headings == ("LumenClient", "ingest")
    toml = parse_file(SAMPLES / "lumen.example.toml")
    assert next(s for s in toml.segments if "retention_days" in s.text).headings == ("storage",)


def test_html_main_content_without_chrome() -> None:
    doc = parse_file(SAMPLES / "api.html")
    assert doc.title == "Lumen HTTP API reference"
    for chrome in (
        "SITE-CHROME-SCRIPT",
        "Lumen docs home",
        "Search the docs",
        "Configure",
        "community forum",
    ):
        assert chrome not in doc.text
    assert "Site chrome footer" not in doc.text
    assert_spans_consistent(doc)
    table = next(s for s in doc.segments if s.kind == "table")
    assert "POST | /v1/ingest | Store up to 4096 lines" in table.text
    code = next(s for s in doc.segments if s.kind == "code")
    assert code.text.startswith("```bash\ncurl -X POST")
    limits = next(s for s in doc.segments if "600 requests per minute" in s.text)
    assert limits.headings == ("Lumen HTTP API reference", "Query", "Rate limits")


def test_html_to_markdown() -> None:
    html = """<html><head><title>T</title><script>var x = 1;</script></head><body>
    <nav><a href="/">Home</a></nav>
    <article><header><h1>Guide</h1><p>by someone</p></header>
    <p>Read <a href="https://example.org/docs" title="Docs">the docs</a>
    and use <code>--flag</code>, <b>bold</b>.</p>
    <h2>Steps</h2>
    <ol><li>First</li><li>Second<ul><li>nested</li></ul></li></ol>
    <pre class="language-python">print("x")\n</pre>
    <table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2|3</td></tr></table>
    <footer>copyright</footer></article></body></html>"""
    assert html_to_markdown(html) == (
        "# Guide\n\n"
        'Read [the docs](https://example.org/docs "Docs") and use `--flag`, **bold**.\n\n'
        "## Steps\n\n"
        "1. First\n2. Second\n  - nested\n\n"
        '```python\nprint("x")\n```\n\n'
        "| a | b |\n| --- | --- |\n| 1 | 2\\|3 |\n"
    )


def test_html_declared_charset(tmp_path: Path) -> None:
    path = tmp_path / "old.htm"
    path.write_bytes(
        '<html><head><meta charset="windows-1252"></head><body><p>Café €</p></body></html>'.encode("cp1252")
    )
    assert parse_file(path).text == "Café €"


def test_docx_headings_tables_and_links(tmp_path: Path) -> None:
    document = docx.Document()
    document.add_heading("Manual", level=0)
    document.add_heading("Ports", level=1)
    table = document.add_table(rows=2, cols=2)
    for row, values in zip(table.rows, (("port", "use"), ("7420", "API")), strict=True):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    document.add_heading("Details", level=2)
    document.add_paragraph("Body text.")
    path = tmp_path / "manual.docx"
    document.save(str(path))
    doc = parse_file(path)
    assert doc.text == "Manual\nPorts\nport | use\n7420 | API\nDetails\nBody text."
    assert [(s.kind, s.headings) for s in doc.segments] == [
        ("text", ("Manual",)),
        ("text", ("Manual", "Ports")),
        ("table", ("Manual", "Ports")),
        ("text", ("Manual", "Ports", "Details")),
    ]
    pandoc = parse_file(shared("parser-fixtures", "docx", "python311_tutorial_classes.pandoc.docx"))
    assert "Private Variables" in pandoc.text  # a hyperlink's text


def test_corrupt_docx_is_a_parse_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.docx"
    path.write_bytes(b"PK\x03\x04 not a zip")
    with pytest.raises(ParseError, match=r"not a readable \.docx"):
        parse_file(path)


def test_format_for_and_supported_extensions() -> None:
    assert format_for(Path("a/B.PDF")) == "pdf"
    assert format_for(Path("notes.markdown")) == "markdown"
    assert format_for(Path("Makefile")) == "code"
    assert format_for(Path("Dockerfile")) == "code"
    assert format_for(Path("LICENSE")) == "text"
    assert format_for(Path("photo.png")) == "image"  # read by OCR only, walked only with OCR on
    assert ".png" not in SUPPORTED_EXTENSIONS
    assert format_for(Path("song.mp3")) is None
    assert format_for(Path(".env")) is None
    assert format_for(Path("bundle.min.js")) is None
    assert {".md", ".txt", ".rst", ".pdf", ".docx", ".html", ".py", ".toml"} <= SUPPORTED_EXTENSIONS
    with pytest.raises(ParseError, match="unsupported"):
        parse_file(Path("song.mp3"))


def test_every_sample_parses_with_headings() -> None:
    samples = sorted(p for p in SAMPLES.iterdir() if p.is_file())
    assert 10 <= len(samples) <= 14
    formats = set()
    for path in samples:
        doc = parse_file(path)
        formats.add(doc.format)
        assert doc.segments and any(s.headings for s in doc.segments), path.name
        assert_spans_consistent(doc)
    assert formats == {"markdown", "text", "rst", "html", "pdf", "docx", "code"}
    pdf = parse_file(SAMPLES / "release-notes.pdf")
    fix = next(s for s in pdf.segments if "LUM-317" in s.text)
    assert (fix.page, fix.headings) == (2, ("Lumen 2.4", "2.4.1 (18 March 2024)"))
