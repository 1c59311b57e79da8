"""Turn a file into text plus heading/page-aware segments: `parse_file`, with `format_for` deciding what is
indexed at all (None means skip the file)."""

from __future__ import annotations

from pathlib import Path

from citedocs.errors import ParseError
from citedocs.parsers.base import ParsedDocument, Segment, SegmentKind
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


def _size_cap_mb(max_bytes: int) -> str:
    return f"{max_bytes / (1024 * 1024):g}"


def parse_file(path: Path, max_bytes: int | None = None) -> ParsedDocument:
    """Parse one file. Raises ParseError (with what to do) for unsupported, oversized, unreadable, corrupt,
    binary, encrypted or scanned files. Empty text files give a document with no segments."""
    fmt = format_for(path)
    if fmt is None:
        raise ParseError(
            f"{path.name}: unsupported file type", "citedocs indexes text, code, md, rst, pdf, docx, html."
        )
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ParseError(
            f"{path.name}: cannot read ({exc.strerror})", "Check it exists and is readable."
        ) from exc
    if max_bytes is not None and size > max_bytes:
        cap = _size_cap_mb(max_bytes)
        raise ParseError(f"{path.name}: larger than the {cap} MB cap; raise CITEDOCS_MAX_FILE_MB to index it")
    if fmt == "pdf":
        return parse_pdf(path)
    if fmt == "docx":
        return parse_docx(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ParseError(
            f"{path.name}: cannot read ({exc.strerror})", "Check it exists and is readable."
        ) from exc
    if fmt == "markdown":
        return parse_markdown(data, path.name)
    if fmt == "rst":
        return parse_rst(data, path.name)
    if fmt == "html":
        return parse_html(data, path.name)
    if fmt == "code":
        return parse_code(data, path.name, path.suffix.lower())
    return parse_text(data, path.name)
