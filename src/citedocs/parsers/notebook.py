"""Jupyter notebooks (.ipynb, nbformat 4 and the older 3) read as plain JSON: cells in order, numbered.

Every cell is a section whose heading path is the notebook's markdown headings so far, then `cell N` (N counts
every cell from 1, as Jupyter shows them top to bottom), so a hit names its cell. Markdown cells keep their
text, code cells become fenced code in the notebook's language, and a code cell's outputs follow it when they
are text (streams, `text/plain` results, an error's name and message); images and HTML outputs are left out,
and a cell's output text is cut at MAX_OUTPUT_CHARS. The text has a `[cell N: kind]` line before each cell.
"""

from __future__ import annotations

import json
import re
from typing import Any

from citedocs.errors import ParseError
from citedocs.parsers._build import TextBuilder, push_heading
from citedocs.parsers.base import ParsedDocument
from citedocs.parsers.budget import checkpoint
from citedocs.parsers.text import decode_bytes

MAX_OUTPUT_CHARS = 10_000
_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$")
_HINT = "Open it in Jupyter and save it again (File > Save), or check that it is a notebook at all."


def _text(value: Any) -> str:
    """nbformat keeps multi-line strings as lists of lines."""
    if isinstance(value, list):
        return "".join(part for part in value if isinstance(part, str))
    return value if isinstance(value, str) else ""


def _cells(notebook: Any, name: str) -> list[Any]:
    if not isinstance(notebook, dict):
        raise ParseError(f"{name}: not a Jupyter notebook (its JSON is not an object)", _HINT)
    cells = notebook.get("cells")
    if cells is None and isinstance(notebook.get("worksheets"), list):  # nbformat 3
        cells = [
            c for sheet in notebook["worksheets"] if isinstance(sheet, dict) for c in sheet.get("cells") or []
        ]
    if not isinstance(cells, list):
        raise ParseError(f"{name}: not a Jupyter notebook (no list of cells)", _HINT)
    return cells


def _language(notebook: dict[str, Any]) -> str:
    meta = notebook.get("metadata")
    if not isinstance(meta, dict):
        return ""
    for key in ("language_info", "kernelspec"):
        info = meta.get(key)
        if isinstance(info, dict):
            value = info.get("name" if key == "language_info" else "language")
            if isinstance(value, str) and value.isidentifier():
                return value
    return ""


def _outputs(cell: dict[str, Any]) -> str:
    parts: list[str] = []
    for output in cell.get("outputs") or []:
        if not isinstance(output, dict):
            continue
        kind = output.get("output_type")
        if kind == "stream":
            parts.append(_text(output.get("text")))
        elif kind in {"execute_result", "display_data", "pyout"}:
            data: dict[str, Any] = output["data"] if isinstance(output.get("data"), dict) else output
            parts.append(_text(data.get("text/plain") if "text/plain" in data else data.get("text")))
        elif kind in {"error", "pyerr"}:
            parts.append(f"{_text(output.get('ename'))}: {_text(output.get('evalue'))}")
    text = "\n".join(part.strip("\n") for part in parts if part.strip())
    if len(text) > MAX_OUTPUT_CHARS:
        text = text[:MAX_OUTPUT_CHARS] + f"\n… (output cut at {MAX_OUTPUT_CHARS} characters)"
    return text


def parse_notebook(data: bytes, name: str) -> ParsedDocument:
    try:
        notebook = json.loads(decode_bytes(data, name))
    except (ValueError, RecursionError) as exc:
        raise ParseError(f"{name}: not a readable notebook (invalid JSON: {exc})", _HINT) from exc
    cells = _cells(notebook, name)
    language = _language(notebook) if isinstance(notebook, dict) else ""
    builder = TextBuilder()
    stack: list[tuple[int, str]] = []
    title: str | None = None
    for number, cell in enumerate(cells, start=1):
        checkpoint()
        if not isinstance(cell, dict):
            continue
        kind = cell.get("cell_type")
        source = _text(cell.get("source", cell.get("input")))
        label = f"cell {number}"
        builder.add_unsegmented(f"[{label}: {kind if isinstance(kind, str) else 'unknown'}]")
        path = (*(t for _, t in stack), label)
        if kind == "markdown":
            block: list[str] = []
            for line in source.split("\n"):
                heading = _ATX.match(line)
                if heading:
                    builder.add("\n".join(block), path)
                    block = []
                    path = (*push_heading(stack, len(heading.group(1)), heading.group(2)), label)
                    title = title or heading.group(2)
                block.append(line)
            builder.add("\n".join(block), path)
        elif kind == "code":
            if source.strip():
                fence = "````" if "```" in source else "```"
                builder.add(f"{fence}{language}\n{source.rstrip()}\n{fence}", path, "code")
            output = _outputs(cell)
            if output:
                builder.add(f"Output:\n{output}", path)
        else:  # raw cells and unknown kinds: their text as it is
            builder.add(source, path)
    text, segments = builder.finish()
    return ParsedDocument(format="ipynb", text=text, segments=segments, title=title)
