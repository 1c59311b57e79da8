"""Turn a file into text plus heading/page-aware segments: `parse_file`, with `format_for` deciding what is
indexed at all (None means skip the file)."""

from __future__ import annotations

from pathlib import Path

from citedocs.errors import ParseError
from citedocs.parsers.base import ParsedDocument, Segment, SegmentKind
from citedocs.parsers.budget import PARSE_SECONDS, limited
from citedocs.parsers.docx import parse_docx
from citedocs.parsers.html import html_to_markdown, parse_html
from citedocs.parsers.markdown import parse_markdown
from citedocs.parsers.pdf import parse_pdf
from citedocs.parsers.rst import parse_rst
from citedocs.parsers.text import parse_code, parse_text

__all__ = [
    "CODE_EXTENSIONS",
    "SUPPORTED_EXTENSIONS",
    "ParsedDocument",
    "Segment",
    "SegmentKind",
    "format_for",
    "html_to_markdown",
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
}
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
    """'text', 'code', 'markdown', 'rst', 'pdf', 'docx' or 'html'; None for files citedocs does not index."""
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
    if not suffix and name in _TEXT_FILE_NAMES:
        return "text"
    return None


def _too_big(name: str, max_bytes: int) -> ParseError:
    cap = f"{max_bytes / (1024 * 1024):g}"
    return ParseError(f"{name}: larger than the {cap} MB cap; raise CITEDOCS_MAX_FILE_MB to index it")


def parse_bytes(
    data: bytes, name: str, max_bytes: int | None = None, seconds: float = PARSE_SECONDS
) -> ParsedDocument:
    """Parse the bytes of a file called `name` (its suffix picks the parser) under a byte and a time budget.

    This is the entry point for bytes read from a descriptor that was opened and checked (see
    sources/confined.py): nothing here opens a path. Raises ParseError (with what to do) for unsupported,
    oversized, binary, corrupt, encrypted, scanned, too-slow or too-expansive files."""
    path = Path(name)
    fmt = format_for(path)
    label = path.name
    if fmt is None:
        raise ParseError(
            f"{label}: unsupported file type", "citedocs indexes text, code, md, rst, pdf, docx, html."
        )
    if max_bytes is not None and len(data) > max_bytes:
        raise _too_big(label, max_bytes)
    with limited(label, max_bytes, seconds):
        if fmt == "pdf":
            return parse_pdf(data, label)
        if fmt == "docx":
            return parse_docx(data, label)
        if fmt == "markdown":
            return parse_markdown(data, label)
        if fmt == "rst":
            return parse_rst(data, label)
        if fmt == "html":
            return parse_html(data, label)
        if fmt == "code":
            return parse_code(data, label, path.suffix.lower())
        return parse_text(data, label)


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
