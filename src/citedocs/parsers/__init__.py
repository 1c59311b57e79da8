"""Turn a file into text plus heading/page-aware segments: `parse_file`, with `format_for` deciding what is
indexed at all (None means skip the file)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

from citedocs.errors import ParseError
from citedocs.parsers.base import ParsedDocument, Segment, SegmentKind
from citedocs.parsers.budget import PARSE_SECONDS, limited
from citedocs.parsers.csvfile import parse_csv
from citedocs.parsers.html import html_to_markdown, parse_html
from citedocs.parsers.markdown import parse_markdown
from citedocs.parsers.notebook import parse_notebook
from citedocs.parsers.ocr import IMAGE_EXTENSIONS, OcrOptions, ocr_image_file, ocr_pdf
from citedocs.parsers.pdf import is_scanned, parse_pdf
from citedocs.parsers.rst import parse_rst
from citedocs.parsers.text import parse_code, parse_text

__all__ = [
    "CODE_EXTENSIONS",
    "FORMATS",
    "IMAGE_EXTENSIONS",
    "SUPPORTED_EXTENSIONS",
    "OcrOptions",
    "ParsedDocument",
    "Segment",
    "SegmentKind",
    "format_for",
    "html_to_markdown",
    "is_scanned",
    "parse_bytes",
    "parse_file",
]

_DOCUMENT_EXTENSIONS = {
    ".txt": "text",
    ".text": "text",
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".rst": "rst",
    ".rest": "rst",
    ".pdf": "pdf",
    ".docx": "docx",
    ".htm": "html",
    ".html": "html",
    ".xhtml": "html",
    ".pptx": "pptx",
    ".xlsx": "xlsx",
    ".xlsm": "xlsx",
    ".ods": "ods",
    ".odt": "odt",
    ".csv": "csv",
    ".tsv": "csv",
    ".ipynb": "ipynb",
    ".epub": "epub",
}

# Office and e-book parsers load their libraries (python-docx, python-pptx, openpyxl, odfpy, ebooklib: ~0.4 s
# together on 2 cores) on the first file of their kind, not at every start of the CLI or a server.
_LAZY_PARSERS = {
    "docx": ("citedocs.parsers.docx", "parse_docx"),
    "pptx": ("citedocs.parsers.pptx", "parse_pptx"),
    "xlsx": ("citedocs.parsers.xlsx", "parse_xlsx"),
    "ods": ("citedocs.parsers.odf", "parse_ods"),
    "odt": ("citedocs.parsers.odf", "parse_odt"),
    "epub": ("citedocs.parsers.epub", "parse_epub"),
}


def _lazy(fmt: str) -> Callable[[bytes, str], ParsedDocument]:
    module, name = _LAZY_PARSERS[fmt]

    def parse(data: bytes, label: str) -> ParsedDocument:
        function: Callable[[bytes, str], ParsedDocument] = getattr(importlib.import_module(module), name)
        return function(data, label)

    return parse


_BINARY_PARSERS: dict[str, Callable[[bytes, str], ParsedDocument]] = {
    **{fmt: _lazy(fmt) for fmt in _LAZY_PARSERS},
    "pdf": parse_pdf,
    "ipynb": parse_notebook,
    "markdown": parse_markdown,
    "rst": parse_rst,
    "html": parse_html,
    "text": parse_text,
}
FORMATS = (*sorted(set(_DOCUMENT_EXTENSIONS.values())), "code", "image")
"""Every `format` a parsed document can have (the search `type` filter takes these, or a file suffix)."""
CODE_EXTENSIONS = frozenset(
    str.split(
        ".py .pyi .js .mjs .cjs .ts .mts .cts .tsx .jsx .vue .svelte .go .rs .java .kt .kts .scala "
        ".groovy .gradle .c .h .cc .cpp .cxx .hpp .hh .hxx .m .mm .cs .fs .vb .rb .php .swift .dart .lua "
        ".pl .pm .r .jl .ex .exs .erl .hs .ml .clj .elm .zig .nim .sh .bash .zsh .fish .ps1 .bat .cmd "
        ".sql .graphql .proto .tf .hcl .nix .cmake .toml .yaml .yml .json .jsonc .json5 .ini .cfg .conf "
        ".properties .xml .xsd .css .scss .sass .less"
    )
)
SUPPORTED_EXTENSIONS = frozenset(_DOCUMENT_EXTENSIONS) | CODE_EXTENSIONS
"""Lower-case suffixes with the dot, as `Path.suffix.lower()` gives them."""

_CODE_FILE_NAMES = frozenset(
    {
        "makefile",
        "gnumakefile",
        "dockerfile",
        "containerfile",
        "jenkinsfile",
        "vagrantfile",
        "rakefile",
        "gemfile",
        "justfile",
        "procfile",
        "cmakelists.txt",
    }
)
_TEXT_FILE_NAMES = frozenset(
    {"readme", "license", "licence", "copying", "authors", "notice", "changelog", "install"}
)


def format_for(path: Path) -> str | None:
    """One of FORMATS ('text', 'code', 'markdown', 'pdf', 'xlsx', …); None for files citedocs does not index."""
    name = path.name.lower()
    if name in _CODE_FILE_NAMES or name.startswith("dockerfile."):
        return "code"
    suffix = path.suffix.lower()
    if name.startswith(".env") or name.endswith(".min.js") or name.endswith(".min.css"):
        return None  # secrets, and minified bundles nobody wants cited
    if suffix in _DOCUMENT_EXTENSIONS:
        return _DOCUMENT_EXTENSIONS[suffix]
    if suffix in CODE_EXTENSIONS:
        return "code"
    if suffix in IMAGE_EXTENSIONS:
        return "image"  # read by OCR only, and walked only when OCR is on
    if not suffix and name in _TEXT_FILE_NAMES:
        return "text"
    return None


def _too_big(name: str, max_bytes: int) -> ParseError:
    cap = f"{max_bytes / (1024 * 1024):g}"
    return ParseError(f"{name}: larger than the {cap} MB cap; raise CITEDOCS_MAX_FILE_MB to index it")


def parse_bytes(
    data: bytes,
    name: str,
    max_bytes: int | None = None,
    seconds: float = PARSE_SECONDS,
    ocr: OcrOptions | None = None,
) -> ParsedDocument:
    """Parse the bytes of a file called `name` (its suffix picks the parser) under a byte and a time budget.

    This is the entry point for bytes read from a descriptor that was opened and checked (see
    sources/confined.py): nothing here opens a path. With `ocr`, a PDF without a text layer is OCRed (each
    page under `ocr.page_seconds`); without it, it is refused as scanned. Raises ParseError (with what to do)
    for unsupported, oversized, binary, corrupt, encrypted, scanned, too-slow or too-expansive files."""
    path = Path(name)
    fmt = format_for(path)
    label = path.name
    if fmt is None:
        raise ParseError(
            f"{label}: unsupported file type",
            "citedocs indexes text, code, md, rst, pdf, docx, html, pptx, xlsx, ods, odt, csv, ipynb, epub.",
        )
    if max_bytes is not None and len(data) > max_bytes:
        raise _too_big(label, max_bytes)
    if fmt == "image":
        if ocr is None:
            raise ParseError(
                f"{label}: an image; its text is read only with OCR", "Turn on OCR: CITEDOCS_OCR=true."
            )
        with limited(label, max_bytes, ocr.page_seconds * ocr.max_pages):
            return ocr_image_file(data, label, ocr)
    try:
        with limited(label, max_bytes, seconds):
            if fmt == "code":
                return parse_code(data, label, path.suffix.lower())
            if fmt == "csv":
                return parse_csv(data, label, path.suffix.lower())
            return _BINARY_PARSERS[fmt](data, label)
    except ParseError as exc:
        if ocr is None or fmt != "pdf" or not is_scanned(exc):
            raise
    with limited(label, max_bytes, ocr.page_seconds * ocr.max_pages):
        return ocr_pdf(data, label, ocr)


def parse_file(path: Path, max_bytes: int | None = None) -> ParsedDocument:
    """Parse a file by path (tools and tests; the index and `read` open files through a folder handle and
    call `parse_bytes`). Empty text files give a document with no segments."""
    if format_for(path) is None:
        return parse_bytes(b"", path.name)
    try:
        size = path.stat().st_size
        if max_bytes is not None and size > max_bytes:
            raise _too_big(path.name, max_bytes)
        data = path.read_bytes()
    except OSError as exc:
        raise ParseError(
            f"{path.name}: cannot read ({exc.strerror})", "Check it exists and is readable."
        ) from exc
    return parse_bytes(data, path.name, max_bytes)
