"""Sentences of a passage made readable for the `evidence` event: what a person (on the page, in the CLI, through
MCP or HTTP) reads while the model reads, not what anything checks.

Passages are Markdown, tables and scraped pages: a sentence cut from one may start with `## `, run table cells
together with pipes, wrap words in `**`, or be a fragment of JSON or code that no one reads as a sentence.
`readable_sentence` removes the marks and says None for a fragment; repeats are the caller's (one key per
sentence). Quotes (answer/quotes.py) and citations stay exact slices of their passages: this is for display only.
"""

from __future__ import annotations

import re

__all__ = ["MIN_CHARS", "readable_sentence"]

# Shorter than this (a CJK character counting as two) is a label or a cell, not a sentence.
MIN_CHARS = 12
# More than this share of JSON/code marks: a fragment of data, not prose.
MAX_MARK_SHARE = 0.08

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+", re.MULTILINE)
_PIPES = re.compile(r"\s*\|\s*")
_CODE = re.compile(r"`+([^`]*)`+")
# Bold as Markdown writes it: `**529**`; `__` only around words with a space between (`__init__` is a name).
_EMPHASIS = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|(?<!\w)__(?=\S)([^_]*?\s[^_]*?)(?<=\S)__(?!\w)")
_LEAD = re.compile(r"^[\s·>*\-]+")
_TRAIL = re.compile(r"[\s·]+$")
_MARKS = re.compile(r'[{}\[\]":]')
_CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def _plain(segment: str) -> str:
    """Emphasis marks dropped outside code (where `**kwargs` and `__init__` are what they say)."""
    return _EMPHASIS.sub(lambda m: m.group(1) or m.group(2), segment)


def readable_sentence(text: str) -> str | None:
    """`text` without Markdown heading marks, emphasis, code backticks or table pipes (cells joined by ` · `),
    whitespace collapsed; None when what is left is no sentence: too short, without a letter or digit (a
    table's `---` row), or mostly JSON/code marks. Pure; a readable sentence comes back unchanged."""
    text = _PIPES.sub(" · ", _HEADING.sub("", text))
    parts: list[str] = []
    cursor = 0
    for code in _CODE.finditer(text):
        parts.append(_plain(text[cursor : code.start()]))
        parts.append(code.group(1))
        cursor = code.end()
    parts.append(_plain(text[cursor:]))
    out = " ".join(_TRAIL.sub("", _LEAD.sub("", "".join(parts))).split())
    size = len(out) + len(_CJK.findall(out))
    if size < MIN_CHARS or not any(c.isalnum() for c in out):
        return None
    if len(_MARKS.findall(out)) > len(out) * MAX_MARK_SHARE:
        return None
    return out
